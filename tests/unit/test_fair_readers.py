"""A reader with a backlog shares the event loop: a flood of frames that are all buffered already does not keep
timers and other tasks (the progress flush, the websocket senders) waiting until the flood is over."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from app.mcp import fair
from app.mcp.client import ClientConfig, McpClient
from app.mcp.http import HttpTransport
from app.mcp.lint import checks

CHUNKS = 200
PER_CHUNK = 5


def _sse(message: dict[str, object]) -> str:
    return f"event: message\ndata: {json.dumps(message)}\n\n"


async def test_an_http_stream_whose_chunks_are_all_buffered_lets_other_tasks_run_between_chunks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fair, "SLICE_S", 0.0)  # every chunk spends the slice: the reader gives way after each
    async def body(request_id: object) -> AsyncIterator[bytes]:
        # Every chunk is ready at once, as when the kernel buffer holds seconds of a server's flood.
        for c in range(CHUNKS):
            yield "".join(_sse({"jsonrpc": "2.0", "method": "notifications/progress",
                                "params": {"progressToken": "t", "progress": c * PER_CHUNK + i}})
                          for i in range(PER_CHUNK)).encode()
        yield _sse({"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete"}}).encode()

    def server(request: httpx.Request) -> httpx.Response:
        message = json.loads(request.content)
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=body(message["id"]))

    turns = 0
    stop = asyncio.Event()

    async def other_task() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
        client = McpClient(HttpTransport("http://127.0.0.1:1/mcp", http, lambda _e: None),
                           ClientConfig(client_info={}, capabilities=dict))
        ticker = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        before = turns
        reply = await client.request("tools/call", {"name": "flood"})
        during = turns - before
        stop.set()
        await ticker
        await client.close()
    assert reply.ok and reply.notification_count == CHUNKS * PER_CHUNK
    assert during >= CHUNKS, f"the other task ran {during} times while {CHUNKS} buffered chunks were read"


def test_plain_progress_notifications_are_checked_without_the_pydantic_models(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = checks.wire_types.parse_server_notification

    def counting(*args: object, **kw: object) -> object:
        calls.append(args)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(checks.wire_types, "parse_server_notification", counting)
    for i in range(1000):
        params = {"progressToken": "tok", "progress": i, "total": 1000, "message": f"step {i}"}
        assert checks.notification_problems("notifications/progress", params) == []
    assert calls == [], "a flood of plain progress paid two model validations per frame"


def test_progress_params_the_fast_check_cannot_vouch_for_still_get_the_full_check() -> None:
    bad = checks.notification_problems("notifications/progress", {"progressToken": "t", "progress": "abc"})
    missing = checks.notification_problems("notifications/progress", {"progressToken": "t"})
    assert [rule for rule, _ in bad] == ["frame.schema"] and "params/progress" in bad[0][1]
    assert [rule for rule, _ in missing] == ["frame.schema"]
    # Accepted by the model's lax parsing, so still clean, but only after the full check.
    assert checks.notification_problems("notifications/progress", {"progressToken": "t", "progress": "5"}) == []


async def test_a_reader_gives_way_once_per_time_slice_not_once_per_chunk() -> None:
    now = [0.0]
    share = fair.FairShare(slice_s=0.005, clock=lambda: now[0])
    for _ in range(1000):  # a thousand chunks read within one slice: no loop turn for each
        await share.tick()
    assert share.yields == 0
    now[0] += 0.005
    await share.tick()
    assert share.yields == 1
    for _ in range(10):
        now[0] += 0.001
        await share.tick()
    assert share.yields == 3  # 5 ms then 5 ms more of reading: one turn each


def test_the_plain_check_says_when_a_reader_is_due_to_give_way_without_a_coroutine_per_chunk() -> None:
    now = [0.0]
    share = fair.FairShare(slice_s=0.005, clock=lambda: now[0])
    assert not any(share.due() for _ in range(1000))
    now[0] += 0.005
    assert share.due()
    assert share.yields == 0  # due() only says so: giving way is the reader's await
