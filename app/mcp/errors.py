"""The core's error tree, translated at the boundary from httpx, OSError and asyncio.

    McpError
    ├── TransportError          the bytes could not be moved
    │   ├── ConnectFailed       refused, unreachable, DNS, TLS
    │   ├── ProcessExited       the stdio server is gone
    │   ├── StreamLost          a response stream closed before its final response
    │   ├── SessionExpired      a 2025-11-25 server answers 404 to the session it handed out
    │   └── StreamTooLarge      we stopped reading a stream past max_stream_bytes
    ├── ProtocolViolation       bytes arrived but are not valid MCP (not JSON, not JSON-RPC, wrong shape)
    ├── RequestTimedOut         no final response within the deadline
    ├── RequestCancelled        the user cancelled the request
    └── RpcError                the server answered with a JSON-RPC error (possibly with an HTTP status)
"""

from __future__ import annotations

from typing import Any

# Named codes of the 2026-07-28 revision; shown next to the number on the timeline.
ERROR_NAMES: dict[int, str] = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
    -32020: "HeaderMismatch",
    -32021: "MissingRequiredClientCapability",
    -32022: "UnsupportedProtocolVersion",
    -32002: "Resource not found (legacy code)",
}


class McpError(Exception):
    """Base of every error the core raises."""


class TransportError(McpError):
    pass


class ConnectFailed(TransportError):
    pass


class ProcessExited(TransportError):
    pass


class StreamLost(TransportError):
    pass


class SessionExpired(TransportError):
    """HTTP 404 for a request carrying the session id: the server ended or forgot the session."""


def expired_note(session: str) -> str:
    """What a 404 to a request in a 2025-11-25 session means, and what to do (the id cut: it is the server's)."""
    shown = repr(session[:80] + ("…" if len(session) > 80 else ""))
    return (f"HTTP 404: the server no longer knows session {shown} (it expired or was ended); "
            "reconnect to start a new one")


class StreamTooLarge(TransportError):
    """The console itself stopped reading a response stream: it passed the per-stream bound."""


class ProtocolViolation(McpError):
    pass


class RequestTimedOut(McpError):
    pass


class RequestCancelled(McpError):
    pass


class RpcError(McpError):
    """A JSON-RPC error object from the server, with the HTTP status when there was one."""

    def __init__(self, code: int, message: str, data: Any = None, http_status: int | None = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status
        super().__init__(self.describe())

    @property
    def name(self) -> str | None:
        return ERROR_NAMES.get(self.code)

    def describe(self) -> str:
        label = f"{self.code}" + (f" {self.name}" if self.name else "")
        status = f" (HTTP {self.http_status})" if self.http_status else ""
        return f"{label}: {self.message}{status}"


class AuthChallenged(TransportError):
    """HTTP 401 (or 403 with `insufficient_scope`) from an MCP endpoint: it asks for an OAuth token, or a better one.

    Raised by the HTTP transport before the body is read as JSON-RPC (a 401's body is no MCP message: reading it
    as one gave a false `frame.malformed`). `challenge` is the parsed `WWW-Authenticate` (app/mcp/oauth/challenge.py);
    the client hands it to its authorizer, when it has one, and sends the request again with the new token."""

    def __init__(self, message: str, challenge: Any, exchange: str | None = None, generation: int = 0) -> None:
        self.challenge = challenge
        self.exchange = exchange
        self.generation = generation  # the transport's bearer_version the refused request went with
        super().__init__(message)
