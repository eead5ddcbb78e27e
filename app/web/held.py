"""The innermost middleware: the action POSTs go straight to their endpoint; every other request flushes first.

Flushing: the action POSTs that send to a target hold their own events (see `Timeline.hold`) and answer from
their own objects, so they do not flush; flushing there would put the previous call's recording back on the next
call's path. Everything else (pages, JSON twins, MRTR answers, exports, websockets) flushes every session's held
events before any route reads a fold or the store: a script that reads an entry right after its call finds it.

Straight to the endpoint: below this point FastAPI matched the routes, ran its exception middleware, an exit
stack and two wrappers per request; for the action POSTs (plain Starlette routes, their checks in
`deps.operator_post`) that was a tenth of the event loop's time per call under bench.latency. Everything above
this point (body limit, Host/Origin guard, routing to the owner, the server-error handler) still runs; an
HTTPException (FastAPI's or Starlette's own, e.g. a form past its limits) is answered by the app's own
handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.console.timeline import flush_all

HOLDING_ACTIONS = ("/tools/call", "/resources/read", "/prompts/get")
ErrorHandler = Callable[[Request, HTTPException], Awaitable[Response]]


def holds_its_events(scope: Scope) -> bool:
    return scope.get("method") == "POST" and str(scope.get("path", "")).endswith(HOLDING_ACTIONS)


class HotPath:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute], on_http_error: ErrorHandler) -> None:
        self.app = app
        self.routes = [r for r in routes if isinstance(r, Route)]
        self.on_http_error = on_http_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if not holds_its_events(scope):
            flush_all()
            await self.app(scope, receive, send)
            return
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                request = Request({**scope, **child}, receive)
                try:
                    response = await route.endpoint(request)
                except HTTPException as exc:
                    response = await self.on_http_error(request, exc)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
