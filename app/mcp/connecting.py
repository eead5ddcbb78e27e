"""Connecting to a target, sans I/O: which era it speaks, the probe, the fallback and the 2025-11-25 handshake.

The machine takes what happened (the client started or not, the probe's reply, initialize's reply, whether
`notifications/initialized` went out) and answers with the next thing to do: start a client speaking an era,
send the probe, send `initialize`, send `notifications/initialized`, or stop, connected or failed. It sends
nothing and records nothing itself: the console's session and the command line drive the same machine, each
recording the requests its own way, so both reach the same era for the same reasons and say them in the same
words (`notes`, drained by the driver after each step, are what the timeline shows as notices).

The rule it keeps:
- `legacy` and `sse-2024` go straight to `initialize` (the older HTTP+SSE transport carries 2025-11-25 messages);
- `modern` and `auto` send `server/discover`: its answer is the server's description of itself (both need it);
- UnsupportedProtocolVersion (-32022) listing 2026-07-28 sends the probe again, once (SEP-2575: a client retries
  with a version the server supports); on `auto`, one listing only older revisions moves to `initialize`;
- a refusal that says "I do not serve server/discover" (`discover_not_served`) moves `auto` to `initialize`,
  on a fresh transport when the old one died of the probe (a stdio server that exits on an unknown method);
- anything else ends the connect as failed with what came back (`modern` never falls back: it was chosen).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from app.mcp.client import Reply
from app.mcp.era import LEGACY_VERSION, LEGACY_VERSIONS, MODERN_VERSION
from app.mcp.errors import RpcError
from app.mcp.handshake import HandshakeFailed, Negotiated, discover_not_served, initialize_params, negotiated_from

EraName = Literal["modern", "legacy"]
CHOICES = ("auto", "modern", "legacy", "sse-2024")


@dataclass(frozen=True, slots=True)
class StartClient:
    """Start a transport and a client speaking `era`; report with `started`. `keep_transport`: the transport
    that carried the probe is still alive, so only the client's era changes (an HTTP target keeps its pool)."""

    era: EraName
    keep_transport: bool = False


@dataclass(frozen=True, slots=True)
class Probe:
    """Send `server/discover` with empty params; report its reply with `probed`."""


@dataclass(frozen=True, slots=True)
class Initialize:
    """Send `initialize` with these params; report its reply with `initialized`."""

    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NotifyInitialized:
    """Take `protocol_version` as the session's version, then send `notifications/initialized`; report with
    `notified`."""

    protocol_version: str


@dataclass(frozen=True, slots=True)
class Connected:
    era: EraName
    protocol_version: str
    chosen: str
    reason: str
    discovered: dict[str, Any]  # the discover answer, or initialize's in that shape (see discover_shape)
    probe: str | None = None  # the exchange key of the probe, when one ran
    negotiated: Negotiated | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    message: str


Command = StartClient | Probe | Initialize | NotifyInitialized | Connected | Failed


@dataclass(frozen=True, slots=True)
class Note:
    level: Literal["info", "warning"]
    message: str
    signal: str | None = None


UNSUPPORTED_PROTOCOL_VERSION = -32022


def unsupported_version(reply: Reply) -> list[str] | None:
    """The versions an UnsupportedProtocolVersion error (-32022) says the server speaks; None for any other reply."""
    error = reply.error
    if not isinstance(error, RpcError) or error.code != UNSUPPORTED_PROTOCOL_VERSION:
        return None
    data = error.data if isinstance(error.data, dict) else {}
    listed = data.get("supported")
    return [v for v in listed if isinstance(v, str)][:20] if isinstance(listed, list) else []


def discover_shape(negotiated: Negotiated) -> dict[str, Any]:
    """A legacy initialize answer in the shape server/discover has, so whatever reads it reads one shape."""
    result: dict[str, Any] = {"supportedVersions": [negotiated.protocol_version],
                              "capabilities": negotiated.capabilities,
                              "_meta": {"io.modelcontextprotocol/serverInfo": negotiated.server_info}}
    if negotiated.instructions is not None:
        result["instructions"] = negotiated.instructions
    return result


