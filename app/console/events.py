"""Typed timeline events: one record per kind, serialized explicitly, with a version and loaders of older ones.

A session is the fold of these records (`app.console.state.apply`). Each record is a dataclass
whose `kind` is a Literal; `to_data()` writes every field, `from_data()` consumes every key (an
unknown key means a newer writer, so loading says so instead of dropping it). `docs/events.md`
documents every kind; a test keeps the two in step. Version 1 rows (untyped payloads, one
"session" kind with five shapes) are migrated on load by `migrate_v1`; version 2 rows (an operation recorded as a
snapshot of every change) by `migrate_v2`. Version 3 records an operation as small transitions (`OpStarted` …
`OpEnded`), folded into the operation by `apply`.
"""

from __future__ import annotations

import json
import json.encoder
import math
import time
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar, cast

EVENT_VERSION = 3
Json = dict[str, Any]
R = TypeVar("R", bound="Record")


_FIELDS: dict[type[Any], tuple[tuple[str, ...], frozenset[str], frozenset[str]]] = {}


def _fields(cls: type[Any]) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """(names, as a set, the required ones) of a record's data fields, worked out once per class:
    `dataclasses.fields()` is slow on a hot path (every event stored, read, exported or imported)."""
    found = _FIELDS.get(cls)
    if found is None:
        data = [f for f in fields(cls) if f.name != "kind"]
        names = tuple(f.name for f in data)
        required = frozenset(f.name for f in data if f.default is MISSING and f.default_factory is MISSING)
        found = _FIELDS[cls] = (names, frozenset(names), required)
    return found


def _names(cls: type[Any]) -> tuple[str, ...]:
    return _fields(cls)[0]


class Record:
    """Shared serialization: every dataclass field but `kind` is a key of the data object."""

    kind: Any
    __slots__ = ()
    KIND: ClassVar[str]

    def to_data(self) -> Json:
        return {name: getattr(self, name) for name in _names(type(self))}

    @classmethod
    def check(cls, data: Json) -> None:
        """What `from_data` checks, without building the record (an import stores most events as their text)."""
        _, names, required = _fields(cls)
        keys = data.keys()
        if missing := required - keys:
            raise ValueError(f"{cls.KIND} event without its {sorted(missing)[0]!r} field")
        if unknown := keys - names:  # every key consumed: an unknown key means a newer writer, so say so
            raise ValueError(f"unknown keys in {cls.KIND} event: {sorted(unknown)}")

    @classmethod
    def from_data(cls: type[R], data: Json) -> R:
        cls.check(data)
        return cls(**data)


@dataclass(slots=True)
class SessionCreated(Record):
    KIND = "session_created"
    kind: Literal["session_created"] = field(default="session_created", init=False)
    target: Json = field(default_factory=dict)
    capabilities: Json = field(default_factory=dict)
    roots: list[Json] = field(default_factory=list)
    read_only: bool = False


@dataclass(slots=True)
class StatusChanged(Record):
    KIND = "status"
    kind: Literal["status"] = field(default="status", init=False)
    status: str = "new"
    message: str = ""
    since: float | None = None  # wall clock of the change (the badge says "unreachable since …")


@dataclass(slots=True)
class Discovered(Record):
    KIND = "discovered"
    kind: Literal["discovered"] = field(default="discovered", init=False)
    result: Json = field(default_factory=dict)


@dataclass(slots=True)
class ListsRefreshed(Record):
    KIND = "lists_refreshed"
    kind: Literal["lists_refreshed"] = field(default="lists_refreshed", init=False)
    only: str | None = None
    lists: dict[str, list[Json]] = field(default_factory=dict)  # the lists fetched, items included
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class CapabilitiesChanged(Record):
    KIND = "capabilities_changed"
    kind: Literal["capabilities_changed"] = field(default="capabilities_changed", init=False)
    capabilities: Json = field(default_factory=dict)
    saved: bool = False  # True when the person saved the settings form (the form says "saved")


@dataclass(slots=True)
class RootsChanged(Record):
    KIND = "roots_changed"
    kind: Literal["roots_changed"] = field(default="roots_changed", init=False)
    roots: list[Json] = field(default_factory=list)
    saved: bool = True


