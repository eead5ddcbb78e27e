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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import JSON, WS_DEADLINE_S, fragment_seq, is_reset, ws_closed, ws_collect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served
import re
from typing import TYPE_CHECKING

from tests.integration.conftest import (
    LINK_COOKIE,
    create_link,
    eventually,
    link_token,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Seen, Served, TinyHttp

    Serve = Callable[..., Awaitable[Served]]
import queue
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import httpx

from tests.integration.conftest import (
    AUTH,
    OWNER_COOKIE,
    REPO_ROOT,
    TOKEN,
    child_env,
    free_port,
    pump,
    stop_process,
    wait_for_line,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
from collections.abc import Callable

from app.mcp.operation import MAX_INPUT_REQUESTS
from tests.hostile.fixtures import HostileUrl
from tests.hostile.tools_mrtr import ODD_KEYS
from tests.integration.conftest import Console

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


async def test_a_socket_that_says_hello_after_a_call_is_caught_up_with_its_events_from_where_it_says_it_is(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    """A tab whose socket is open but whose hello comes after a call must still get the call's events, from the
    sequence number its hello names."""
    served = await serve(console)
    sid = await connected(console, demo_url)
    start = (await console.session(sid))["seq"]
    ws = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via)
    try:
        reply = await console.call_tool(sid, "echo", text="held while saying hello")  # before the hello
        assert reply["status"] == "complete"
        await ws.send(json.dumps({"last_seq": start}))
        got = await ws_collect(ws, lambda frames: any("held while saying hello" in f for f in frames),
                               "the held call's entry")
    finally:
        await ws.close()
    in_order_without_duplicates(got)
    assert not any(is_reset(f) for f in got)


# -- The websocket feed and what it pushes: a tab holding a valid credential that sends what no tab of ours
# sends (a hello the page never writes, a catch-up from 0 over and over), and a hostile server whose text lands in
# pushed fragments. Each test is one hole that was open.

async def subscribed(console: Console, session_id: str) -> None:
    """The socket said its hello and is on the hub: what is published from now on reaches it."""

    async def check() -> bool:
        return bool(console.manager.hub.subscribers(session_id))

    await eventually(check, WS_DEADLINE_S, "the socket to subscribe")


async def pushed_after(console: Console, serve: Serve, session_id: str, act: Callable[[], Awaitable[Any]],
                       until: Callable[[list[str]], bool], what: str) -> tuple[Any, list[str]]:
    """An owner's socket caught up to now; then `act` runs, and the frames pushed until `until` holds come back
    with what `act` returned."""
    served = await serve(console)
    async with connect(served.ws_url(session_id), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send(json.dumps({"last_seq": (await console.session(session_id))["seq"]}))
        await subscribed(console, session_id)
        done = await act()
        return done, await ws_collect(ws, until, what)


def obeyed(html: str, in_attributes: bool = True) -> bool:
    """Whether a bidi override or a zero-width space stands in the markup as it came (in attribute values too,
    unless `in_attributes` is False: a data attribute may hold the value exactly, where nothing renders it)."""
    text = html if in_attributes else re.sub(r'"[^"]*"', "", html)
    return "\u202e" in text or "\u200b" in text


async def demo_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def test_a_hello_whose_last_seq_is_infinity_is_taken_as_no_last_seq_and_the_feed_goes_on(
        console: Console, demo_url: str, serve: Serve) -> None:
    """Python's JSON reads `Infinity` as a float no int can hold: the hello raised OverflowError out of the
    websocket route (a 1011 close and a traceback in the console's log for every such socket)."""
    sid = await demo_session(console, demo_url)
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send('{"last_seq": Infinity}')
        await subscribed(console, sid)
        reply = await console.call_tool(sid, "echo", text="after an infinite hello")
        assert reply["status"] == "complete"
        frames = await ws_collect(ws, lambda fs: any("after an infinite hello" in f for f in fs),
                                  "the call made after the hello")
    assert all(fragment_seq(f) > 0 for f in frames)


async def test_a_viewer_socket_asking_for_megabytes_of_catch_up_is_told_to_reload_instead(
        console: Console, demo_url: str, serve: Serve) -> None:
    """A hello's last_seq is the holder's to choose: `0` asked the hub to render the whole ring again (a socket's
    own copy, masked) and queue it, ~110 KB per call with large results: 1.4 s of the event loop and 33 MB per
    socket after 300 calls, twenty sockets per link. Past a budget of catch-up bytes the socket gets the reset
    a tab older than the ring gets (it reloads its bounded page) and nothing else."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    bulky = "x" * 40_000
    for n in range(60):
        assert (await console.call_tool(sid, "echo", text=f"call {n} {bulky}"))["status"] == "complete"
    current = (await console.session(sid))["seq"]
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}"),
                       open_timeout=WS_DEADLINE_S, **served.via) as ws:
        await ws.send(json.dumps({"last_seq": 0}))
        frames, _ = await ws_closed(ws)
    [reset] = frames
    assert is_reset(reset) and fragment_seq(reset) == current
    assert console.manager.hub.subscribers(sid) == 0


async def test_a_hello_nested_two_thousand_deep_is_taken_as_no_last_seq_and_the_feed_goes_on(
        console: Console, demo_url: str, serve: Serve) -> None:
    """The hello was parsed whatever its size: 4 KB of `[` raised RecursionError out of the websocket route."""
    sid = await demo_session(console, demo_url)
    served = await serve(console)
    async with connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via) as ws:
        await ws.send('{"last_seq": ' + "[" * 2_000 + "]" * 2_000 + "}")
        await subscribed(console, sid)
        reply = await console.call_tool(sid, "echo", text="after a deep hello")
        assert reply["status"] == "complete"
        await ws_collect(ws, lambda fs: any("after a deep hello" in f for f in fs), "the call made after the hello")


async def test_a_second_viewer_socket_catching_up_on_the_same_events_renders_none_of_their_fragments_again(
        console: Console, demo_url: str, serve: Serve) -> None:
    """Each socket's catch-up rendered the ring afresh for it (masked): a link's twenty sockets reconnecting in a
    loop cost the event loop twenty renderings of up to the catch-up budget each round. The renderings of one
    catch-up now serve the next, and the fragments are the same."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    for n in range(10):
        assert (await console.call_tool(sid, "echo", text=f"call {n}"))["status"] == "complete"
    end = (await console.session(sid))["seq"]
    hub = console.manager.hub
    renders: list[int] = []
    render_masked = hub._render_masked

    def counted(event: Any) -> Any:
        fragment = render_masked(event)
        if fragment:  # one that renders to nothing (an early return) costs nothing, and is not kept
            renders.append(event.seq)
        return fragment

    hub._render_masked = counted
    served = await serve(console)

    async def catch_up() -> list[str]:
        async with connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S, **served.via,
                           additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}")) as ws:
            await ws.send(json.dumps({"last_seq": 0}))
            return await ws_collect(ws, lambda fs: fragment_seq(fs[-1]) >= end, "the catch-up")

    first = await catch_up()
    assert renders, "the first catch-up rendered nothing: the test no longer measures it"
    rendered_first = len(renders)
    renders.clear()
    second = await catch_up()
    assert renders == [], f"the second catch-up rendered {len(renders)} events again (the first {rendered_first})"
    assert second == first
    assert any("call 9" in f for f in second)


async def test_a_servers_error_in_the_session_status_shows_its_bidi_and_zero_width_characters_page_and_push(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """The status line ("server/discover failed: …") carries the server's error message, and it was the one place
    the session head put server text as it came: `evil‮exe.pdf` read reversed, in the page and in every push."""
    evil = "invoice\u202efdp.exe\u200b"

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        if body.get("method") == "server/discover":
            return 200, "application/json", tiny_http.error(body["id"], -32000, evil)
        return 202, "application/json", b""

    url = tiny_http.start(handler).url
    s = await console.connect(kind="http", url=url, era="modern")
    assert s["status"] == "failed" and evil in s["status_message"]
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    reconnected, frames = await pushed_after(
        console, serve, s["id"], lambda: console.http.post(f"/sessions/{s['id']}/reconnect", headers=JSON),
        lambda fs: any("status-message" in f and "failed" in f for f in fs),
        "the status pushed after the reconnect failed again")
    assert reconnected.status_code < 400
    assert not any(obeyed(html) for html in (page, *frames))
    assert "⟨U+202E⟩" in page and any("⟨U+202E⟩" in f for f in frames)


async def test_a_servers_error_answer_to_a_call_shows_its_bidi_and_zero_width_characters_in_the_card_and_push(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """A JSON-RPC error's message became the operation's message and the result's error, both put on the card as
    they came: the call's answer and the card pushed to every tab read `invoice‮fdp.exe` reversed."""
    evil = "invoice\u202efdp.exe\u200b"
    tools = {"resultType": "complete", "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        method = body.get("method")
        if method == "server/discover":
            return 200, "application/json", tiny_http.result(body["id"], tiny_http.discover(capabilities={"tools": {}}))
        if method == "tools/list":
            return 200, "application/json", tiny_http.result(body["id"], tools)
        if method == "tools/call":
            return 200, "application/json", tiny_http.error(body["id"], -32000, evil)
        return 202, "application/json", b""

    s = await console.connect(kind="http", url=tiny_http.start(handler).url, era="modern")
    assert s["status"] == "connected", s["status_message"]
    called, frames = await pushed_after(
        console, serve, s["id"], lambda: console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "t"}),
        lambda fs: any("op-card-" in f and "fdp" in f for f in fs), "the failed operation's card")
    answer = called.text
    assert not any(obeyed(html) for html in (answer, *frames))
    assert any("⟨U+202E⟩" in f for f in frames)
    # The answer is the finished card when the call ends within the quick-answer wait, else the running card (a
    # loaded machine): only a finished one holds the error's text.
    if 'data-status="running"' not in answer:
        assert "⟨U+202E⟩" in answer


async def test_a_servers_log_line_and_argument_labels_show_their_bidi_and_zero_width_characters(
        console: Console, tiny_http: TinyHttp, serve: Serve) -> None:
    """A log notification's level, logger and data (pushed live to every tab) and an argument's title and
    description (the form a person types into) were put on the page as they came: a label could read
    `Password for moc.elgoog` reversed."""
    evil = "invoice\u202efdp.exe\u200b"
    schema = {"type": "object", "properties": {"p": {"type": "string", "title": evil, "description": evil}}}
    tools = {"resultType": "complete", "tools": [{"name": "t", "inputSchema": schema}]}
    log = {"jsonrpc": "2.0", "method": "notifications/message",
           "params": {"level": "info", "logger": evil, "data": f"said {evil}"}}

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        method = body.get("method")
        if method == "server/discover":
            caps = {"tools": {}, "logging": {}}
            return 200, "application/json", tiny_http.result(body["id"], tiny_http.discover(capabilities=caps))
        if method == "tools/list":
            return 200, "application/json", tiny_http.result(body["id"], tools)
        if method == "tools/call":
            done = tiny_http.result(body["id"], {"resultType": "complete", "content": []}).decode()
            return 200, "text/event-stream", f"data: {json.dumps(log)}\n\ndata: {done}\n\n".encode()
        return 202, "application/json", b""

    s = await console.connect(kind="http", url=tiny_http.start(handler).url, era="modern")
    assert s["status"] == "connected", s["status_message"]
    form = (await console.http.get(f"/sessions/{s['id']}/tools/form", params={"name": "t"})).text
    _, frames = await pushed_after(console, serve, s["id"], lambda: console.call_tool(s["id"], "t"),
                                   lambda fs: any("said" in f and "logs-" in f for f in fs), "the log line")
    assert not any(obeyed(html, in_attributes=False) for html in (form, *frames))
    assert form.count("⟨U+202E⟩") >= 2 and any(f.count("⟨U+202E⟩") >= 2 for f in frames)


# -- The websocket feed of a console started as `mcp-console serve` is: limits that live in its server.

STARTUP_TIMEOUT_S = 30.0
MESSAGE_TOO_BIG = 1009


@dataclass
class ServedConsole:
    """A console process: its public host name, its port, and what it printed (a queue its pump fills)."""

    host: str
    port: int
    proc: subprocess.Popen[bytes]
    lines: queue.Queue[str]


@pytest.fixture
def served_console(tmp_path: Path) -> Iterator[ServedConsole]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(tmp_path)],
                            cwd=REPO_ROOT, env={**child_env(), "MCP_CONSOLE_TOKEN": TOKEN},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, lines), name="console-out", daemon=True).start()
        launch = re.compile(rf"http://(mcp-[a-z2-7]+\.localhost):{port}/\?token=")
        line, seen = wait_for_line(lines, proc, lambda text: bool(launch.search(text)), STARTUP_TIMEOUT_S)
        if line is None:
            pytest.fail(f"the console did not start: {''.join(seen)!r}")
        match = launch.search(line)
        assert match is not None
        yield ServedConsole(match[1], port, proc, lines)
    finally:
        stop_process(proc)


