"""The doctor's protocol steps: `server/discover`, `initialize`, and the era the console would choose.

Nothing of the protocol is written here: the requests go through the console's own client and transports
(app/mcp/client.py, http.py, stdio.py), `initialize` is built and read by app/mcp/handshake.py, and the era is
what the connect machine (app/mcp/connecting.py) decides when fed these very replies, as the console feeds it.
"""

from __future__ import annotations

from typing import Any

from app.mcp.client import ClientConfig, McpClient, Reply
from app.mcp.connecting import (
    CHOICES,
    Connected,
    ConnectMachine,
    Failed,
    Initialize,
    NotifyInitialized,
    Probe,
    StartClient,
    unsupported_version,
)
from app.mcp.doctor.checks import Check, Visit, cut
from app.mcp.era import LEGACY_VERSION, Era, LegacyEra, ModernEra
from app.mcp.errors import AuthChallenged, ConnectFailed, McpError, ProcessExited
from app.mcp.handshake import HandshakeFailed, discover_not_served, initialize_params, negotiated_from, send_initialized
from app.mcp.http import HttpTransport
from app.mcp.stdio import StdioTransport
from app.mcp.transport import Transport

CLIENT_INFO = {"name": "mcp-console-doctor", "version": "0.1.0"}
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}, "roots": {}}
DISCOVER, INITIALIZE, ERA = "server/discover", "initialize", "era chosen"


async def new_client(visit: Visit, era: Era) -> McpClient:
    """A client of the console's kind on a fresh transport (stdio: a new process), started; kept to be closed."""
    transport: Transport
    if visit.stdio:
        transport = StdioTransport(visit.argv, visit.record, env=visit.env, cwd=visit.cwd)
    else:
        assert visit.http is not None
        transport = HttpTransport(visit.url, visit.http, visit.record, visit.headers)
    client = McpClient(transport, ClientConfig(client_info=CLIENT_INFO, capabilities=lambda: CAPABILITIES, era=era,
                                               idle_timeout_s=visit.timeout_s, max_s=visit.timeout_s * 2,
                                               deadlines_named=("--timeout", "--timeout"),
                                               first_key=sum(c.next_key_number - 1 for c in visit.clients) + 1))
    visit.clients.append(client)
    await transport.start()
    return client


async def first_request(visit: Visit) -> Reply:
    """`server/discover`, the first request a console on Auto sends (ConnectFailed: the transport did not start)."""
    client = visit.first = await new_client(visit, ModernEra())
    visit.discover = reply = await client.request("server/discover", {})
    visit.discover_alive = getattr(client.transport, "alive", True)
    return reply


async def legacy_initialize(visit: Visit) -> Reply:
    """The 2025-11-25 handshake on a client of its own, once per run: `initialize`, then `notifications/initialized`
    when the answer opens a session."""
    if visit.initialize is not None:
        return visit.initialize
    client = await new_client(visit, LegacyEra())
    params = initialize_params(CLIENT_INFO, CAPABILITIES, LEGACY_VERSION)
    visit.initialize = reply = await client.request("initialize", params)
    try:
        visit.negotiated = negotiated_from(reply, LEGACY_VERSION)
    except HandshakeFailed:
        return reply
    visit.notified = await send_initialized(client, visit.negotiated.protocol_version)
    return reply


def server_named(result: dict[str, Any] | None) -> str:
    meta = (result or {}).get("_meta")
    info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
    info = info if isinstance(info, dict) else (result or {}).get("serverInfo")
    if not isinstance(info, dict):
        return "a server that gives no name"
    return cut(f"{info.get('name', '?')} {info.get('version', '')}".strip(), 120)


def error_fix(error: McpError | None) -> str:
    if isinstance(error, AuthChallenged):
        return "The server wants a token: give one (--header 'Authorization: Bearer …') or connect with OAuth."
    if isinstance(error, ProcessExited):
        return "The process exited: run the command in a terminal to see why (its stderr is above)."
    if isinstance(error, ConnectFailed):
        return "Nothing answered: check the earlier steps (the address, the port, the process)."
    return "Read the server's answer above; a server that speaks MCP answers this request with a result."