@dataclass(slots=True)
class RequestSettingsChanged(Record):
    KIND = "request_settings_changed"
    kind: Literal["request_settings_changed"] = field(default="request_settings_changed", init=False)
    log_level: str = ""
    progress: bool = True
    auto_refresh: bool = True
    idle_timeout_s: float | None = None  # None: the console's setting (request_idle_timeout_s)
    max_s: float | None = None           # None: the console's setting (request_max_s)


@dataclass(slots=True)
class ExchangeStarted(Record):
    KIND = "exchange_started"
    kind: Literal["exchange_started"] = field(default="exchange_started", init=False)
    key: str = ""
    method: str = ""
    name: Any = None
    id: Any = None
    status: str = "pending"
    op: str | None = None
    round: int | None = None
    replay_of: str | None = None


@dataclass(slots=True)
class ExchangeFinished(Record):
    KIND = "exchange_finished"
    kind: Literal["exchange_finished"] = field(default="exchange_finished", init=False)
    key: str = ""
    status: str = "ok"
    duration_ms: float | None = None
    cancelled_by: str | None = None
    ttfb_ms: float | None = None
    bytes_in: int = 0
    http_status: int | None = None
    error: str | None = None
    error_code: Any = None
    warnings: list[str] = field(default_factory=list)
    result_type: str | None = None
    notifications: int = 0
    op: str | None = None
    round: int | None = None


@dataclass(slots=True)
class Wire(Record):
    KIND = "wire"
    kind: Literal["wire"] = field(default="wire", init=False)
    direction: str = "in"
    raw: str = ""
    frame_kind: str | None = None
    problem: str | None = None
    exchange: str | None = None
    http_status: int | None = None
    headers: list[list[str]] | None = None
    note: str | None = None
    wall: float = 0.0
    url: str | None = None  # where a request went, when not to the target's URL (the 2024-11-05 endpoint)

    def data_text(self) -> str | None:
        """The data as compact JSON, exactly as `json.dumps(self.to_data(), separators=(",", ":"))` writes it,
        without building the dict or an encoder: made once per frame, 17,000 times a second in a flood, where
        the generic path cost about as much as parsing the frame. None for a value it does not spell (the
        caller then takes the generic path)."""
        status, wall = self.http_status, self.wall
        if (status is not None and type(status) is not int) or type(wall) is not float or not math.isfinite(wall):
            return None
        headers = "null" if self.headers is None else json.dumps(self.headers, separators=(",", ":"))
        # `_text` spelled out for each field: six calls a frame were a fifth of this.
        spell, direction, raw, kind, problem, exchange, note, url = \
            _ascii_string, self.direction, self.raw, self.frame_kind, self.problem, self.exchange, self.note, self.url
        return (f'{{"direction":{"null" if direction is None else spell(direction)},'
                f'"raw":{"null" if raw is None else spell(raw)},'
                f'"frame_kind":{"null" if kind is None else spell(kind)},'
                f'"problem":{"null" if problem is None else spell(problem)},'
                f'"exchange":{"null" if exchange is None else spell(exchange)},'
                f'"http_status":{"null" if status is None else int.__repr__(status)},'
                f'"headers":{headers},"note":{"null" if note is None else spell(note)},'
                f'"wall":{_wall_text(wall)},"url":{"null" if url is None else spell(url)}}}')


_WALLS: dict[float, str] = {}  # the last wall times spelled: the frames of one read share theirs


def _wall_text(wall: float) -> str:
    """`float.__repr__(wall)`, remembered for the few latest: a float's repr is half of a frame's row, and the frames
    of one read carry one time. Only for positive times (0.0 and -0.0 are equal keys, spelled apart)."""
    text = _WALLS.get(wall) if wall > 0.0 else None
    if text is None:
        text = float.__repr__(wall)
        if wall > 0.0:
            if len(_WALLS) >= 64:
                _WALLS.clear()
            _WALLS[wall] = text
    return text


# The C function json.dumps uses for a str (with ensure_ascii): the same escapes, lone surrogates included.
_ascii_string: Callable[[str], str] = json.encoder.encode_basestring_ascii