async def test_a_websocket_message_far_larger_than_a_hello_is_refused_as_too_big(
        served_console: ServedConsole, demo_url: str) -> None:
    """A tab sends one message, its hello of a few bytes; uvicorn's default let every socket hand the console a
    16 MiB message to buffer and decode (a few times that in memory), twenty sockets per share link."""
    host, port = served_console.host, served_console.port
    public = f"{host}:{port}"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers={**AUTH, "Host": public},
                                 timeout=WS_DEADLINE_S) as owner:
        made = await owner.post("/sessions", data={"kind": "http", "url": demo_url}, headers=JSON)
        assert made.status_code == 200, made.text
        sid = made.json()["id"]
        async with connect(f"ws://{public}/sessions/{sid}/ws", host="127.0.0.1", port=port,
                           open_timeout=WS_DEADLINE_S, max_size=None,
                           additional_headers={"Cookie": f"{OWNER_COOKIE}={TOKEN}",
                                               "Origin": f"http://{public}"}) as ws:
            await ws.send(json.dumps({"last_seq": 0}))
            await ws.send("x" * (1024 * 1024))
            _, close = await ws_closed(ws)
    assert close is not None and close.code == MESSAGE_TOO_BIG, close


async def test_sockets_closed_before_their_hello_end_quietly_with_no_traceback_in_the_log(
        served_console: ServedConsole, demo_url: str) -> None:
    """A tab that navigates away at once closes its socket before the hello: each logged "Exception in ASGI
    application" with a traceback, which any link holder could repeat to fill the console's log."""
    public = f"{served_console.host}:{served_console.port}"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{served_console.port}",
                                 headers={**AUTH, "Host": public}, timeout=WS_DEADLINE_S) as owner:
        made = await owner.post("/sessions", data={"kind": "http", "url": demo_url}, headers=JSON)
        assert made.status_code == 200, made.text
        sid = made.json()["id"]
        for _ in range(3):
            ws = await connect(f"ws://{public}/sessions/{sid}/ws", host="127.0.0.1", port=served_console.port,
                               open_timeout=WS_DEADLINE_S,
                               additional_headers={"Cookie": f"{OWNER_COOKIE}={TOKEN}", "Origin": f"http://{public}"})
            await ws.close()
        assert (await owner.get(f"/sessions/{sid}.json")).status_code == 200  # still serving
    # What the console printed meanwhile, up to a second more for a handler that is slow to end (or to log).
    line, seen = wait_for_line(served_console.lines, served_console.proc,
                               lambda text: "Exception in ASGI application" in text or "Traceback" in text, 1.0)
    assert line is None, "".join(seen)