@dataclass(slots=True)
class ConnectMachine:
    chosen: str
    client_info: dict[str, Any]
    capabilities: dict[str, Any]
    stdio: bool = False  # a stdio server breaking off on the probe is an older one; an HTTP stream breaking is not
    notes: list[Note] = field(default_factory=list)
    _step: str = "new"
    _why: str = ""
    _probe: str | None = None
    _negotiated: Negotiated | None = None
    _retried: str = ""  # why the probe was sent again, once (UnsupportedProtocolVersion listing ours)

    def __post_init__(self) -> None:
        if self.chosen not in CHOICES:
            raise ValueError(f"era {self.chosen!r} is not one of {', '.join(CHOICES)}")

    @property
    def legacy_only(self) -> bool:
        return self.chosen in ("legacy", "sse-2024")

    def start(self) -> Command:
        self._step = "starting"
        return StartClient("legacy" if self.legacy_only else "modern")

    def started(self, problem: str | None = None) -> Command:
        """The client is up, or `problem` says why it could not start."""
        if problem is not None:
            return self._end(Failed(problem))
        if self.legacy_only:
            self._why = "forced on this target"
            return self._initialize()
        if self._step == "falling back":
            return self._initialize()
        self._step = "probing"
        return Probe()

    def probed(self, reply: Reply, transport_alive: bool = True) -> Command:
        """The probe's reply; `transport_alive` False when the transport died of it (a stdio server that exited)."""
        self._probe = reply.key
        if reply.ok and reply.result is not None:
            reason = "server/discover answered" if self.chosen == "auto" else "forced on this target"
            if self._retried:
                reason += f" (after {self._retried})"
            return self._end(Connected("modern", MODERN_VERSION, self.chosen, reason, reply.result, reply.key))
        supported = unsupported_version(reply)
        if supported is not None:
            # UnsupportedProtocolVersion (-32022) names what the server speaks: the client retries with one it
            # speaks too (2026-07-28, once), or, on Auto, takes the older revision the server lists.
            if MODERN_VERSION in supported and not self._retried:
                self._retried = f"the server refused the version once, listing {', '.join(supported)}"
                self.notes.append(Note("info", f"server/discover: {self._retried}; asking again with "
                                               f"{MODERN_VERSION}", "era_probe"))
                return Probe()
            older = [v for v in supported if v in LEGACY_VERSIONS]
            if self.chosen == "auto" and older and MODERN_VERSION not in supported:
                return self._fall_back(f"UnsupportedProtocolVersion, the server speaks {', '.join(older)}",
                                       transport_alive)
            return self._end(Failed(f"server/discover failed: {reply.error} (the server speaks "
                                    f"{', '.join(supported) or 'no version it names'})"))
        why = discover_not_served(reply, self.stdio) if self.chosen == "auto" else None
        if why is None:
            return self._end(Failed(f"server/discover failed: {reply.error}"))
        return self._fall_back(why, transport_alive)

    def _fall_back(self, why: str, transport_alive: bool) -> Command:
        self.notes.append(Note("info", f"probe: server/discover not served ({why}); falling back to 2025-11-25 "
                                       "(initialize)", "era_probe"))
        self._why = f"probe refused: server/discover not served ({why})"
        self._step = "falling back"
        return StartClient("legacy", keep_transport=transport_alive)

    def _initialize(self) -> Command:
        self._step = "initializing"
        return Initialize(initialize_params(self.client_info, self.capabilities, LEGACY_VERSION))

    def initialized(self, reply: Reply) -> Command:
        try:
            self._negotiated = negotiated_from(reply, LEGACY_VERSION)
        except HandshakeFailed as exc:
            return self._end(Failed(str(exc)))
        self._step = "notifying"
        return NotifyInitialized(self._negotiated.protocol_version)

    def notified(self, problem: str | None = None) -> Command:
        """`notifications/initialized` went out, or `problem` says why it could not."""
        if problem is not None:
            return self._end(Failed(f"notifications/initialized failed: {problem}"))
        negotiated = self._negotiated
        assert negotiated is not None, "notified before initialized"
        return self._end(Connected("legacy", negotiated.protocol_version, self.chosen,
                                   f"{self._why}; initialize: {negotiated.note}", discover_shape(negotiated),
                                   self._probe, negotiated))

    def take_notes(self) -> list[Note]:
        notes, self.notes = self.notes, []
        return notes

    def _end(self, command: Connected | Failed) -> Command:
        self._step = "ended"
        return command