@dataclass(slots=True)
class Notice(Record):
    KIND = "notice"
    kind: Literal["notice"] = field(default="notice", init=False)
    level: str = "info"
    message: str = ""
    raw: str | None = None
    signal: str | None = None  # what the notice means, for code: e.g. "store_quota"


@dataclass(slots=True)
class Stderr(Record):
    """A batch of stderr lines (one event per window, never one per line), with the count dropped so far and
    what a terminal shows now of the line not yet ended (a progress bar redrawn with \r; "" for none)."""

    KIND = "stderr"
    kind: Literal["stderr"] = field(default="stderr", init=False)
    lines: list[str] = field(default_factory=list)
    dropped: int = 0
    current: str = ""


# The fields of an operation's (and a server request's) event that hold what a person typed into an answer the
# console refused (`drafts`, so the dialog shows it again; the server never got it) and the console's words about
# it (`errors`, which may quote it): for those who may answer only. No entry, viewer or masked file carries them.
TYPED_ANSWER_FIELDS = ("drafts", "errors")


@dataclass(slots=True)
class OperationSnapshot(Record):
    """A full snapshot of an operation, as versions 1 and 2 recorded every change (version 2's kind "operation").

    Version 3 writes transitions (`OpStarted` … `OpEnded`); a snapshot is read from an older log or file only, and
    folds as the whole operation at that point."""

    KIND = "op_snapshot"
    kind: Literal["op_snapshot"] = field(default="op_snapshot", init=False)
    key: str = ""
    op: str = ""
    method: str = ""
    name: Any = None
    status: str = "running"
    message: str = ""
    started: float = 0.0
    rounds: list[Json] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    required_capabilities: Json | None = None
    replay_of: str | None = None
    params: Json = field(default_factory=dict)
    pending_requests: Json = field(default_factory=dict)
    errors: Json = field(default_factory=dict)
    drafts: Json = field(default_factory=dict)
    final: Json | None = None
    validation: Json | None = None
    log_level: str | None = None


# An operation's life as transitions (version 3). Each names its operation (`op`) and its timeline entry (`key`,
# "op-<op>", which the store indexes them by); the fold (`state.apply`) builds the operation from them.

@dataclass(slots=True)
class OpStarted(Record):
    """An operation began: what it asks (its original params, without _meta) and its first round, sent."""

    KIND = "op_started"
    kind: Literal["op_started"] = field(default="op_started", init=False)
    key: str = ""
    op: str = ""
    method: str = ""
    name: Any = None
    params: Json = field(default_factory=dict)
    started: float = 0.0
    round: Json = field(default_factory=dict)  # the first round (`Round.to_data`)
    replay_of: str | None = None
    log_level: str | None = None


@dataclass(slots=True)
class OpRound(Record):
    """A round was sent (a retry with the answers, a requestState-only retry, a retry after enabling
    capabilities), or the server answered it asking for input (`pending_requests`): the round as it now stands."""

    KIND = "op_round"
    kind: Literal["op_round"] = field(default="op_round", init=False)
    key: str = ""
    op: str = ""
    round: Json = field(default_factory=dict)
    status: str = "running"         # the operation's: running | awaiting_input
    message: str = ""
    pending_requests: Json = field(default_factory=dict)  # input key → input request (when it asks)


@dataclass(slots=True)
class OpAnswered(Record):
    """One input request of the round was answered; the retry carries the round's answers to the server."""

    KIND = "op_answered"
    kind: Literal["op_answered"] = field(default="op_answered", init=False)
    key: str = ""
    op: str = ""
    round: int = 0
    input: str = ""
    at: float = 0.0  # wall clock (the round's human time ends at its last answer)
    value: Any = None  # the answer, kept so a restart before the retry still has it (a masked file leaves it out)


@dataclass(slots=True)
class OpRefused(Record):
    """An answer did not pass the console's checks: why, and what was typed, so the dialog shows it again."""

    KIND = "op_refused"
    kind: Literal["op_refused"] = field(default="op_refused", init=False)
    key: str = ""
    op: str = ""
    round: int = 0
    input: str = ""
    errors: Json = field(default_factory=dict)   # field → message
    drafts: Json = field(default_factory=dict)   # field → what was typed