# -- Two tabs acting on one session through the demo server: a roots request answered in one tab (an operator's,
# say) while the owner changes the roots in another sends only what the answering tab was shown; an answer for a key
# the operation's round does not ask for, and an Abandon from a tab that shows an earlier round, are refused with
# nothing sent.

SHOWN = [{"uri": "file:///tmp/shown", "name": "Shown"}]
CHANGED = [{"uri": "file:///tmp/changed-meanwhile"}]


async def test_roots_changed_after_a_roots_dialog_was_shown_are_not_sent_under_its_send_these_roots(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/shown Shown"}, headers=JSON)
    op = (await console.call_tool(sid, "list_roots"))["operation"]
    assert op["status"] == "awaiting_input", op
    # Another tab (the owner's) changes the roots while this dialog shows the old ones.
    changed = await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/changed-meanwhile"},
                                      headers=JSON)
    assert changed.json()["roots"] == CHANGED, changed.text

    form = {"key": "roots", "key_json": '"roots"', "action": "accept", "round": "1",
            "roots_shown": json.dumps(SHOWN)}  # what the dialog previewed, as its form posts it
    answered = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)
    assert answered.status_code == 200, answered.text
    state = answered.json()
    assert state["status"] == "awaiting_input" and len(state["rounds"]) == 1, state
    assert "changed" in json.dumps(state["errors"].get("roots")), state["errors"]

    # Sent again from the dialog as it is now shown, the current roots go.
    form["roots_shown"] = json.dumps(CHANGED)
    done = (await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)).json()
    assert done["status"] == "complete", done
    assert done["final"]["result"]["structuredContent"] == {"roots": CHANGED}, done["final"]["result"]


