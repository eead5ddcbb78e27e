"""The outermost layer: a script's or a tab's call (tools/call, resources/read, prompts/get) in one step.

Every request used to pass ten ASGI layers before its endpoint ran: Starlette's error middleware, FastAPI's
telemetry and body-limit wrappers, the console's body limit, Host/Origin guard, gzip, routing to the owner, the
held events' flush and the router, each with its own `send` wrapper the answer went back through. For the three
action POSTs that was about a tenth of the console's CPU per call under bench.latency, for checks that are a few
comparisons each.

Here the same checks run in one place, made by the same code: `BodyLimits.limit_for` and the declared
length, `Guard.screen` (Host, Origin, cookies dropped off the public host), `identify` (the owner token or a
share link), then the endpoint the router would call, with the app's HTTPException handler and the security
headers on the answer. A request is taken here only when every check passes on the first look; anything else
(a refusal, a body without a declared length, no principal, a team deployment, any other path) goes down the
full stack untouched, which answers it exactly as it always has. So this layer can only ever answer what the
full stack would have answered with a 200-class call, never refuse differently or let through what it stops.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request, cookie_parser
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.deps import Web, identify
from app.web.held import ErrorHandler, holds_its_events
from app.web.limits import BodyLimits, content_length
from app.web.security import NO_STORE, SECURITY_HEADERS


def _framing_and_cookie(scope: Scope) -> tuple[bool, str]:
    """Whether a Transfer-Encoding stands beside the Content-Length (the declared length may not be what arrives,
    so the body limit must count it: the HTTP parser should have refused it already, and this layer does not rely
    on that), and the cookies as Starlette reads them (its first Cookie header). One pass over the headers."""
    framed, cookie = False, None
    for name, value in scope["headers"]:
        low = name.lower()
        if low == b"transfer-encoding":
            framed = True
        elif low == b"cookie" and cookie is None:
            cookie = value.decode("latin-1")
    return framed, cookie or ""


class FrontDoor:
    def __init__(self, app: ASGIApp, web: Web, routes: Sequence[BaseRoute], limits: BodyLimits,
                 on_http_error: ErrorHandler) -> None:
        self.app = app
        self.web = web
        self.routes = [r for r in routes if isinstance(r, Route)]
        self.limits = limits
        self.on_http_error = on_http_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        taken = self._take(scope, receive)
        if taken is None:
            await self.app(scope, receive, send)
            return
        route, request = taken
        started = False

        async def secured_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS, NO_STORE]  # as the full stack
            await send(message)

        try:
            try:
                response = await route.endpoint(request)
            except HTTPException as exc:
                response = await self.on_http_error(request, exc)
            await response(request.scope, receive, secured_send)
        except Exception:
            # As Starlette's error middleware answers a crash: a plain 500 (no traceback to the caller), and
            # the error raised on to the server, which logs it.
            if not started:
                await PlainTextResponse("Internal Server Error", status_code=500)(request.scope, receive,
                                                                                  secured_send)
            raise

    def _take(self, scope: Scope, receive: Receive) -> tuple[Route, Request] | None:
        """The route and request for a call this layer answers itself; None to leave it to the full stack."""
        if scope["type"] != "http" or not holds_its_events(scope) or self.web.manager.ownership is not None:
            return None
        limit, _ = self.limits.limit_for(scope["path"])
        declared = content_length(scope)
        if declared is None or declared < 0 or declared > limit:
            return None  # streamed, unreadable or too large: the body limit counts or refuses it
        screened = self.web.guard.screen(scope)
        if screened.problem is not None:
            return None
        scope = screened.scope
        # The cookies are read from the screened scope: gone already when not on the public host.
        framed, cookie = _framing_and_cookie(scope)
        if framed:
            return None
        who = identify(self.web, screened.headers, cookie_parser(cookie))
        if who is None:
            return None  # the full stack says 401, or that the link ended
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                state = {**scope.get("state", {}), "principal": who}
                return route, Request({**scope, **child, "state": state}, receive)
        return None
