"""Eras: what differs between protocol revisions, behind one small strategy.

An era decides four things, and nothing else in the client needs to know which revision it speaks:

- the handshake (2026-07-28 has none: the first request is `server/discover`, which the session sends itself;
  2025-11-25 sends `initialize` then `notifications/initialized`);
- how a request's `_meta` is stamped (2026-07-28 repeats protocol version, client info and capabilities on every
  request; older revisions said them once, in `initialize`);
- the HTTP headers of a request (`MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*`);
- what happens to a JSON-RPC request *from* the server. 2026-07-28 has none (input comes back as MRTR
  `input_required` results), so such a frame is a violation to show, and nothing is sent back. Older revisions
  ask for elicitation, sampling and roots this way; their era hands the request to the caller's answerer.

A second era plugs in here (and in its transport); `app/console` and `app/web` do not change for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.mcp.headers import request_headers
from app.mcp.jsonrpc import Frame

MODERN_VERSION = "2026-07-28"
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


# The caller's side of a server request (the console opens a dialog; a script answers from a file).
Answerer = Callable[[Frame], Awaitable[ServerAnswer]]


class Era(Protocol):
    name: str
    protocol_version: str

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