# --- an answer for a key the round does not ask for -----------------------------------------------------------------

HTMX = {"HX-Request": "true", "Accept": "text/html"}


async def _post_answer(console: Console, sid: str, op: str, key: str, round_: int | None = None,
                       headers: dict[str, str] = JSON, **fields: str) -> httpx.Response:
    form = {"key": key, "key_json": json.dumps(key), "action": "decline", **fields}
    if round_ is not None:
        form["round"] = str(round_)  # what a dialog's form posts: the round it was shown for
    return await console.http.post(f"/sessions/{sid}/operations/{op}/answer", data=form, headers=headers)


async def _op(console: Console, sid: str, op: str) -> dict[str, Any]:
    response = await console.http.get(f"/sessions/{sid}/operations/{op}.json", headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def _recorded(console: Console, sid: str, op: str) -> tuple[int, dict[str, Any]]:
    """What the session has recorded: its last sequence number and the operation as the fold knows it."""
    return (await console.session(sid))["seq"], await _op(console, sid, op)


async def test_an_answer_for_a_key_the_round_does_not_ask_for_is_refused_naming_it_and_what_the_round_asks(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "always_more"))["operation"]
    assert op["status"] == "awaiting_input" and op["pending"] == ["more_1"], op
    before = await _recorded(console, sid, op["op"])

    refused = await _post_answer(console, sid, op["op"], "made_up", 1)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"made_up"' in said and '"more_1"' in said and "round 1" in said and "nothing was sent" in said, said
    assert await _recorded(console, sid, op["op"]) == before  # nothing sent, nothing recorded