@dataclass(slots=True)
class OpEnded(Record):
    """The operation is over: complete, tool_error, error, cancelled, capped or abandoned."""

    KIND = "op_ended"
    kind: Literal["op_ended"] = field(default="op_ended", init=False)
    key: str = ""
    op: str = ""
    status: str = "complete"
    message: str = ""
    round: Json | None = None       # the last round as its reply left it (None: it ended without one)
    final: Json | None = None       # the last reply (`reply_json`)
    validation: Json | None = None  # structuredContent checked against outputSchema
    required_capabilities: Json | None = None  # after -32021: what "enable and retry" merges


OP_RECORDS: tuple[type[Record], ...] = (OperationSnapshot, OpStarted, OpRound, OpAnswered, OpRefused, OpEnded)
OP_KINDS = tuple(cls.KIND for cls in OP_RECORDS)


@dataclass(slots=True)
class Progress(Record):
    KIND = "progress"
    kind: Literal["progress"] = field(default="progress", init=False)
    target: str = ""
    progress: Any = None
    total: Any = None
    message: Any = None
    count: int = 0
    token: Any = None


@dataclass(slots=True)
class Log(Record):
    KIND = "log"
    kind: Literal["log"] = field(default="log", init=False)
    target: str = ""
    level: Any = None
    logger: Any = None
    data: Any = None


@dataclass(slots=True)
class SubscriptionSnapshot(Record):
    """A listen subscription as version 2 recorded every change (its kind "subscription"), with the notifications
    that change added: read from older logs and files only."""

    KIND = "sub_snapshot"
    kind: Literal["sub_snapshot"] = field(default="sub_snapshot", init=False)
    sub: str = ""
    requested: Json = field(default_factory=dict)
    acknowledged: Json | None = None
    dropped: Json | None = None
    state: str = "opening"
    subscription_id: Any = None
    ack_ms: float | None = None
    reconnects: int = 0
    problems: list[str] = field(default_factory=list)
    total: int = 0
    exchange: str | None = None
    notifications: list[Json] = field(default_factory=list)  # the notifications this change adds


# A subscription's life as transitions (version 3), each naming it (`sub`, the console's id: L1, L2, …).

@dataclass(slots=True)
class SubStarted(Record):
    """Someone asked to listen (or a restart resumed a subscription that was live): what was asked for."""

    KIND = "sub_started"
    kind: Literal["sub_started"] = field(default="sub_started", init=False)
    sub: str = ""
    requested: Json = field(default_factory=dict)
    reconnects: int = 0
    total: int = 0  # notifications before (a resumed subscription counts on)


@dataclass(slots=True)
class SubListening(Record):
    """A listen request went out (the first, or a re-listen after a drop): nothing is acknowledged yet."""

    KIND = "sub_listening"
    kind: Literal["sub_listening"] = field(default="sub_listening", init=False)
    sub: str = ""
    state: str = "opening"        # opening | reconnecting
    exchange: str = ""            # its exchange key
    subscription_id: Any = None   # the listen request's JSON-RPC id (notifications carry it)
    reconnects: int = 0


@dataclass(slots=True)
class SubAcknowledged(Record):
    """The server said what it grants (notifications/subscriptions/acknowledged; a 2025-11-25 session: what
    resources/subscribe took). `dropped`: asked for but not granted."""

    KIND = "sub_acknowledged"
    kind: Literal["sub_acknowledged"] = field(default="sub_acknowledged", init=False)
    sub: str = ""
    acknowledged: Json = field(default_factory=dict)
    dropped: Json = field(default_factory=dict)
    ack_ms: float | None = None
    state: str = "active"


@dataclass(slots=True)
class SubNotified(Record):
    """A change notification arrived on it."""

    KIND = "sub_notified"
    kind: Literal["sub_notified"] = field(default="sub_notified", init=False)
    sub: str = ""
    notification: Json = field(default_factory=dict)  # method, params, at