async def discover(visit: Visit) -> Check:
    try:
        reply = visit.discover or await first_request(visit)
    except McpError as exc:
        return Check(DISCOVER, "fail", cut(f"could not send it: {exc}"), error_fix(exc))
    if reply.ok:
        versions = (reply.result or {}).get("supportedVersions")
        said = ", ".join(v for v in versions if isinstance(v, str)) if isinstance(versions, list) else "none named"
        return Check(DISCOVER, "ok", cut(f"answered by {server_named(reply.result)}; supported versions: {said}"))
    supported = unsupported_version(reply)
    if supported is not None:
        return Check(DISCOVER, "warn", cut(f"UnsupportedProtocolVersion: the server speaks "
                                           f"{', '.join(supported) or 'no version it names'}"))
    why = discover_not_served(reply, visit.stdio)
    if why is not None:
        return Check(DISCOVER, "warn", cut(f"not served ({why}): a server of 2025-11-25 or older, which the console "
                                           "reaches with initialize instead"))
    return Check(DISCOVER, "fail", cut(f"failed: {reply.error}"), error_fix(reply.error))


async def initialize(visit: Visit) -> Check:
    try:
        reply = await legacy_initialize(visit)
    except McpError as exc:
        return Check(INITIALIZE, "fail", cut(f"could not send it: {exc}"), error_fix(exc))
    negotiated = visit.negotiated
    if negotiated is not None and visit.notified is None:
        return Check(INITIALIZE, "ok", cut(f"{negotiated.note}; answered by {server_named(reply.result)}"))
    if negotiated is not None:
        return Check(INITIALIZE, "fail", cut(f"initialize answered, but notifications/initialized failed: "
                                             f"{visit.notified}"),
                     "The server must accept notifications/initialized (HTTP 202) to open a 2025-11-25 session.")
    problem = f"initialize failed: {reply.error}"
    try:
        negotiated_from(reply, LEGACY_VERSION)
    except HandshakeFailed as exc:
        problem = str(exc)
    if visit.discover is not None and visit.discover.ok:
        return Check(INITIALIZE, "warn", cut(f"{problem}: the server speaks 2026-07-28 only, which needs no "
                                             "initialize (the console speaks it)"))
    return Check(INITIALIZE, "fail", cut(problem),
                 "The server answered neither server/discover nor initialize as an MCP server does: check that the "
                 "URL or command is the MCP server's, and read its answers above.")


async def era(visit: Visit) -> Check:
    """Feed the connect machine the replies the steps above got, as the console's connect feeds it its own."""
    machine = ConnectMachine(visit.era if visit.era in CHOICES else "auto", CLIENT_INFO, CAPABILITIES,
                             stdio=visit.stdio)
    command = machine.start()
    probes = 0
    try:
        for _ in range(12):  # a connect takes at most: start, probe, probe again, start, initialize, notify
            if isinstance(command, StartClient):
                command = machine.started()
            elif isinstance(command, Probe):
                probes += 1
                reply = visit.discover if probes == 1 and visit.discover is not None else None
                if reply is None:  # the server refused the version once: asked again, as the console would
                    client = visit.first if visit.first is not None and visit.discover_alive else None
                    reply = await client.request("server/discover", {}) if client else await first_request(visit)
                command = machine.probed(reply, transport_alive=visit.discover_alive)
            elif isinstance(command, Initialize):
                command = machine.initialized(await legacy_initialize(visit))
            elif isinstance(command, NotifyInitialized):
                command = machine.notified(visit.notified)
            else:
                break
    except McpError as exc:
        return Check(ERA, "fail", cut(f"the connect could not go on: {exc}"), error_fix(exc))
    if isinstance(command, Connected):
        revision = "no handshake" if command.era == "modern" else "the initialize handshake"
        return Check(ERA, "ok", cut(f"{command.protocol_version} ({revision}): {command.reason}"))
    if isinstance(command, Failed):
        return Check(ERA, "fail", cut(command.message),
                     "The console settles no revision with this server: see the server/discover and initialize "
                     "steps above for what it answered.")
    return Check(ERA, "fail", "the connect did not settle", "Report this: the connect machine did not end.")
