"""The innermost middleware: every request but the action POSTs flushes the held events first.

The action POSTs that send to a target hold their own events (see `Timeline.hold`) and answer from their own
objects, so they do not flush; flushing there would put the previous call's recording back on the next call's
path. Everything else (pages, JSON twins, MRTR answers, exports, websockets) flushes every session's held events
before any route reads a fold or the store: a script that reads an entry right after its call finds it.

(The action POSTs of a single-process console do not come this way at all: `app/web/front_door.py` answers them
outside the whole stack. What reaches this point of them, a streamed body or a team deployment's call, goes on
to the router, whose first routes they are: see `deps.hoist_hot_routes`.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.console.timeline import flush_all

HOLDING_ACTIONS = ("/tools/call", "/resources/read", "/prompts/get")
ErrorHandler = Callable[[Request, HTTPException], Awaitable[Response]]


def holds_its_events(scope: Scope) -> bool:
    return scope.get("method") == "POST" and str(scope.get("path", "")).endswith(HOLDING_ACTIONS)


class FlushBeforeReads:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan" and not holds_its_events(scope):
            flush_all()
        await self.app(scope, receive, send)