@dataclass(slots=True)
class SubProblem(Record):
    """Something about it broke a rule or failed (no acknowledgement in time, a wrong subscriptionId, a drop)."""

    KIND = "sub_problem"
    kind: Literal["sub_problem"] = field(default="sub_problem", init=False)
    sub: str = ""
    problem: str = ""


@dataclass(slots=True)
class SubEnded(Record):
    """Its stream ended: stopped by someone, closed by the server, or lost (then it listens again)."""

    KIND = "sub_ended"
    kind: Literal["sub_ended"] = field(default="sub_ended", init=False)
    sub: str = ""
    state: str = "stopped"  # stopped | closed_by_server | connection_lost


SUB_RECORDS: tuple[type[Record], ...] = (SubscriptionSnapshot, SubStarted, SubListening, SubAcknowledged,
                                         SubNotified, SubProblem, SubEnded)
SUB_KINDS = tuple(cls.KIND for cls in SUB_RECORDS)


@dataclass(slots=True)
class Reread(Record):
    KIND = "reread"
    kind: Literal["reread"] = field(default="reread", init=False)
    uri: str = ""
    op: str = ""


@dataclass(slots=True)
class LinkCreated(Record):
    KIND = "link_created"
    kind: Literal["link_created"] = field(default="link_created", init=False)
    id: str = ""
    role: str = "viewer"
    created: float = 0.0
    expires: float | None = None
    label: str = ""


@dataclass(slots=True)
class LinkRevoked(Record):
    KIND = "link_revoked"
    kind: Literal["link_revoked"] = field(default="link_revoked", init=False)
    id: str = ""
    revoked: float = 0.0


@dataclass(slots=True)
class Restored(Record):
    """The console came back (or the session was imported): what was in flight will never finish."""

    KIND = "restored"
    kind: Literal["restored"] = field(default="restored", init=False)
    note: str = ""
    imported: bool = False


@dataclass(slots=True)
class TakenOver(Record):
    """Another console process took the session over because its owner process stopped (team deployment)."""

    KIND = "taken_over"
    kind: Literal["taken_over"] = field(default="taken_over", init=False)
    process_id: str = ""  # the process that owns the connection from now on
    note: str = ""        # why, for people: what happened to the requests and to the connection
    stdio: bool = False   # a stdio target is not restarted: its status becomes closed until someone reconnects


@dataclass(slots=True)
class EraNegotiated(Record):
    """Which protocol revision this connection speaks, and why (the session header shows it)."""

    KIND = "era_negotiated"
    kind: Literal["era_negotiated"] = field(default="era_negotiated", init=False)
    era: str = "modern"  # modern (2026-07-28) | legacy (2025-11-25 and older)
    protocol_version: str = ""
    chosen: str = "auto"  # what the connection asked for: auto | modern | legacy | sse-2024
    reason: str = ""  # for people: "server/discover answered", "probe refused (HTTP 400 …); initialize …"
    probe: str | None = None  # the exchange key of the server/discover probe, when there was one


@dataclass(slots=True)
class DeadlineExtended(Record):
    """Someone chose "Wait longer" on a plain request in flight (an operation records its snapshot instead)."""

    KIND = "deadline_extended"
    kind: Literal["deadline_extended"] = field(default="deadline_extended", init=False)
    key: str = ""
    extensions: int = 0


@dataclass(slots=True)
class CancelRequested(Record):
    """Someone asked to cancel a request in flight (an exchange key): who, shown until its end says how it ended."""

    KIND = "cancel_requested"
    kind: Literal["cancel_requested"] = field(default="cancel_requested", init=False)
    key: str = ""
    cancelled_by: str = ""  # owner | operator (the role that pressed Cancel)


@dataclass(slots=True)
class FindingRecorded(Record):
    """The live lint found a rule broken by a frame (`app/mcp/lint`): kept on the timeline like everything else."""

    KIND = "finding"
    kind: Literal["finding"] = field(default="finding", init=False)
    rule: str = ""
    severity: str = "error"
    message: str = ""
    exchange: str | None = None  # the request it is about (None: a frame that belongs to no request)
    frame_seq: int = 0           # the wire event that showed it
    spec_url: str = ""


