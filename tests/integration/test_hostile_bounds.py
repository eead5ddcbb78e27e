"""Everything a target can send is bounded: per response stream, per entry, per socket, per request body; stderr
floods travel in batches and are capped.

The hostile target (tests/hostile/tools_bounds.py) floods; a small configured bound keeps each test quick.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import time
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.hostile.fixtures import hostile_argv
from tests.integration.conftest import JSON, WS_DEADLINE_S, create_link, eventually, ws_closed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from tests.integration.conftest import Console, Served

MIB = 1024 * 1024
STREAM_BOUND = 8 * MIB
FLOOD = {"count": "40", "size": str(MIB)}  # 40 MB on one stream, five times the bound
BOUNDS = {"max_stream_bytes": STREAM_BOUND, "max_entry_notification_bytes": MIB}


def store_bytes(console: Console, session_id: str) -> int:
    """What the store holds for a session, as serialized events (file sizes would count WAL pages twice)."""
    console.manager.store.flush()
    return sum(len(json.dumps(e.to_dict())) for e in console.manager.store.events(session_id))


async def flood_and_check(console: Console, session_id: str) -> None:
    before = store_bytes(console, session_id)
    reply = await console.call_tool(session_id, "log_flood", **FLOOD)
    assert reply["ok"] is False
    said = json.dumps(reply["error"])
    assert "stopped reading: the response stream passed 8 MiB (setting max_stream_bytes)" in said, said
    twin = await console.http.get(f"/sessions/{session_id}.json")
    assert len(twin.content) < 3 * MIB, f"the JSON twin is {len(twin.content)} bytes"
    grown = store_bytes(console, session_id) - before
    assert grown < STREAM_BOUND + 4 * MIB, f"the store grew by {grown} bytes"
    text = twin.text
    assert "more notifications" in text and "not kept" in text
    assert "stopped reading: the response stream passed 8 MiB" in text  # the entry says so
    echo = await console.call_tool(session_id, "echo", text="still here")
    assert echo["ok"] is True and echo["result"]["content"][0]["text"] == "still here"


async def test_a_log_flood_over_http_is_cut_at_the_stream_bound_and_the_console_still_answers(
        make_console: Callable[..., Console], hostile_http: Callable[..., str]) -> None:
    console = make_console(**BOUNDS)
    s = await console.connect(kind="http", url=hostile_http("bounds", "basic"), headers="")
    assert s["status"] == "connected", s["status_message"]
    await flood_and_check(console, s["id"])


async def test_a_log_flood_over_stdio_is_cut_at_the_stream_bound_and_the_request_cancelled(
        make_console: Callable[..., Console]) -> None:
    console = make_console(**BOUNDS)
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("bounds", "basic")))
    assert s["status"] == "connected", s["status_message"]
    await flood_and_check(console, s["id"])
    wire = console.manager.store.events(s["id"], kinds=("wire",))
    cancels = [e for e in wire if '"notifications/cancelled"' in str(e.data.get("raw"))]
    assert cancels, "the request past the bound was not cancelled"


# --- request bodies, at the ASGI level ------------------------------------------------------------


async def test_a_body_over_the_limit_is_refused_413_before_the_route_runs(
        make_console: Callable[..., Console]) -> None:
    console = make_console(max_request_body_bytes=64 * 1024)
    big = "x" * (100 * 1024)
    sessions_before = len(console.manager.sessions)
    form = await console.http.post("/sessions", data={"kind": "http", "url": big}, headers=JSON)
    assert form.status_code == 413 and "max_request_body_bytes" in form.text
    multipart = await console.http.post("/sessions", data={"kind": "http"}, files={"url": ("u", big.encode())},
                                        headers=JSON)
    assert multipart.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:
        yield b"kind=http&url="
        for _ in range(20):
            yield b"y" * 8192

    chunked = await console.http.post("/sessions", content=chunks(),
                                      headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"})
    assert "content-length" not in {k.lower() for k in chunked.request.headers}
    assert chunked.status_code == 413
    assert len(console.manager.sessions) == sessions_before, "a route ran with an oversized body"


async def test_a_small_body_still_reaches_its_route(make_console: Callable[..., Console]) -> None:
    console = make_console(max_request_body_bytes=64 * 1024)
    response = await console.http.post("/sessions", data={"kind": "http", "url": "http://127.0.0.1:9/mcp"},
                                       headers=JSON)
    assert response.status_code == 200, response.text


async def test_an_import_over_its_own_limit_is_refused_413_without_reading_it(
        make_console: Callable[..., Console]) -> None:
    console = make_console(max_import_bytes=256 * 1024, max_request_body_bytes=1024 * 1024)
    sent: list[int] = []

    async def upload() -> AsyncIterator[bytes]:
        for _ in range(64):
            sent.append(1)
            yield b"z" * 16384

    response = await console.http.post("/sessions/import", content=upload(),
                                       headers={**JSON, "Content-Type": "application/json"})
    assert response.status_code == 413 and "max_import_bytes" in response.text
    declared = await console.http.post("/sessions/import", files={"file": ("s.json", b"{" + b" " * 300_000 + b"}")},
                                       headers=JSON)
    assert declared.status_code == 413


# --- websockets per credential and in total -----------------------------------------------------------


async def open_socket(served: Served, session_id: str, cookie: str | None = None) -> Any:
    headers = served.headers(cookie) if cookie else served.headers()
    ws = await connect(served.ws_url(session_id), additional_headers=headers, open_timeout=WS_DEADLINE_S,
                       **served.via)
    with contextlib.suppress(ConnectionClosed):  # a refused socket may be closed before its hello
        await ws.send(json.dumps({"last_seq": None}))
    return ws


async def test_the_socket_past_the_per_credential_and_the_total_limit_is_refused_with_a_reason(
        make_console: Callable[..., Console], serve: Callable[..., Any], hostile_http: Callable[..., str]) -> None:
    console = make_console(max_websockets_per_credential=2, max_websockets=3)
    served = await serve(console)
    s = await console.connect(kind="http", url=hostile_http("basic"), headers="")
    link = await create_link(console, s["id"])
    link_cookie = f"mcp_console_link={link['url'].rsplit('/s/', 1)[1]}"
    owner = [await open_socket(served, s["id"]) for _ in range(2)]
    try:
        third = await open_socket(served, s["id"])
        _, closed = await ws_closed(third)
        assert closed.code == 4029 and "max_websockets_per_credential" in closed.reason
        viewer = await open_socket(served, s["id"], link_cookie)  # another credential: the third in all
        past_total = await open_socket(served, s["id"], link_cookie)
        _, closed = await ws_closed(past_total)
        assert closed.code == 4029 and "setting max_websockets)" in closed.reason
        await viewer.close()
        await owner.pop().close()  # a slot frees up when a socket closes

        async def admitted() -> bool:
            again = await open_socket(served, s["id"])
            try:
                await asyncio.wait_for(again.recv(), 0.3)
            except TimeoutError:
                owner.append(again)
                return True  # still open: admitted (an idle feed sends nothing)
            except Exception:
                return False
            owner.append(again)
            return True

        await eventually(admitted, what="a socket to be admitted after others closed")
    finally:
        for ws in owner:
            await ws.close()


# --- stderr floods --------------------------------------------------------------------------------------


async def test_a_stderr_flood_is_batched_capped_and_does_not_delay_an_echo(
        make_console: Callable[..., Console], serve: Callable[..., Any]) -> None:
    lines, cap = 20000, 2000
    console = make_console(max_stderr_lines=cap)
    served = await serve(console)
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("bounds", "basic")))
    assert s["status"] == "connected", s["status_message"]
    ws = await open_socket(served, s["id"])
    try:
        await console.call_tool(s["id"], "stderr_flood", lines=str(lines), rate="0")
        started = time.monotonic()
        echo = asyncio.ensure_future(console.call_tool(s["id"], "echo", text="heard through the storm"))
        arrived = None
        deadline = started + WS_DEADLINE_S
        while arrived is None and time.monotonic() < deadline:
            fragment = str(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
            if "heard through the storm" in fragment:
                arrived = time.monotonic() - started
        assert arrived is not None and arrived < 3.0, f"the echo reached the websocket after {arrived} s"
        assert (await echo)["ok"] is True

        async def all_counted() -> dict[str, Any] | None:
            twin = await console.session(s["id"])
            return twin if twin["stderr_dropped"] + len(stored_lines(console, s["id"])) >= lines else None

        twin = await eventually(all_counted, what="every stderr line to be stored or counted as dropped")
        stored = stored_lines(console, s["id"])
        events = console.manager.store.events(s["id"], kinds=("stderr",))
        assert len(stored) == cap and twin["stderr_dropped"] == lines - cap
        assert len(events) <= lines / 20, f"{len(events)} stderr events for {lines} lines"
        page = await console.http.get(f"/sessions/{s['id']}")
        assert f"{lines - cap} lines dropped" in page.text
    finally:
        await ws.close()


def stored_lines(console: Console, session_id: str) -> list[str]:
    return [line for e in console.manager.store.events(session_id, kinds=("stderr",))
            for line in e.data.get("lines", [])]


