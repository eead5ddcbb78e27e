"""Typed timeline events: one record per kind, serialized explicitly, with a version and loaders of older ones.

A session is the fold of these records (`app.console.state.apply`). Each record is a dataclass
whose `kind` is a Literal; `to_data()` writes every field, `from_data()` consumes every key (an
unknown key means a newer writer, so loading says so instead of dropping it). `docs/events.md`
documents every kind; a test keeps the two in step. Version 1 rows (untyped payloads, one
"session" kind with five shapes) are migrated on load by `migrate_v1`; version 2 rows (an operation, a server
request and a subscription recorded as a snapshot at every change) by `migrate_v2`. Version 3 records those three
as small transitions, defined in `app/console/live_events.py` and folded by `apply`; the records' shared base is
`app/console/record.py`.
"""

from __future__ import annotations

import json
import json.encoder
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from app.console.live_events import (
    OP_KINDS,
    OP_RECORDS,
    SR_RECORDS,
    SUB_RECORDS,
    OpAnswered,
    OpEnded,
    OperationSnapshot,
    OpRefused,
    OpRound,
    OpStarted,
    OpTask,
    ServerRequestSnapshot,
    SrAsked,
    SrEnded,
    SrRefused,
    SubAcknowledged,
    SubEnded,
    SubListening,
    SubNotified,
    SubProblem,
    SubscriptionSnapshot,
    SubStarted,
)
from app.console.record import Json, Record, fields_of, names_of

EVENT_VERSION = 3


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
class SessionRenamed(Record):
    """The owner named the session ("" goes back to the server's title)."""
    KIND = "session_renamed"
    kind: Literal["session_renamed"] = field(default="session_renamed", init=False)
    name: str = ""


@dataclass(slots=True)
class AuthChanged(Record):
    """The session's OAuth flow moved (app/console/oauth.py): what anyone may see of it, never a secret."""

    KIND = "auth_changed"
    kind: Literal["auth_changed"] = field(default="auth_changed", init=False)
    status: str = "idle"  # idle | running | waiting | paused | done | failed | signed_out
    message: str = ""
    run: int = 0
    steps: list[Json] = field(default_factory=list)
    grant: Json | None = None     # Grant.shown(): issuer, scopes, expiry, decoded JWT header and claims
    settings: Json = field(default_factory=dict)  # what the owner set, without the client secret's value
    refreshed: int = 0            # how many times the token was refreshed in this session


@dataclass(slots=True)
class AppChanged(Record):
    """An MCP App (a tool's view, app/console/apps.py) opened or changed, as anyone may see it: the whole of it
    each time (small: never the view's HTML, which its `resources/read` entry holds)."""

    KIND = "app_changed"
    kind: Literal["app_changed"] = field(default="app_changed", init=False)
    app: str = ""            # its id: the operation of the tool call it belongs to
    tool: str = ""
    uri: str = ""            # the ui:// resource
    status: str = "opened"   # opened | reading | ready | failed | closed
    message: str = ""
    read_op: str | None = None  # the resources/read operation its view came from
    view: Json | None = None    # apps.View.shown: mime, CSP built and declared, refused, allow, size
    display_mode: str = "inline"
    context: Json = field(default_factory=dict)  # the host context the person set (theme, locale, viewport)
    said: list[Json] = field(default_factory=list)   # ui/message, ui/update-model-context, logs: the latest
    links: list[Json] = field(default_factory=list)  # ui/open-link offers: {id, url, status}
    size: Json | None = None    # the size the view last reported
    n: int = 0                  # which change this is (1: the app opened)


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
    via: str | None = None  # the entry it is linked with: an MCP App's bridge request ↔ the operation it led to


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
class DoctorRan(Record):
    """The connection doctor (app/mcp/doctor) started (`running`) or ended with its check list (`report`)."""

    KIND = "doctor"
    kind: Literal["doctor"] = field(default="doctor", init=False)
    running: bool = False
    report: Json = field(default_factory=dict)  # {target, kind, passed, checks: [{name, status, detail, fix}]}


@dataclass(slots=True)
class SurfaceRecorded(Record):
    """What the server offered when a connect finished (app/mcp/surface.py's snapshot: tools, resources, resource
    templates, prompts, capabilities, server info and era), made from what the connect fetched, not fetched again."""

    KIND = "surface"
    kind: Literal["surface"] = field(default="surface", init=False)
    snapshot: Json = field(default_factory=dict)
    connect: int = 0  # which connect of the session it was (the fold's `connects`)


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


Event = (Restored | TakenOver | SessionCreated | StatusChanged | Discovered | ListsRefreshed | CapabilitiesChanged
         | RootsChanged | SessionRenamed | RequestSettingsChanged | ExchangeStarted | ExchangeFinished | Wire | Notice
         | Stderr
         | OperationSnapshot | OpStarted | OpRound | OpAnswered | OpRefused | OpEnded | OpTask | Progress | Log
         | SubscriptionSnapshot | SubStarted | SubListening | SubAcknowledged | SubNotified | SubProblem
         | SubEnded | Reread | LinkCreated | LinkRevoked | DeadlineExtended | EraNegotiated
         | FindingRecorded | ServerRequestSnapshot | SrAsked | SrRefused | SrEnded | CancelRequested | AuthChanged
         | AppChanged | DoctorRan | SurfaceRecorded)
_ALL_RECORDS: tuple[type[Record], ...] = (
    Restored, TakenOver, SessionCreated, StatusChanged, Discovered, ListsRefreshed, CapabilitiesChanged, RootsChanged,
    SessionRenamed, RequestSettingsChanged, ExchangeStarted, ExchangeFinished, Wire, Notice, Stderr, *OP_RECORDS,
    Progress, Log,
    *SUB_RECORDS, Reread, LinkCreated, LinkRevoked, DeadlineExtended, EraNegotiated, FindingRecorded,
    *SR_RECORDS, CancelRequested, AuthChanged, AppChanged, DoctorRan, SurfaceRecorded)
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
        _, names, required = fields_of(cls)
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
    _, names, required = fields_of(cls)
    return all(map(names.issuperset, datas)) and (not required or all(map(required.issubset, datas)))


def data_keys(kind: str) -> frozenset[str] | None:
    """The keys a `kind` event's data may have, when that is the whole of its check (no field is required)."""
    cls = RECORDS.get(kind)
    if cls is None:
        return None
    _, names, required = fields_of(cls)
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
        if version == EVENT_VERSION and isinstance(data, dict) and len(data) == len(names_of(type(event.record))):
            event._data = data  # every field given: the dict is what to_data would build (spares the rebuild)
        return event

    @classmethod
    def from_json(cls, text: str) -> TimelineEvent:
        return cls.from_dict(json.loads(text))