@dataclass(slots=True)
class ServerRequestSnapshot(Record):
    """A request *from* the server (legacy elicitation, sampling, roots) and where its dialog stands: as version 2
    recorded every change (its kind "server_request"), and the shape the fold keeps it in.

    It nests under the entry of the client request whose stream carried it (`key`).
    """

    KIND = "sr_snapshot"
    kind: Literal["sr_snapshot"] = field(default="sr_snapshot", init=False)
    id: str = ""                  # the console's id for it (unique in the session)
    key: str = ""                 # the exchange key of the client request whose stream carried it
    request_id: Any = None        # the server's JSON-RPC id: the response goes back with it
    method: str = ""
    params: Json = field(default_factory=dict)
    # awaiting | answered | declined | cancelled | timed_out | gone (its stream ended before anyone answered) |
    # withdrawn (the server cancelled it with notifications/cancelled: nothing went back) | interrupted
    status: str = "awaiting"
    answered_by: str = ""         # owner | operator | console (roots are answered from the session's list)
    response: Json | None = None  # exactly what went back: {"result": …} or {"error": …}
    errors: Json = field(default_factory=dict)   # field → message, when an answer was refused
    drafts: Json = field(default_factory=dict)   # what was typed into a refused answer
    asked: float = 0.0            # wall clock
    due: float | None = None      # wall clock: when the console answers with a timeout error
    ended: float | None = None


# A server request's life as transitions (version 3), each naming it (`id`) and the exchange that carried it (`key`).

@dataclass(slots=True)
class SrAsked(Record):
    """The server asked: its question waits for an answer (roots are answered by the console at once)."""

    KIND = "sr_asked"
    kind: Literal["sr_asked"] = field(default="sr_asked", init=False)
    id: str = ""
    key: str = ""
    request_id: Any = None
    method: str = ""
    params: Json = field(default_factory=dict)
    asked: float = 0.0
    due: float | None = None


@dataclass(slots=True)
class SrRefused(Record):
    """An answer did not pass the console's checks: nothing went back; why, and what was typed."""

    KIND = "sr_refused"
    kind: Literal["sr_refused"] = field(default="sr_refused", init=False)
    id: str = ""
    key: str = ""
    errors: Json = field(default_factory=dict)
    drafts: Json = field(default_factory=dict)


@dataclass(slots=True)
class SrEnded(Record):
    """The question is over: answered, declined, cancelled, timed out, gone with its stream, or withdrawn."""

    KIND = "sr_ended"
    kind: Literal["sr_ended"] = field(default="sr_ended", init=False)
    id: str = ""
    key: str = ""
    status: str = "answered"
    answered_by: str = ""
    response: Json | None = None  # exactly what went back (None: nothing did)
    ended: float = 0.0


SR_RECORDS: tuple[type[Record], ...] = (ServerRequestSnapshot, SrAsked, SrRefused, SrEnded)
SR_KINDS = tuple(cls.KIND for cls in SR_RECORDS)


Event = (Restored | TakenOver | SessionCreated | StatusChanged | Discovered | ListsRefreshed | CapabilitiesChanged
         | RootsChanged | RequestSettingsChanged | ExchangeStarted | ExchangeFinished | Wire | Notice | Stderr
         | OperationSnapshot | OpStarted | OpRound | OpAnswered | OpRefused | OpEnded | Progress | Log
         | SubscriptionSnapshot | SubStarted | SubListening | SubAcknowledged | SubNotified | SubProblem
         | SubEnded | Reread | LinkCreated | LinkRevoked | DeadlineExtended | EraNegotiated
         | FindingRecorded | ServerRequestSnapshot | SrAsked | SrRefused | SrEnded | CancelRequested)
_ALL_RECORDS: tuple[type[Record], ...] = (
    Restored, TakenOver, SessionCreated, StatusChanged, Discovered, ListsRefreshed, CapabilitiesChanged, RootsChanged,
    RequestSettingsChanged, ExchangeStarted, ExchangeFinished, Wire, Notice, Stderr, *OP_RECORDS, Progress, Log,
    *SUB_RECORDS, Reread, LinkCreated, LinkRevoked, DeadlineExtended, EraNegotiated, FindingRecorded,
    *SR_RECORDS, CancelRequested)
