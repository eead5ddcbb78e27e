"""Eras: what differs between protocol revisions, behind one small strategy.

An era decides five things, and nothing else in the client needs to know which revision it speaks:

- the handshake (2026-07-28 has none: the first request is `server/discover`, which the session sends itself;
  2025-11-25 sends `initialize` then `notifications/initialized`);
- how a request's `_meta` is stamped (2026-07-28 repeats protocol version, client info and capabilities on every
  request; older revisions said them once, in `initialize`);
- the HTTP headers of a request (`MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*`);
- what happens to a JSON-RPC request *from* the server. 2026-07-28 has none (input comes back as MRTR
  `input_required` results), so such a frame is a violation to show, and nothing is sent back. Older revisions
  ask for elicitation, sampling and roots this way; their era hands the request to the caller's answerer;
- how a cancel reaches the server over HTTP. On 2026-07-28 closing the response stream *is* the cancel; on
  2025-11-25 a dropped stream is not one (the server may keep working and resume), so the client POSTs
  `notifications/cancelled` with the session id and then closes. stdio sends the notification in both eras.

A second era plugs in here (and in its transport); `app/console` and `app/web` do not change for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.mcp.headers import request_headers
from app.mcp.jsonrpc import Frame

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
# Versions a legacy handshake accepts from the server (it may negotiate down from what we offered).
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# Server requests a legacy era hands to the caller; each opens a dialog like an MRTR input request.
ASKED_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"


@dataclass(frozen=True, slots=True)
class ServerAnswer:
    """What goes back for a request from the server: a result, or a JSON-RPC error."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def message(self, request_id: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if self.error is not None:
            body["error"] = self.error
        else:
            body["result"] = self.result if self.result is not None else {}
        return body


@dataclass(frozen=True, slots=True)
class ServerRequestVerdict:
    """An era's decision about a request from the server: the warning to record, and whether to ask the caller."""

    warning: str | None
    ask_caller: bool
    refusal: ServerAnswer | None = None  # sent back at once when the caller is not asked


# The caller's side of a server request (the console opens a dialog; a script answers from a file). The second
# argument is the exchange key of the client request whose stream carried it, so the caller can nest the
# question under that request on its timeline.
Answerer = Callable[[Frame, str], Awaitable[ServerAnswer]]


class Era(Protocol):
    name: str
    protocol_version: str
    # 2026-07-28 requires `resultType` on every result; older revisions never sent it.
    requires_result_type: bool
    # True when closing an HTTP response stream does not cancel its request, so a cancel must be said
    # with notifications/cancelled (2025-11-25); False when closing the stream is the cancel (2026-07-28).
    cancel_by_notification: bool
    # True when the server may send requests (and withdraw them with notifications/cancelled): 2025-11-25.
    server_asks: bool

    def meta(self, client_info: dict[str, Any], capabilities: dict[str, Any], progress_token: Any,
             log_level: str | None) -> dict[str, Any]:
        """The `_meta` this era puts on a request (merged over the caller's own `_meta`)."""

    def headers(self, method: str, params: dict[str, Any], arg_headers: dict[str, str] | None) -> dict[str, str]:
        """The protocol headers of an HTTP request."""

    def on_server_request(self, frame: Frame) -> ServerRequestVerdict:
        """What to do with a JSON-RPC request the server sent on a stream."""


class ModernEra:
    """2026-07-28: no handshake, `_meta` on every request, MRTR instead of server→client requests."""

    name = "modern"
    requires_result_type = True
    cancel_by_notification = False
    server_asks = False

    def __init__(self, protocol_version: str = MODERN_VERSION) -> None:
        self.protocol_version = protocol_version

    def meta(self, client_info: dict[str, Any], capabilities: dict[str, Any], progress_token: Any,
             log_level: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {META_VERSION: self.protocol_version, META_INFO: client_info,
                                META_CAPS: capabilities}
        if progress_token is not None:
            meta["progressToken"] = progress_token
        if log_level:
            meta[META_LOG_LEVEL] = log_level
        return meta

    def headers(self, method: str, params: dict[str, Any], arg_headers: dict[str, str] | None) -> dict[str, str]:
        return request_headers(method, params, self.protocol_version, arg_headers)

    def on_server_request(self, frame: Frame) -> ServerRequestVerdict:
        # The revision leaves no room for these. Nothing is sent back (on HTTP there is no channel for it,
        # and the console never sends what nobody asked for); the warning puts the violation on the timeline.
        return ServerRequestVerdict(
            warning=f"server sent a request ({frame.method}); servers must not in {self.protocol_version}",
            ask_caller=False)


class LegacyEra:
    """2025-11-25 and older: `initialize` once, a session id, and requests from the server on its streams.

    `_meta` carries only the progress token (version, client info and capabilities were said in
    `initialize`); the log level is set with `logging/setLevel`, not per request. The protocol version
    starts as the one offered and becomes the negotiated one once `initialize` has answered.
    """

    name = "legacy"
    requires_result_type = False
    cancel_by_notification = True
    server_asks = True

    def __init__(self, protocol_version: str = LEGACY_VERSION) -> None:
        self.protocol_version = protocol_version
        self.negotiated = False  # no MCP-Protocol-Version header before initialize has answered

    def meta(self, client_info: dict[str, Any], capabilities: dict[str, Any], progress_token: Any,
             log_level: str | None) -> dict[str, Any]:
        return {"progressToken": progress_token} if progress_token is not None else {}

    def headers(self, method: str, params: dict[str, Any], arg_headers: dict[str, str] | None) -> dict[str, str]:
        # The 2025-11-25 transport wants the version header on every request *after* initialize; the
        # session id is the transport's (it learned it from the initialize response).
        if method == "initialize" or not self.negotiated:
            return {}
        return {"MCP-Protocol-Version": self.protocol_version}

    def negotiate(self, version: str) -> None:
        self.protocol_version = version
        self.negotiated = True

    def on_server_request(self, frame: Frame) -> ServerRequestVerdict:
        if frame.method == "ping":
            return ServerRequestVerdict(warning=None, ask_caller=False, refusal=ServerAnswer(result={}))
        if frame.method in ASKED_METHODS:
            # The refusal is the fallback when nobody is there to ask (a script without an answerer).
            return ServerRequestVerdict(warning=None, ask_caller=True, refusal=ServerAnswer(
                error={"code": -32601, "message": f"{frame.method}: this client has no one to ask"}))
        return ServerRequestVerdict(
            warning=f"server sent a request the console does not serve ({frame.method}); answered -32601",
            ask_caller=False,
            refusal=ServerAnswer(error={"code": -32601, "message": f"method not found: {frame.method}"}))
