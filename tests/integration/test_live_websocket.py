"""The websocket feed over a real uvicorn server: fan-out, replay on reconnect, resets, slow tabs.

Every fragment starts with `<div id="ws-seq" ... data-seq="N">`; the tests read N to check order,
gaps and duplicates. A "marker" (saving the request settings unchanged appends one session event)
ends each burst, so a reader knows when it has everything that came before.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import TYPE_CHECKING, Any

import pytest
from websockets.asyncio.client import connect

from app.console import timeline as timeline_module
from tests.integration.conftest import JSON, WS_DEADLINE_S, fragment_seq, is_reset, ws_closed, ws_collect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

FAST_DEADLINE_S = 3.0
# Calls made while one tab never reads: ~75 fragments of which ~25 carry 40 KB, far past what a 20-slot queue
# and a few kilobytes of socket buffers hold.
CALLS = 25


async def connected(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def mark(console: Console, session_id: str) -> int:
    """Append one event that renders a fragment; returns its seq (nothing else is appended after it)."""
    response = await console.http.post(f"/sessions/{session_id}/request-settings", headers=JSON,
                                       data={"log_level": "", "progress": "on", "auto_refresh": "on"})
    assert response.status_code == 200, response.text
    seq: int = (await console.session(session_id))["seq"]
    return seq


def reached(seq: int) -> Callable[[list[str]], bool]:
    return lambda frames: fragment_seq(frames[-1]) >= seq


def seqs(frames: list[str]) -> list[int]:
    return [fragment_seq(f) for f in frames]


def in_order_without_duplicates(frames: list[str]) -> None:
    numbers = seqs(frames)
    assert numbers == sorted(set(numbers)), f"out of order or duplicated: {numbers}"


async def open_feed(served: Served, session_id: str, last_seq: int | None, **options: Any) -> Any:
    ws = await connect(served.ws_url(session_id), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **{**served.via, **options})
    await ws.send(json.dumps({"last_seq": last_seq}))
    return ws


async def test_two_sockets_on_one_session_receive_the_same_fragments_for_a_tool_call(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    served = await serve(console)
    sid = await connected(console, demo_url)
    start = (await console.session(sid))["seq"]
    first = await open_feed(served, sid, start)
    second = await open_feed(served, sid, start)
    try:
        reply = await console.call_tool(sid, "echo", text="to both tabs")
        assert reply["status"] == "complete"
        end = await mark(console, sid)
        got_first = await ws_collect(first, reached(end), "the call and the marker")
        got_second = await ws_collect(second, reached(end), "the call and the marker")
    finally:
        await first.close()
        await second.close()
    assert got_first == got_second
    in_order_without_duplicates(got_first)
    assert seqs(got_first)[0] > start and seqs(got_first)[-1] == end
    assert any("to both tabs" in f for f in got_first)


async def test_a_socket_that_reconnects_with_its_last_seq_gets_exactly_what_it_missed_in_order(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    served = await serve(console)
    sid = await connected(console, demo_url)
    start = (await console.session(sid))["seq"]
    steady = await open_feed(served, sid, start)  # stays connected throughout: the reference
    try:
        leaving = await open_feed(served, sid, start)
        await console.call_tool(sid, "echo", text="seen before leaving")
        before = await ws_collect(leaving, reached(await mark(console, sid)), "the first call")
        await leaving.close()
        last_seen = fragment_seq(before[-1])

        await console.call_tool(sid, "echo", text="missed while away")
        end = await mark(console, sid)
        reference = await ws_collect(steady, reached(end), "everything")

        back = await open_feed(served, sid, last_seen)
        try:
            replayed = await ws_collect(back, reached(end), "the replay of what was missed")
        finally:
            await back.close()
    finally:
        await steady.close()
    missed = [f for f in reference if fragment_seq(f) > last_seen]
    assert replayed == missed
    in_order_without_duplicates(replayed)
    assert any("missed while away" in f for f in replayed)
    assert not any("seen before leaving" in f for f in replayed)


async def test_a_reconnect_older_than_the_hubs_ring_gets_a_reset_fragment(
        make_console: Callable[..., Console], demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    console = make_console(ws_queue_size=20)
    served = await serve(console)
    sid = await connected(console, demo_url)
    for n in range(8):  # frames never enter the ring, so it takes entries to push seq 1 out of it
        await console.call_tool(sid, "echo", text=f"more events than the ring holds {n}")
    current = (await console.session(sid))["seq"]
    assert current > 25

    stale = await open_feed(served, sid, 1)
    frames, _ = await ws_closed(stale)
    [reset] = frames
    assert is_reset(reset)
    assert fragment_seq(reset) == current

    recent = await open_feed(served, sid, current - 1)  # within the ring: no reset
    try:
        end = await mark(console, sid)
        got = await ws_collect(recent, reached(end), "the marker")
    finally:
        await recent.close()
    assert not any(is_reset(f) for f in got)


def _small_window_socket(host: str) -> socket.socket:
    """A connected client socket with a tiny receive buffer: unread data backs up after kilobytes."""
    address, port = host.rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((address, int(port)))
    sock.setblocking(False)
    return sock


async def test_a_socket_that_never_reads_is_reset_and_closed_without_delaying_another(
        make_console: Callable[..., Console], demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    console = make_console(ws_queue_size=20)
    served = await serve(console, send_buffer=4096)
    sid = await connected(console, demo_url)
    start = (await console.session(sid))["seq"]
    # The slow tab: its client stops reading after one buffered message (and compresses nothing), so the
    # server's sends to it block once a few kilobytes are in flight.
    slow = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                         sock=_small_window_socket(served.host), max_queue=1, compression=None)
    await slow.send(json.dumps({"last_seq": start}))
    fast = await open_feed(served, sid, start)
    bulky = "x" * 40_000  # each call's fragments carry the echoed text: the slow pipe fills quickly
    fast_frames: list[str] = []
    try:
        for n in range(CALLS):
            reply = await console.call_tool(sid, "echo", text=f"call {n} {bulky}")
            assert reply["status"] == "complete"
            end = await mark(console, sid)
            began = time.monotonic()
            fast_frames += await ws_collect(fast, reached(end), f"call {n} on the fast socket", FAST_DEADLINE_S)
            assert time.monotonic() - began < FAST_DEADLINE_S
        slow_frames, _ = await ws_closed(slow)
    finally:
        await fast.close()
        await asyncio.wait_for(slow.close(), WS_DEADLINE_S)
    in_order_without_duplicates(fast_frames)
    assert is_reset(slow_frames[-1]), "a tab that fell behind is told to reload"
    assert not any(is_reset(f) for f in slow_frames[:-1])
    assert len(slow_frames) - 1 < len(fast_frames), "the slow tab was cut off before the end"
    assert slow_frames[:-1] == fast_frames[:len(slow_frames) - 1], "what it did get was the same, in order"


async def test_a_running_card_is_kept_current_by_the_websocket_alone_and_never_polls(
        console: Console, demo_url: str) -> None:
    sid = str((await console.connect(kind="http", url=demo_url))["id"])
    card = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "long_job", "arg.seconds": "30"},
                                   headers={"Accept": "text/html", "HX-Request": "true"})
    assert card.status_code == 200 and 'data-status="running"' in card.text
    assert "hx-trigger" not in card.text and "hx-get" not in card.text
    op = (await console.session(sid))["operations"][-1]
    await console.http.post(f"/sessions/{sid}/operations/{op['op']}/cancel", headers={"Accept": "application/json"})


async def test_a_socket_that_says_hello_while_a_calls_events_are_held_is_caught_up_with_them(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Timeline.hold: a call's events are numbered at once but published later (here: not before an hour passes,
    unless something flushes). A tab whose hello comes meanwhile must still get them, from where it says it is."""
    monkeypatch.setattr(timeline_module, "HOLD_S", 3600.0)
    served = await serve(console)
    sid = await connected(console, demo_url)
    start = (await console.session(sid))["seq"]
    ws = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via)
    try:
        reply = await console.call_tool(sid, "echo", text="held while saying hello")  # held: nothing published
        assert reply["status"] == "complete"
        await ws.send(json.dumps({"last_seq": start}))
        got = await ws_collect(ws, lambda frames: any("held while saying hello" in f for f in frames),
                               "the held call's entry")
    finally:
        await ws.close()
    in_order_without_duplicates(got)
    assert not any(is_reset(f) for f in got)