RECORDS: dict[str, type[Record]] = {cls.KIND: cls for cls in _ALL_RECORDS}
EXCHANGE_KINDS = ("exchange_started", "exchange_finished")
# The kinds that make or change a timeline entry.
ENTRY_KINDS = (*EXCHANGE_KINDS, "notice", *OP_KINDS, "deadline_extended", "cancel_requested")


def load(kind: str, data: Json, version: int = EVENT_VERSION) -> Event:
    """A typed record from a stored (kind, data) of any known version."""
    if version == 1:
        kind, data = migrate_v1(kind, data)
        version = 2
    if version == 2:
        kind, data = migrate_v2(kind, data)
    elif version != EVENT_VERSION:
        raise ValueError(f"unknown timeline event version {version!r}")
    cls = RECORDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown timeline event kind {kind!r}")
    return cast(Event, cls.from_data(data))


def check(kind: str, data: Any) -> None:
    """Raise ValueError unless `data` loads as a current-version record of `kind` (the checks of `load`)."""
    found = _CHECKS.get(kind)
    if found is None:
        cls = RECORDS.get(kind)
        if cls is None:
            raise ValueError(f"unknown timeline event kind {kind!r}")
        _, names, required = _fields(cls)
        found = _CHECKS[kind] = (names, required)
    if not isinstance(data, dict):
        raise ValueError(f"a {kind} event's data is not an object")
    names, required = found
    # The usual case in one or two set tests (C loops over the keys); the record's check says what is wrong.
    if not names.issuperset(data) or (required and not required.issubset(data)):
        RECORDS[kind].check(data)


_CHECKS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def keys_fit(kind: str, datas: list[Json]) -> bool:
    """Whether `check(kind, data)` passes for every one of these objects: a set test each, in C loops (an import
    checks a buffer's events of one kind at once; when one fails, `check` of each says which and why)."""
    cls = RECORDS.get(kind)
    if cls is None:
        return False
    _, names, required = _fields(cls)
    return all(map(names.issuperset, datas)) and (not required or all(map(required.issubset, datas)))


def data_keys(kind: str) -> frozenset[str] | None:
    """The keys a `kind` event's data may have, when that is the whole of its check (no field is required)."""
    cls = RECORDS.get(kind)
    if cls is None:
        return None
    _, names, required = _fields(cls)
    return None if required else names  # kind → (its data's keys, the required ones)


def migrate_v1(kind: str, data: Json) -> tuple[str, Json]:
    """Version 1 → 2: the five shapes of "session" become their own kinds; payloads gain their v2 names."""
    data = dict(data)
    if kind == "session":
        if "status" in data:
            return "status", data
        if "lists" in data:  # v1 recorded only how many items each list had
            return "lists_refreshed", {"only": data.get("only"), "lists": {}, "counts": data["lists"]}
        if "capabilities" in data:
            return "capabilities_changed", {"capabilities": data["capabilities"], "saved": bool(data.get("saved"))}
        if "roots" in data:
            return "roots_changed", {"roots": data["roots"], "saved": bool(data.get("saved", True))}
        if "request_settings" in data:
            return "request_settings_changed", dict(data["request_settings"])
        raise ValueError(f"a v1 session event of no known shape: {sorted(data)}")
    if kind == "exchange":
        return ("exchange_started", data) if data.get("status") == "pending" and "duration_ms" not in data \
            else ("exchange_finished", data)
    if kind == "wire":
        data["frame_kind"] = data.pop("kind", None)
        return "wire", data
    if kind == "notice":
        return "notice", {k: data[k] for k in ("level", "message", "raw") if k in data}
    if kind == "stderr":  # v1 recorded one line per event
        return "stderr", {"lines": [data.get("line", "")]}
    if kind == "operation":  # v1 snapshots lacked what a restart needs to show the result: left empty
        return "operation", data
    return kind, data


# Version 2 → 3: a kind that version 2 wrote as a snapshot of every change is read under its v3 snapshot name.
V2_NAMES = {"operation": "op_snapshot", "server_request": "sr_snapshot", "subscription": "sub_snapshot"}
V2_OLD_NAMES = {v3: v2 for v2, v3 in V2_NAMES.items()}  # what a store's read by v3 kind also asks for


