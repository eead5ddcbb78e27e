"""The 2025-11-25 handshake, and how Auto tells a legacy server from a modern one.

`initialize` offers our version, client info and capabilities; the server answers with the version it
picked (possibly older), its info, capabilities and instructions; `notifications/initialized` then opens
the session. Nothing here records anything: the console and the CLI drive the handshake from the connect machine
(app/mcp/connecting.py), each recording its requests its own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.mcp.client import McpClient, Reply
from app.mcp.era import LEGACY_VERSION, LEGACY_VERSIONS, LegacyEra
from app.mcp.errors import AuthChallenged, McpError, ProcessExited, RpcError, StreamLost

# The HTTP statuses and JSON-RPC errors with which a server says "I do not serve server/discover".
NOT_SERVED_STATUSES = frozenset({400, 404, 405})
METHOD_NOT_FOUND = -32601
NOT_INITIALIZED = "not initialized"
NOT_MCP = "does not look like an MCP endpoint"  # the HTTP transport's words for a first answer that is no MCP


@dataclass(frozen=True, slots=True)
class Negotiated:
    """What `initialize` settled: the version, and the server's own description of itself."""

    protocol_version: str
    server_info: dict[str, Any]
    capabilities: dict[str, Any]
    instructions: str | None
    note: str  # why this version (shown in the session header)


class HandshakeFailed(Exception):
    """`initialize` got no usable answer; the message says what came back."""


def initialize_params(client_info: dict[str, Any], capabilities: dict[str, Any],
                      version: str = LEGACY_VERSION) -> dict[str, Any]:
    caps = dict(capabilities)
    if isinstance(caps.get("roots"), dict):
        # Roots are said once in a legacy session, so a change must be announced: the client promises
        # notifications/roots/list_changed (2026-07-28 removed it; its requests carry the roots each time).
        caps["roots"] = {**caps["roots"], "listChanged": True}
    return {"protocolVersion": version, "capabilities": caps, "clientInfo": client_info}


def negotiated_from(reply: Reply, offered: str) -> Negotiated:
    """Read an initialize reply; raise HandshakeFailed when it cannot open a session."""
    if not reply.ok or reply.result is None:
        raise HandshakeFailed(f"initialize failed: {reply.error}")
    result = reply.result
    version = result.get("protocolVersion")
    if not isinstance(version, str) or version not in LEGACY_VERSIONS:
        said = "no protocolVersion" if version is None else f"protocol version {_short(version)}"
        raise HandshakeFailed(f"initialize answered {said}, which this console does not speak (it speaks "
                              f"{', '.join(LEGACY_VERSIONS)})")
    info, caps = result.get("serverInfo"), result.get("capabilities")
    instructions = result.get("instructions")
    note = f"offered {offered}; the server chose {version}" if version != offered else f"{version} as offered"
    return Negotiated(protocol_version=version, server_info=info if isinstance(info, dict) else {},
                      capabilities=caps if isinstance(caps, dict) else {},
                      instructions=instructions if isinstance(instructions, str) else None, note=note)


async def initialize(client: McpClient, version: str = LEGACY_VERSION) -> Negotiated:
    """The handshake on its own, on a started client whose era is a LegacyEra (scripts and tests; a connect goes
    through app/mcp/connecting.py, which orders the same two steps): `initialize`, then `send_initialized`."""
    params = initialize_params(client.config.client_info, client.config.capabilities(), version)
    negotiated = negotiated_from(await client.request("initialize", params), version)
    problem = await send_initialized(client, negotiated.protocol_version)
    if problem is not None:
        raise HandshakeFailed(f"notifications/initialized failed: {problem}")
    return negotiated


async def send_initialized(client: McpClient, version: str) -> str | None:
    """Take `version` as the session's (the era then names it on every request) and open the session with
    `notifications/initialized`; what went wrong, or None."""
    era = client.config.era
    assert isinstance(era, LegacyEra), "the 2025-11-25 handshake needs a client of that era"
    era.negotiate(version)
    try:
        await client.notify("notifications/initialized")
    except McpError as exc:
        return str(exc)
    return None


def discover_not_served(reply: Reply, stdio: bool = True) -> str | None:
    """Why a server/discover reply says "legacy server" (None when it does not say that).

    The signals: HTTP 400/404/405, JSON-RPC -32601, "Server not initialized" (server-everything), or
    a stdio server that broke off (an error or exit instead of an answer). A reply that reached no server
    at all (connection refused) is no signal: falling back would only fail again, less clearly; nor is an HTTP
    answer stream that broke (`stdio` False: a head too long, a reset), which no older server says so.
    """
    error = reply.error
    if error is None or isinstance(error, AuthChallenged):
        return None  # a refusal for want of a token says nothing of the revision: the flow's failure is the answer
    if isinstance(error, RpcError):
        said = f"JSON-RPC {error.code} {error.message!r}"
        if error.http_status is not None:
            said = f"HTTP {error.http_status}, {said}"
        served = error.code == METHOD_NOT_FOUND or NOT_INITIALIZED in error.message.lower() \
            or error.http_status in NOT_SERVED_STATUSES
        return said if served else None
    text = str(error)
    if NOT_MCP in text:
        return None  # an HTML page or the like: no MCP server of any era lives there, so say that instead
    status = _status_in(text)
    if status is not None:
        return f"HTTP {status} ({text})"
    if NOT_INITIALIZED in text.lower():
        return text
    if isinstance(error, ProcessExited) or (stdio and isinstance(error, StreamLost)):
        return f"stdio error ({text})"
    return None


def _status_in(text: str) -> int | None:
    """The HTTP status a transport error names ("HTTP 404 Not Found from the server: …")."""
    for status in NOT_SERVED_STATUSES:
        if f"HTTP {status}" in text:
            return status
    return None


def _short(value: object, limit: int = 80) -> str:
    """A server's value as a message shows it: repr'd, and cut (a megabyte of version must not be the status)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
