"""A request runs in its caller's task: the user's cancel and the deadline interrupt it without helper tasks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from app.mcp.client import ClientConfig, McpClient
from app.mcp.errors import RequestCancelled, RequestTimedOut
from app.mcp.memory import MemoryTransport

CLIENT_INFO = {"name": "mcp-console-tests", "version": "0.0.1"}
WAIT_S = 2.0


async def answer(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
    yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete"}})


def client_for(handler: Any, idle_timeout_s: float = 5.0) -> McpClient:
    config = ClientConfig(client_info=CLIENT_INFO, capabilities=lambda: {}, idle_timeout_s=idle_timeout_s)
    return McpClient(MemoryTransport(handler), config)


async def test_a_request_creates_no_task_of_its_own() -> None:
    loop = asyncio.get_running_loop()
    created: list[object] = []
    default = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        created.append(coro)
        return default(loop, coro, **kw) if default is not None else asyncio.Task(coro, loop=loop, **kw)

    client = client_for(answer)
    loop.set_task_factory(counting)  # type: ignore[arg-type]
    try:
        for _ in range(5):
            assert (await client.request("tools/list")).ok
    finally:
        loop.set_task_factory(default)
    assert created == []  # before: three per call (the work, a wait on the stop event, a wait on the deadline)


async def test_the_users_cancel_interrupts_the_request_and_leaves_its_task_uncancelled() -> None:
    sent = asyncio.Event()

    async def silent(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        sent.set()
        await asyncio.Event().wait()  # never answers
        yield ""

    client = client_for(silent)

    async def call() -> tuple[Any, int]:
        reply = await client.request("tools/call", {"name": "slow"}, key="k1")
        return reply, asyncio.current_task().cancelling()  # type: ignore[union-attr]

    running = asyncio.ensure_future(call())
    await asyncio.wait_for(sent.wait(), WAIT_S)
    assert await client.cancel("k1")
    reply, cancelling = await asyncio.wait_for(running, WAIT_S)
    assert isinstance(reply.error, RequestCancelled) and cancelling == 0


async def test_the_deadline_interrupts_a_silent_request_without_a_waiting_task() -> None:
    async def silent(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        await asyncio.Event().wait()
        yield ""

    reply = await asyncio.wait_for(client_for(silent, idle_timeout_s=0.05).request("tools/list"), WAIT_S)
    assert isinstance(reply.error, RequestTimedOut)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_cancel_from_outside_still_cancels_the_caller() -> None:
    sent = asyncio.Event()

    async def silent(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        sent.set()
        await asyncio.Event().wait()
        yield ""

    running = asyncio.ensure_future(client_for(silent).request("tools/list"))
    await asyncio.wait_for(sent.wait(), WAIT_S)
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=WAIT_S)
    assert running in done and running.cancelled()