def migrate_v2(kind: str, data: Json) -> tuple[str, Json]:
    """Version 2 → 3: the snapshots of an operation, a server request and a subscription keep their data under
    the names `op_snapshot`, `sr_snapshot` and `sub_snapshot` (version 3 records their transitions instead, and
    folds a snapshot as the whole of it at that point)."""
    return V2_NAMES.get(kind, kind), data


_EVENT_KEYS = frozenset({"v", "session_id", "seq", "kind", "at", "data"})


# The encoder `json.dumps(data, separators=(",", ":"))` makes on every call, made once (every event is serialized).
_COMPACT = json.JSONEncoder(separators=(",", ":"))


@dataclass(slots=True)
class TimelineEvent:
    """The envelope: which session, its sequence number, when, and the typed record."""

    session_id: str
    seq: int
    record: Event
    at: float = field(default_factory=time.time)
    # The record as a dict, made once: the store, the hub and the renderer each read it on the hot path.
    # Read-only for its readers (the fold works on the record itself).
    _data: Json | None = field(default=None, init=False, repr=False, compare=False)
    # ... and that dict as JSON text, made once: the store keeps it and the hub's message wraps it, so an event
    # is serialized once however many of them read it. An import sets it to the text it parsed.
    _data_json: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def data(self) -> Json:
        if self._data is None:
            self._data = self.record.to_data()
        return self._data

    @property
    def data_json(self) -> str:
        if self._data_json is None:
            record = self.record
            if type(record) is Wire and self._data is None:
                self._data_json = record.data_text()  # a frame: spelled directly (see Wire.data_text)
            if self._data_json is None:
                self._data_json = _COMPACT.encode(self.data)  # json.dumps(self.data, separators=(",", ":"))
        return self._data_json

    def to_dict(self) -> Json:
        return {"v": EVENT_VERSION, "session_id": self.session_id, "seq": self.seq, "kind": self.kind,
                "at": self.at, "data": self.data}

    def to_json(self) -> str:
        """`to_dict` as compact JSON, around the cached `data_json` (the envelope's own fields are a few bytes)."""
        at = self.at
        if type(at) is float and math.isfinite(at) and type(self.seq) is int and type(self.session_id) is str \
                and type(self.kind) is str:
            # What json.dumps writes for this head (a float's repr, strings escaped by its own function),
            # without the encoder json.dumps builds for its arguments on every call: once per event published.
            return (f'{{"v":{EVENT_VERSION},"session_id":{_ascii_string(self.session_id)},"seq":{self.seq},'
                    f'"kind":{_ascii_string(self.kind)},"at":{at!r},"data":{self.data_json}}}')
        head = json.dumps({"v": EVENT_VERSION, "session_id": self.session_id, "seq": self.seq, "kind": self.kind,
                           "at": self.at}, separators=(",", ":"))
        return f'{head[:-1]},"data":{self.data_json}}}'

    @classmethod
    def from_dict(cls, raw: Json) -> TimelineEvent:
        return cls.of_dict(raw["session_id"], raw)

    @classmethod
    def of_dict(cls, session_id: str, raw: Json) -> TimelineEvent:
        """An event from its dict form, placed in `session_id` (an import moves a file's events into a new one)."""
        if unknown := raw.keys() - _EVENT_KEYS:  # every key consumed: an unknown key means a newer writer
            raise ValueError(f"unknown keys in timeline event: {sorted(unknown)}")
        version, data = raw["v"], raw["data"]
        if version not in (1, 2, EVENT_VERSION):
            raise ValueError(f"unknown timeline event version {version!r}")
        event = cls(session_id=session_id, seq=raw["seq"], record=load(raw["kind"], data, version), at=raw["at"])
        if version == EVENT_VERSION and isinstance(data, dict) and len(data) == len(_names(type(event.record))):
            event._data = data  # every field given: the dict is what to_data would build (spares the rebuild)
        return event

    @classmethod
    def from_json(cls, text: str) -> TimelineEvent:
        return cls.from_dict(json.loads(text))