async def test_an_answer_for_a_key_only_an_earlier_round_asked_is_refused_once_the_server_asks_another(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "always_more"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "more_1", 1)).status_code == 200
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["pending"] == ["more_2"], state
    before = await _recorded(console, sid, op)

    for round_ in (None, 2):  # a client that does not say its round; one that says the current round
        refused = await _post_answer(console, sid, op, "more_1", round_)
        assert refused.status_code == 409, refused.text
        said = refused.json()["error"]
        assert '"more_1"' in said and '"more_2"' in said and "round 2" in said, said
    assert await _recorded(console, sid, op) == before


async def test_a_refused_key_is_said_to_an_htmx_caller_as_an_alert_with_the_servers_keys_escaped(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "odd_keys"))["operation"]
    assert op["pending"] == sorted(ODD_KEYS), op
    before = await _recorded(console, sid, op["op"])

    refused = await _post_answer(console, sid, op["op"], "<i>mine</i>", 1, headers=HTMX)

    assert refused.status_code == 409, refused.text
    assert 'role="alert"' in refused.text and "nothing was sent" in refused.text, refused.text
    assert "<b>" not in refused.text and "<i>" not in refused.text, refused.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in refused.text and "&lt;i&gt;mine&lt;/i&gt;" in refused.text, refused.text
    assert "\u202e" not in refused.text and "\\u202eevil" in refused.text, refused.text  # shown, not obeyed
    assert await _recorded(console, sid, op["op"]) == before


