"""The demo server's protected mode (`python -m app.demo --oauth-issuer URL`): an ASGI gate in front of `/mcp`.

What a client of a protected MCP server meets, done as the spec's server side says:
- protected resource metadata (RFC 9728) at the path-inserted well-known URL, naming the issuer;
- `401` with `WWW-Authenticate: Bearer resource_metadata=…, scope=…` without a token, plus `error="invalid_token"`
  when the token is bad or expired;
- step-up: a `tools/call` of a tool that needs more scope than the token carries answers `403 insufficient_scope`
  with the scopes it needs (the gate reads the JSON-RPC body for that and hands the same bytes on to the app).
Tokens are never logged or echoed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.demo.bearer import Grant, IssuerKeys, IssuerUnreachable, TokenRejected, check_token

MCP_PATH = "/mcp"
PRM_PATH = "/.well-known/oauth-protected-resource" + MCP_PATH
SCOPES_SUPPORTED = ("mcp:read", "mcp:write")
# A tools/call body is read whole to find the tool's name; the demo's own arguments are small.
MAX_BODY_BYTES = 8 * 1024 * 1024
CORS = [(b"access-control-allow-origin", b"*"), (b"access-control-expose-headers", b"WWW-Authenticate")]


class BearerGate:
    """ASGI middleware: serves the PRM document and lets only requests with a good bearer token reach `/mcp`."""

    def __init__(self, app: ASGIApp, *, issuer: str, resource: str | None = None, required_scope: str = "mcp:read",
                 tool_scopes: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.issuer = issuer
        self.required = frozenset(required_scope.split())
        self.tool_scopes = dict(tool_scopes or {})
        self.keys = IssuerKeys(issuer)
        self.resource = ""  # the canonical MCP URL: what tokens must name as their audience
        self.metadata_url = ""
        if resource is not None:
            self._serve_as(resource)

    def _serve_as(self, resource: str) -> None:
        self.resource = resource
        origin = resource[: len(resource) - len(MCP_PATH)] if resource.endswith(MCP_PATH) else resource.rstrip("/")
        self.metadata_url = origin + PRM_PATH

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.resource:
            # Not given: the address this server listens on, which with `--port 0` is known only now.
            host, port = scope["server"]
            self._serve_as(f"http://{host}:{port}{MCP_PATH}")
        path = scope["path"]
        if path == PRM_PATH:
            await _answer(send, 200, self.metadata(), [])
            return
        if path.rstrip("/") != MCP_PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":  # a browser's preflight carries no token
            # The headers it asks for, echoed: a wildcard would not cover Authorization (Fetch standard).
            asked = dict(scope["headers"]).get(b"access-control-request-headers", b"")
            await _answer(send, 204, None, [(b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
                                            (b"access-control-allow-headers", bytes(asked))])
            return
        grant = await self._grant(scope, send)
        if grant is None:
            return
        body, receive = await _buffered(receive)
        if body is None:
            await _answer(send, 413, {"error": "request_too_large"}, [])
            return
        needed = self._scope_for(body)
        if not needed <= grant.scopes:
            wanted = " ".join(sorted(self.required | needed | grant.scopes & set(SCOPES_SUPPORTED)))
            await self._refuse(send, 403, "insufficient_scope", "this tool needs the scope " + " ".join(sorted(needed)),
                               wanted)
            return
        await self.app(scope, receive, _with_cors(send))

    def metadata(self) -> dict[str, Any]:
        return {"resource": self.resource, "authorization_servers": [self.issuer],
                "scopes_supported": list(SCOPES_SUPPORTED), "bearer_methods_supported": ["header"],
                "resource_name": "MCP Console demo server"}

    async def _grant(self, scope: Scope, send: Send) -> Grant | None:
        """The token's grant, or None once the refusal has been sent."""
        token = _bearer(scope)
        if token is None:
            await self._refuse(send, 401, None, "a bearer token is required", " ".join(sorted(self.required)))
            return None
        try:
            grant = await check_token(token, self.keys, self.resource)
        except TokenRejected as exc:
            await self._refuse(send, 401, "invalid_token", str(exc), " ".join(sorted(self.required)))
            return None
        except IssuerUnreachable as exc:
            await _answer(send, 503, {"error": "temporarily_unavailable", "error_description": str(exc)}, [])
            return None
        if not self.required <= grant.scopes:
            await self._refuse(send, 403, "insufficient_scope", "the token lacks a scope this server needs",
                               " ".join(sorted(self.required | grant.scopes & set(SCOPES_SUPPORTED))))
            return None
        return grant

    def _scope_for(self, body: bytes) -> frozenset[str]:
        """The scopes the tools this body calls need beyond the server's own (empty for anything else)."""
        needed: set[str] = set()
        for tool in _called_tools(body):
            needed.update(self.tool_scopes.get(tool, "").split())
        return frozenset(needed)

    async def _refuse(self, send: Send, status: int, error: str | None, description: str, scopes: str) -> None:
        params = [f'error="{error}"', f'error_description="{_quotable(description)}"'] if error else []
        params += [f'resource_metadata="{self.metadata_url}"', f'scope="{scopes}"']
        challenge = "Bearer " + ", ".join(params)
        body = {"error": error or "unauthorized", "error_description": description}
        await _answer(send, status, body, [(b"www-authenticate", challenge.encode("latin-1"))])


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            kind, _, token = bytes(value).decode("latin-1").partition(" ")
            if kind.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _called_tools(body: bytes) -> Iterable[str]:
    """Names of the tools a JSON-RPC body calls; nothing when it is not JSON (the app answers that itself)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return []
    messages = parsed if isinstance(parsed, list) else [parsed]
    names = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                names.append(name)
    return names


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None past the bound), and a `receive` that hands the same body to the app."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY_BYTES:
            return None, receive
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return body, replay


def _with_cors(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *CORS]}
        await send(message)

    return sending


def _quotable(text: str) -> str:
    """A quoted-string's content (RFC 9110 §5.6.4) of plain ASCII: no quote, backslash or control character."""
    return "".join(c for c in text if 0x20 <= ord(c) < 0x7F and c not in '"\\')


async def _answer(send: Send, status: int, body: dict[str, Any] | None, headers: list[tuple[bytes, bytes]]) -> None:
    payload = json.dumps(body).encode() if body is not None else b""
    head = [*headers, *CORS]
    if body is not None:
        head += [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": payload})
