"""A RequestRunner over MemoryTransport, for unit tests of operations and listeners without a session.

A Python function plays the server; nothing here opens a socket or starts a process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from app.console.events import (
    CapabilitiesChanged,
    ExchangeFinished,
    ExchangeStarted,
    ListsRefreshed,
    StatusChanged,
    TimelineEvent,
)
from app.console.runner import OnStart
from app.console.tasks import TaskGroup
from app.console.timeline import Timeline
from app.mcp.client import ClientConfig, McpClient, Reply
from app.mcp.jsonrpc import Frame
from app.mcp.memory import Handler, MemoryTransport
from app.mcp.task import TaskChoice

WAIT_S = 2.0  # an upper bound for what should happen at once; never a sleep


def result(message: dict[str, Any], body: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": body})


def error(message: dict[str, Any], code: int, text: str, data: Any = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text, "data": data}})


def notification(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})


class Published:
    """What the timeline published, and a way to wait for a condition on it (woken by each event)."""

    def __init__(self) -> None:
        self.events: list[TimelineEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: TimelineEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def until(self, condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        async with asyncio.timeout(timeout_s):
            while not condition():
                self._changed.clear()
                await self._changed.wait()


class MemoryRunner:
    """A RequestRunner as small as it gets: one McpClient on MemoryTransport, each request recorded.

    Like the session it records ExchangeStarted before sending and ExchangeFinished after, so the
    rounds of an operation fold into the timeline as they do in the console.
    """

    def __init__(self, handler: Handler, timeline: Timeline, mrtr_max_rounds: int = 10) -> None:
        self.timeline = timeline
        self.mrtr_max_rounds = mrtr_max_rounds
        self.background = TaskGroup()  # a task's poller runs here, as in the session's
        self.transport = MemoryTransport(handler)
        self.client = McpClient(self.transport, ClientConfig(
            client_info={"name": "unit", "version": "0"}, capabilities=lambda: self.capabilities, idle_timeout_s=5.0))
        timeline.append(StatusChanged(status="connected"))

    @property
    def lists(self) -> dict[str, list[dict[str, Any]]]:
        return self.timeline.state.lists

    def as_task(self, method: str, params: dict[str, Any], choice: TaskChoice | None = None) -> dict[str, Any]:
        return params  # the memory runner speaks 2026-07-28 only

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.timeline.state.capabilities

    def set_capabilities(self, capabilities: dict[str, Any], saved: bool = True) -> None:
        self.timeline.append(CapabilitiesChanged(capabilities=capabilities, saved=saved))

    @property
    def status(self) -> str:
        return self.timeline.state.status

    @property
    def status_message(self) -> str:
        return self.timeline.state.status_message

    def offer_tools(self, tools: list[dict[str, Any]]) -> None:
        self.timeline.append(ListsRefreshed(lists={"tools": tools}, counts={"tools": len(tools)}))

    async def run(self, method: str, params: dict[str, Any], *, op: str | None = None, round_: int | None = None,
                  on_notification: Callable[[Frame], None] | None = None, on_start: OnStart | None = None,
                  stream: bool = False, log_level: str | None = None) -> Reply:
        key = self.client.new_key()
        message = self.client.build(method, params, log_level=log_level)
        then = on_start(key, message["id"]) if on_start is not None else None
        self.timeline.append(ExchangeStarted(key=key, method=method, id=message["id"], op=op, round=round_))
        if then is not None:
            then()
        reply = await self.client.request(method, message=message, key=key, on_notification=on_notification,
                                          stream=stream)
        self.timeline.append(ExchangeFinished(key=key, status="ok" if reply.error is None else "error",
                                              error=str(reply.error) if reply.error else None, op=op, round=round_))
        return reply

    async def cancel(self, key: str, who: str) -> bool:
        return await self.client.cancel(key, f"cancelled by the {who}")

    def sent(self, method: str | None = None) -> list[dict[str, Any]]:
        """The messages the fake server received, in order."""
        return [m for m, _ in self.transport.sent if method is None or m.get("method") == method]


MakeRunner = Callable[..., MemoryRunner]  # the make_runner fixture: a handler (and mrtr_max_rounds) → a runner


async def until_stopped(stop: asyncio.Event) -> AsyncIterator[str]:
    """The rest of a stream that stays open until the test (or a cancel) ends it."""
    await stop.wait()
    for _ in ():
        yield ""