async def test_the_refusal_of_a_long_made_up_key_in_a_round_asking_a_hundred_inputs_stays_short(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "many_inputs", "mode": "json", "json": json.dumps({"count": MAX_INPUT_REQUESTS})})
    op = reply.json()["operation"]["op"]

    refused = await _post_answer(console, sid, op, "x" * 10_000, 1)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert len(said) < 1_000 and '"q0"' in said and "more" in said, said


async def test_an_answer_for_a_made_up_key_posted_while_a_retry_runs_is_refused_once_the_server_has_asked(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    first = asyncio.create_task(_post_answer(console, sid, op, "q", 1))
    await _running(console, sid, op)

    refused = await _post_answer(console, sid, op, "nope")

    assert (await first).status_code == 200
    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"nope"' in said and '"q"' in said and "round 2" in said, said
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["status"] == "awaiting_input" and not state["answered"], state


async def _running(console: Console, sid: str, op: str) -> None:
    """Waits until the operation's retry is with the server (the hostile same_key takes its time over it)."""
    async def check() -> bool:
        return (await _op(console, sid, op))["status"] == "running"
    await eventually(check, what=f"operation {op} to be running its retry")


# --- Abandon says which round it gives up -------------------------------------------------------------------------


async def _abandon(console: Console, sid: str, op: str, round_: int | None,
                   headers: dict[str, str] = JSON) -> httpx.Response:
    data = {} if round_ is None else {"round": str(round_)}  # what the Abandon button posts: the round shown
    return await console.http.post(f"/sessions/{sid}/operations/{op}/abandon", data=data, headers=headers)


async def test_an_abandon_from_a_tab_still_showing_an_earlier_round_is_refused_and_the_operation_waits_on(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "q", 1)).status_code == 200  # another tab answered round 1
    before = await _recorded(console, sid, op)

    refused = await _abandon(console, sid, op, 1)
    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "round 1" in said and "now at round 2" in said and "nothing was abandoned" in said, said
    shown = await _abandon(console, sid, op, 1, headers=HTMX)
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "round 1" in shown.text, shown.text
    assert await _recorded(console, sid, op) == before

    abandoned = await _abandon(console, sid, op, 2)  # from a tab that shows the round now asked
    assert abandoned.status_code == 200 and abandoned.json()["status"] == "abandoned", abandoned.text


async def test_an_abandon_posted_while_another_tabs_answer_is_retried_is_refused_once_the_server_asks_again(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    answered = asyncio.create_task(_post_answer(console, sid, op, "q", 1))
    await _running(console, sid, op)

    refused = await _abandon(console, sid, op, 1)

    assert (await answered).status_code == 200
    assert refused.status_code == 409 and "now at round 2" in refused.json()["error"], refused.text
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["status"] == "awaiting_input", state


async def test_an_abandon_that_says_no_round_gives_up_the_operation_at_whatever_round_it_is(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "q", 1)).status_code == 200

    abandoned = await _abandon(console, sid, op, None)

    assert abandoned.status_code == 200 and abandoned.json()["status"] == "abandoned", abandoned.text
    assert len(abandoned.json()["rounds"]) == 2, abandoned.json()


# --- a key already answered in this round ---------------------------------------------------------------------------


def _sent_params(detail: dict[str, Any]) -> dict[str, Any]:
    """The params of the request a round sent, parsed from the raw frame that went out on the wire."""
    [out] = [w for w in detail["wire"] if w["direction"] == "out" and '"method"' in w["raw"]]
    params: dict[str, Any] = json.loads(out["raw"])["params"]
    return params


