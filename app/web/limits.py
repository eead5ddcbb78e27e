"""Request bodies bounded at the ASGI level, before any route or form parser sees a byte.

A declared Content-Length over the limit is answered 413 at once, without reading the body. A body
without one (chunked, streamed) is counted as it arrives; past the limit the request ends with 413
and the app gets no more of it. Multipart is just a body here, so it is bounded the same way.
Some paths have their own limit (a session file for /sessions/import is larger than any form).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.mcp.transport import size_text
from app.settings import Settings


class BodyTooLarge(Exception):
    """Raised into the app when a streamed body passes its limit; caught here, never seen by a client."""


@dataclass(slots=True)
class _Progress:
    received: int = 0
    refused: bool = False
    started: bool = False


class BodyLimits:
    """The largest body each path takes, and the setting that says so."""

    def __init__(self, settings: Settings) -> None:
        self.default = settings.max_request_body_bytes
        # Exact paths only: a prefix match would let a crafted path pick the larger limit.
        self.per_path = {"/sessions/import": (settings.max_import_bytes, "max_import_bytes")}

    def limit_for(self, path: str) -> tuple[int, str]:
        return self.per_path.get(path.rstrip("/") or "/", (self.default, "max_request_body_bytes"))


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.limits = BodyLimits(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting = self.limits.limit_for(scope["path"])
        declared = content_length(scope)
        if declared is not None and (declared < 0 or declared > limit):
            await _refuse(send, limit, setting)
            return
        state = _Progress()

        async def counted_receive() -> Message:
            if state.refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state.received += len(message.get("body", b""))
                if state.received > limit:
                    state.refused = True
                    if not state.started:
                        await _refuse(send, limit, setting)
                    raise BodyTooLarge()
            return message

        async def guarded_send(message: Message) -> None:
            if state.refused:
                return  # the 413 has been sent; whatever the app still says goes nowhere
            if message["type"] == "http.response.start":
                state.started = True
            await send(message)

        with contextlib.suppress(BodyTooLarge):
            await self.app(scope, counted_receive, guarded_send)


def content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1  # unparseable: refused like an oversized one
    return None


async def _refuse(send: Send, limit: int, setting: str) -> None:
    body = json.dumps({"error": f"request body larger than {size_text(limit)} (setting {setting})"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