async def test_a_second_answer_to_a_key_already_answered_in_the_round_is_refused_and_the_first_one_is_sent(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "multi_ask"))["operation"]["op"]
    assert (await _op(console, sid, op))["pending"] == ["favorite_color", "workspace_roots"]
    taken = await console.http.post(f"/sessions/{sid}/operations/{op}/answer", headers=JSON, data={
        "key": "favorite_color", "key_json": '"favorite_color"', "round": "1", "action": "accept", "arg.color": "red"})
    assert taken.status_code == 200, taken.text
    before = await _recorded(console, sid, op)

    # Another tab's colour dialog, still showing the question unanswered, sends its answer too.
    refused = await _post_answer(console, sid, op, "favorite_color", 1)
    shown = await _post_answer(console, sid, op, "favorite_color", 1, headers=HTMX)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"favorite_color" was already answered' in said and "nothing was sent" in said, said
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "already answered" in shown.text, shown.text
    assert await _recorded(console, sid, op) == before  # nothing changed, nothing recorded
    done = await _post_answer(console, sid, op, "workspace_roots", 1, action="accept")
    assert done.status_code == 200 and done.json()["status"] == "complete", done.text
    retry = done.json()["rounds"][1]["key"]
    sent = _sent_params(await console.entry(sid, retry))["inputResponses"]
    assert sent["favorite_color"] == {"action": "accept", "content": {"color": "red"}}, sent


# --- Cancel and Enable and retry on an operation that is past them ---------------------------------------------------


async def _tools_calls_sent(console: Console, sid: str) -> int:
    """tools/call requests the session has sent: every round of every tools/call operation is one."""
    ops = (await console.session(sid))["operations"]
    return sum(len(o["rounds"]) for o in ops if o["method"] == "tools/call")


async def test_cancel_on_an_operation_that_has_completed_is_refused_saying_nothing_was_cancelled(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "echo", text="done"))["operation"]["op"]
    before = await _recorded(console, sid, op)

    refused = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    shown = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=HTMX)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "Nothing was cancelled" in said and "is complete" in said and op in said, said
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "Nothing was cancelled" in shown.text
    assert await _recorded(console, sid, op) == before
    assert before[1]["status"] == "complete"


async def test_enable_and_retry_on_a_completed_operation_is_refused_and_sends_no_tools_call(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "echo", text="once"))["operation"]["op"]
    before, sent = await _recorded(console, sid, op), await _tools_calls_sent(console, sid)

    refused = await console.http.post(f"/sessions/{sid}/operations/{op}/enable-and-retry", headers=JSON)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "No client capability is asked for" in said and "nothing was sent" in said and "complete" in said, said
    assert await _recorded(console, sid, op) == before
    assert await _tools_calls_sent(console, sid) == sent


async def test_enable_and_retry_pressed_again_after_it_retried_is_refused_and_the_tool_is_not_called_again(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    saved = await console.http.post(f"/sessions/{sid}/capabilities", data={"mode": "json", "caps_json": "{}"},
                                    headers=JSON)
    assert saved.status_code == 200 and saved.json()["client_capabilities"] == {}, saved.text
    op = (await console.call_tool(sid, "profile_form"))["operation"]
    assert op["status"] == "error" and op["required_capabilities"] == {"elicitation": {"form": {}}}, op
    retried = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/enable-and-retry", headers=JSON)
    assert retried.status_code == 200 and retried.json()["status"] == "awaiting_input", retried.text
    before, sent = await _recorded(console, sid, op["op"]), await _tools_calls_sent(console, sid)

    again = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/enable-and-retry", headers=JSON)

    assert again.status_code == 409 and "nothing was sent" in again.json()["error"], again.text
    assert await _recorded(console, sid, op["op"]) == before
    assert await _tools_calls_sent(console, sid) == sent == 2


# --- a round that is no round number ---------------------------------------------------------------------------------


@pytest.mark.parametrize("round_", ["1 ", "+1", "1.0", "\u00b2", "\u0661", "9" * 5000])
async def test_an_answer_or_abandon_whose_round_is_not_plain_digits_is_refused_and_takes_nothing(
        console: Console, demo_url: str, round_: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "multi_ask"))["operation"]["op"]
    before = await _recorded(console, sid, op)

    answered = await _post_answer(console, sid, op, "favorite_color", round=round_)
    abandoned = await console.http.post(f"/sessions/{sid}/operations/{op}/abandon", data={"round": round_},
                                        headers=JSON)

    for refused in (answered, abandoned):
        assert refused.status_code == 400, refused.text
        assert "not a round number" in refused.json()["error"], refused.text
    assert await _recorded(console, sid, op) == before
    assert (await _op(console, sid, op))["status"] == "awaiting_input"
