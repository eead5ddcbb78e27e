"""A session's state is the fold of its events: `apply(state, event)` is its only writer.

The live session appends events (the timeline's append calls `apply`); a restart, an imported
session file and the fold test all build the same state by folding the stored events from
scratch. Everything here is plain data (JSON-able through `projection`), so two folds can be
compared and a second process could hold the same state.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from app.console.events import (
    AppChanged,
    AuthChanged,
    CancelRequested,
    CapabilitiesChanged,
    DeadlineExtended,
    Discovered,
    DoctorRan,
    EraNegotiated,
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    LinkCreated,
    LinkRevoked,
    ListsRefreshed,
    Log,
    Notice,
    Progress,
    RequestSettingsChanged,
    Restored,
    RootsChanged,
    SessionCreated,
    SessionRenamed,
    StatusChanged,
    Stderr,
    SurfaceRecorded,
    TakenOver,
    TimelineEvent,
)
from app.console.live_events import (
    OP_RECORDS,
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
from app.console.live_records import FinalReply, OperationRecord, ServerRequestRecord, SubscriptionRecord
from app.mcp.operation import MAX_INPUT_REQUESTS  # questions a round may ask: the fold keeps no more

Json = dict[str, Any]
# MCP Apps (io.modelcontextprotocol/ui): the console hosts views (app/console/apps.py), so it says so by default.
DEFAULT_CAPABILITIES: Json = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
                              "extensions": {"io.modelcontextprotocol/ui":
                                             {"mimeTypes": ["text/html;profile=mcp-app"]}}}
LIST_KEYS = ("tools", "resources", "resourceTemplates", "prompts")
HISTORY = 200          # notifications kept per subscription
STDERR_LINES = 500
LOG_LINES = 200
TASK_EXCHANGES_KEPT = 50  # a task's last tasks/get|update|cancel exchanges its view links to (all stay on the log)
MAX_OPERATIONS = 500   # operations kept in state; older finished ones live on in the store
NESTED_SERVER_REQUESTS = 50  # shown under the entry that carried them
MAX_SERVER_REQUESTS = 200  # server requests kept in state; the oldest ended ones go first
MAX_SUBSCRIPTIONS = 100  # subscriptions kept in state; the oldest ended ones go first
MAX_SURFACES = 100  # connects' surface snapshots listed in state (each by its seq; the store has them whole)


@dataclass
class SessionState:
    session_id: str
    window: int = 200
    target: Json = field(default_factory=dict)
    read_only: bool = False
    status: str = "new"
    status_message: str = ""
    status_since: float | None = None
    connects: int = 0
    ever_connected: bool = False  # a failed first try (never connected) is not kept unless the owner says
    last_id: int = 0
    capabilities: Json = field(default_factory=lambda: copy.deepcopy(DEFAULT_CAPABILITIES))
    discover: Json | None = None
    # The revision negotiated on the last connect: {era, protocol_version, chosen, reason, probe}; None before.
    era: Json | None = None
    # The connection doctor's last run: {running, report}; None before it ran (app/mcp/doctor).
    doctor: Json | None = None
    findings: dict[str, int] = field(default_factory=dict)  # rule id → how many times the live lint found it
    lists: dict[str, list[Json]] = field(default_factory=lambda: {k: [] for k in LIST_KEYS})
    # The last connect's surface snapshot (app/mcp/surface.py), whole: "changed since the last connect" compares the
    # lists with it. And every connect's, listed by seq (the surface page reads one whole from the store).
    surface: Json | None = None
    surfaces: list[Json] = field(default_factory=list)
    label: str = ""  # the name the owner gave the session ("": the server's title)
    auth: Json | None = None  # the OAuth flow as anyone may see it (an auth_changed event's data); None: never ran
    apps: OrderedDict[str, Json] = field(default_factory=OrderedDict)  # app id → its app_changed data (apps.py)
    roots: list[Json] = field(default_factory=list)  # the owner's (app/console/roots.py): none by default
    log_level: str = ""
    progress_enabled: bool = True
    auto_refresh: bool = True
    idle_timeout_s: float | None = None  # per-session deadlines; None: the console's settings
    max_s: float | None = None
    operations: OrderedDict[str, OperationRecord] = field(default_factory=OrderedDict)
    subscriptions: OrderedDict[str, SubscriptionRecord] = field(default_factory=OrderedDict)
    server_requests: OrderedDict[str, ServerRequestRecord] = field(default_factory=OrderedDict)
    links: OrderedDict[str, Json] = field(default_factory=OrderedDict)
    stderr: list[str] = field(default_factory=list)
    stderr_stored: int = 0   # lines recorded in all, against max_stderr_lines
    stderr_dropped: int = 0  # lines past max_stderr_lines: counted, not stored
    stderr_current: str = ""  # the line the server is still drawing, as a terminal shows it now (replaced)
    store_quota_reached: bool = False
    seq: int = 0
    # The timeline window: key → entry; rounds of operations nest under their operation.
    entries: OrderedDict[str, Json] = field(default_factory=OrderedDict)
    rounds: OrderedDict[str, Json] = field(default_factory=OrderedDict)
    evicted: int = 0
    entry_count: int = 0


def apply(state: SessionState, event: TimelineEvent, in_window: bool = True) -> None:
    """Fold one event into the state. The only writer of session state.

    `in_window=False`: the caller knows that the timeline entry this event changes is not in the final window
    (an import, see app/console/import_fold.py); only what outlives the entry is folded (its operation)."""
    state.seq = max(state.seq, event.seq)
    record = event.record
    handler = _HANDLERS.get(type(record))
    if handler is None:
        return
    if in_window:
        handler(state, record, event)
    elif type(record) in OP_RECORDS:
        handler(state, record, None)


def _created(state: SessionState, ev: SessionCreated, _e: TimelineEvent) -> None:
    state.target, state.read_only = dict(ev.target), ev.read_only
    state.capabilities, state.roots = copy.deepcopy(ev.capabilities), copy.deepcopy(ev.roots)


IN_FLIGHT = ("pending", "running", "awaiting_input")
ENDED_SUBSCRIPTIONS = ("stopped", "closed_by_server", "interrupted")


def _restored(state: SessionState, ev: Restored, _e: TimelineEvent) -> None:
    state.status, state.status_message = "closed", ev.note
    state.read_only = state.read_only or ev.imported
    if ev.imported:
        state.links.clear()  # the original's share links do not open the copy
    _end_in_flight(state, "interrupted", None, resume=not ev.imported, keep_awaiting=not ev.imported)
    if state.doctor is not None and state.doctor.get("running"):  # the process that ran it is gone
        state.doctor = {**state.doctor, "running": False}


def _taken_over(state: SessionState, ev: TakenOver, _e: TimelineEvent) -> None:
    """The process that ran these requests is gone: they will never finish, so they are failed, saying why."""
    _end_in_flight(state, "error", TAKEOVER_ERROR, resume=True, keep_awaiting=True)
    if ev.stdio:  # its process died with its owner; only the owner's Reconnect starts one again
        state.status, state.status_message, state.status_since = "closed", ev.note, _e.at


TAKEOVER_ERROR = "the console process that ran this request stopped"


def _end_in_flight(state: SessionState, status: str, error: str | None, resume: bool,
                   keep_awaiting: bool = False) -> None:
    """Every entry, round, operation and server request still in flight ends; live subscriptions wait to resume.

    `keep_awaiting`: an operation waiting for input is not in flight on the 2026-07-28 revision (the server keeps
    nothing between rounds; the retry needs only what the fold holds), so it stays waiting and can be answered."""
    ending = tuple(s for s in IN_FLIGHT if not (keep_awaiting and s == "awaiting_input"))
    # A task lives on the server, not on a stream: one not ended is followed again (polled from its id) once the
    # session is back, so its operation stays as it was.
    following = {op.key for op in state.operations.values()
                 if keep_awaiting and op.task and not op.task.get("ended") and op.status in IN_FLIGHT}
    for entry in [*state.entries.values(), *state.rounds.values()]:
        if entry.get("kind") == "operation" and entry.get("key") in following:
            continue
        if entry.get("status") in ending:
            entry["status"] = status
            if error is not None:
                entry["error"] = error
                if entry.get("kind") == "operation":  # an operation's entry says why in its message
                    entry["message"] = error
            rounds = entry.get("rounds")
            if isinstance(rounds, list):  # the rounds an operation's entry shows (its record's: replaced, not changed)
                entry["rounds"] = [{**r, "status": status} if isinstance(r, dict) and r.get("status") in ending
                                   else r for r in rounds]
    for op in state.operations.values():
        if op.status in ending and op.key not in following:
            op.status, op.pending = status, {}
            if error is not None:
                op.message = error
    for key, sr in list(state.server_requests.items()):
        if sr.status == "awaiting":  # its stream is gone with the process: nobody can answer it any more
            ended = dataclasses.replace(sr.ev, status="interrupted")
            state.server_requests[key] = ServerRequestRecord(ended)
            _nest(state, state.server_requests[key])
    for sub in state.subscriptions.values():
        if sub.state not in ENDED_SUBSCRIPTIONS:
            sub.state, sub.resume = "interrupted", resume


def _status(state: SessionState, ev: StatusChanged, _e: TimelineEvent) -> None:
    state.status, state.status_message, state.status_since = ev.status, ev.message, ev.since
    if ev.status == "connecting":
        state.connects += 1
    elif ev.status == "connected":
        state.ever_connected = True


def _discovered(state: SessionState, ev: Discovered, _e: TimelineEvent) -> None:
    state.discover = ev.result


def _lists(state: SessionState, ev: ListsRefreshed, _e: TimelineEvent) -> None:
    state.lists.update({k: list(v) for k, v in ev.lists.items()})


def _surface(state: SessionState, ev: SurfaceRecorded, e: TimelineEvent) -> None:
    snapshot = ev.snapshot
    state.surface = snapshot
    server = snapshot.get("server")
    state.surfaces.append({"seq": e.seq, "at": e.at, "connect": ev.connect,
                           "counts": {k: len(v) if isinstance(v := snapshot.get(k), list) else 0 for k in LIST_KEYS},
                           "server": dict(server) if isinstance(server, dict) else {},
                           "protocol_version": snapshot.get("protocol_version")})
    del state.surfaces[:-MAX_SURFACES]


def _capabilities(state: SessionState, ev: CapabilitiesChanged, _e: TimelineEvent) -> None:
    state.capabilities = copy.deepcopy(ev.capabilities)


def _renamed(state: SessionState, ev: SessionRenamed, _e: TimelineEvent) -> None:
    state.label = ev.name


def _auth(state: SessionState, ev: AuthChanged, _e: TimelineEvent) -> None:
    state.auth = ev.to_data()


MAX_APPS = 50  # the latest apps kept in the fold (each holds no HTML); older ones live on in the store


def _app(state: SessionState, ev: AppChanged, _e: TimelineEvent) -> None:
    state.apps[ev.app] = ev.to_data()
    state.apps.move_to_end(ev.app)
    while len(state.apps) > MAX_APPS:
        state.apps.popitem(last=False)


def _roots(state: SessionState, ev: RootsChanged, _e: TimelineEvent) -> None:
    state.roots = copy.deepcopy(ev.roots)


def _request_settings(state: SessionState, ev: RequestSettingsChanged, _e: TimelineEvent) -> None:
    state.log_level, state.progress_enabled, state.auto_refresh = ev.log_level, ev.progress, ev.auto_refresh
    state.idle_timeout_s, state.max_s = ev.idle_timeout_s, ev.max_s


def _exchange(state: SessionState, ev: ExchangeStarted | ExchangeFinished, e: TimelineEvent) -> None:
    if isinstance(ev, ExchangeStarted) and isinstance(ev.id, int):
        state.last_id = max(state.last_id, ev.id)
    data = ev.to_data()
    if ev.op or ev.key in state.rounds:
        # A round of an operation: it nests under the operation's entry, not beside it,
        # and keeps its own snapshot for its detail view.
        state.rounds[ev.key] = {**state.rounds.get(ev.key, {"seq0": e.seq, "at0": e.at}), **data}
        while len(state.rounds) > state.window * 4:
            state.rounds.popitem(last=False)
        return
    _entry(state, ev.key, "exchange", data, e)


def _entry(state: SessionState, key: str, kind: str, data: Json, e: TimelineEvent) -> None:
    if key in state.entries:
        state.entries[key] = {**state.entries[key], **data}
        return
    state.entries[key] = {"seq0": e.seq, "key": key, "kind": kind, **data, "at0": e.at}
    state.entry_count += 1
    while len(state.entries) > state.window:
        state.entries.popitem(last=False)
        state.evicted += 1


def _notice(state: SessionState, ev: Notice, e: TimelineEvent) -> None:
    if ev.signal == "store_quota":
        state.store_quota_reached = True
    _entry(state, f"n{e.seq}", "notice", ev.to_data(), e)


def _op_snapshot(state: SessionState, ev: OperationSnapshot, e: TimelineEvent | None) -> None:
    """A version 1 or 2 log's snapshot: the whole operation at that point."""
    _keep_operation(state, OperationRecord.of(ev), ev.key, e)


def _op_started(state: SessionState, ev: OpStarted, e: TimelineEvent | None) -> None:
    record = OperationRecord(id=ev.op, key=ev.key, method=ev.method, name=ev.name, started=ev.started,
                             rounds=[dict(ev.round)] if ev.round else [], replay_of=ev.replay_of,
                             params=dict(ev.params), log_level=ev.log_level, via=ev.via)
    _keep_operation(state, record, ev.key, e)


def _operation(state: SessionState, op_id: str, key: str, e: TimelineEvent | None) -> OperationRecord:
    """The operation a transition changes. One whose start the fold never saw (a file that left it out, or an
    operation older than those kept) is shown as what its transitions say, with what it asked unknown: every
    transition makes or changes its entry, as the store and an import's window count it."""
    record = state.operations.get(op_id)
    if record is None:
        record = OperationRecord(id=op_id, key=key, message="its start is not in the log",
                                 started=e.at if e is not None else 0.0)
    return record


def _op_round(state: SessionState, ev: OpRound, e: TimelineEvent | None) -> None:
    op = _operation(state, ev.op, ev.key, e)
    op.put_round(ev.round)
    # At most MAX_INPUT_REQUESTS questions a round, as the machine takes (a file may say more: not all kept).
    asked = ev.pending_requests
    op.status, op.message = ev.status, ev.message
    op.pending = dict(asked) if len(asked) <= MAX_INPUT_REQUESTS else dict(list(asked.items())[:MAX_INPUT_REQUESTS])
    # A round sent or answered starts with no answers: what the last round was asked and told is past.
    op.answers, op.answer_values, op.errors, op.drafts, op.required_capabilities = [], {}, {}, {}, None
    _keep_operation(state, op, ev.key, e)


def _op_answered(state: SessionState, ev: OpAnswered, e: TimelineEvent | None) -> None:
    op = _operation(state, ev.op, ev.key, e)
    asking = op.asking_round
    # Only an answer to what the round now asking asks, and its first one (a late answer of an earlier round's
    # question under the same key is not this round's answer: the machine refuses it as stale too).
    if ev.input in op.pending and ev.input not in op.answer_values and (asking is None or ev.round == asking):
        op.answers.append(ev.input)
        op.answer_values[ev.input] = ev.value
        op.errors.pop(ev.input, None)
        op.drafts.pop(ev.input, None)
        if op.rounds and op.rounds[-1].get("n") == ev.round and len(op.answer_values) == len(op.pending):
            rnd = op.rounds[-1] = dict(op.rounds[-1])  # the round's human time ends with its last answer
            rnd["answered"] = ev.at
            received = rnd.get("received")
            rnd["human_ms"] = (ev.at - received) * 1000 if isinstance(received, int | float) else None
    _keep_operation(state, op, ev.key, e)


def _op_refused(state: SessionState, ev: OpRefused, e: TimelineEvent | None) -> None:
    op = _operation(state, ev.op, ev.key, e)
    if ev.input in op.pending:
        op.errors[ev.input], op.drafts[ev.input] = dict(ev.errors), dict(ev.drafts)
    _keep_operation(state, op, ev.key, e)


def _op_ended(state: SessionState, ev: OpEnded, e: TimelineEvent | None) -> None:
    op = _operation(state, ev.op, ev.key, e)
    if ev.round:
        op.put_round(ev.round)
    op.status, op.message, op.pending, op.answers, op.answer_values = ev.status, ev.message, {}, [], {}
    op.errors, op.drafts = {}, {}
    op.final = FinalReply(ev.final) if ev.final is not None else op.final
    op.validation, op.required_capabilities = ev.validation, ev.required_capabilities
    _keep_operation(state, op, ev.key, e)


def _op_task(state: SessionState, ev: OpTask, e: TimelineEvent | None) -> None:
    """A step of the task an operation became: its data, and its input requests asked through the same dialogs as
    an MRTR round's (answers given and not yet sent stay answered; a key no longer asked drops its answer)."""
    op = _operation(state, ev.op, ev.key, e)
    exchanges = list((op.task or {}).get("exchanges") or [])
    if ev.via:
        exchanges = [*exchanges, dict(ev.via)][-TASK_EXCHANGES_KEPT:]
    op.task = {**ev.task, "exchanges": exchanges}
    op.status, op.message = ev.status, ev.message
    asked = ev.pending_requests
    op.pending = dict(asked) if len(asked) <= MAX_INPUT_REQUESTS else dict(list(asked.items())[:MAX_INPUT_REQUESTS])
    op.answers = [k for k in ev.answered if k in op.pending]
    op.answer_values = {k: v for k, v in op.answer_values.items() if k in op.pending}
    op.errors = {k: v for k, v in op.errors.items() if k in op.pending}
    op.drafts = {k: v for k, v in op.drafts.items() if k in op.pending}
    _keep_operation(state, op, ev.key, e)


def _keep_operation(state: SessionState, record: OperationRecord, key: str, e: TimelineEvent | None) -> None:
    """The operation as it now stands, and the timeline entry its event names (`e` None: only the operation,
    see `apply`)."""
    state.operations[record.id] = record
    state.operations.move_to_end(record.id)
    while len(state.operations) > MAX_OPERATIONS:
        oldest = next((k for k, o in state.operations.items() if o.status not in ("awaiting_input", "running")),
                      next(iter(state.operations)))
        del state.operations[oldest]
    if e is not None:
        _entry(state, key, "operation", record.summary(), e)


def _cancel_requested(state: SessionState, ev: CancelRequested, _e: TimelineEvent) -> None:
    """Who asked to cancel shows on the exchange (or the round) at once; its end records it again."""
    found = state.rounds.get(ev.key) or state.entries.get(ev.key)
    if found is not None:
        found["cancelled_by"] = ev.cancelled_by


def cancelled_by(state: SessionState, key: str) -> str | None:
    found = state.rounds.get(key) or state.entries.get(key)
    return found.get("cancelled_by") if found is not None else None


def _sr_snapshot(state: SessionState, ev: ServerRequestSnapshot, _e: TimelineEvent) -> None:
    _keep_server_request(state, ServerRequestRecord(ev))


def _sr_asked(state: SessionState, ev: SrAsked, _e: TimelineEvent) -> None:
    _keep_server_request(state, ServerRequestRecord(ServerRequestSnapshot(
        id=ev.id, key=ev.key, request_id=ev.request_id, method=ev.method, params=dict(ev.params), asked=ev.asked,
        due=ev.due)))


def _sr_refused(state: SessionState, ev: SrRefused, _e: TimelineEvent) -> None:
    sr = state.server_requests.get(ev.id)
    if sr is not None:
        _keep_server_request(state, ServerRequestRecord(dataclasses.replace(
            sr.ev, errors=dict(ev.errors), drafts=dict(ev.drafts))))


def _sr_ended(state: SessionState, ev: SrEnded, _e: TimelineEvent) -> None:
    sr = state.server_requests.get(ev.id)
    if sr is not None:
        _keep_server_request(state, ServerRequestRecord(dataclasses.replace(
            sr.ev, status=ev.status, answered_by=ev.answered_by, response=ev.response, errors={}, drafts={},
            ended=ev.ended)))


def _keep_server_request(state: SessionState, record: ServerRequestRecord) -> None:
    state.server_requests[record.id] = record
    state.server_requests.move_to_end(record.id)
    while len(state.server_requests) > MAX_SERVER_REQUESTS:
        oldest = next((k for k, r in state.server_requests.items() if r.status != "awaiting"),
                      next(iter(state.server_requests)))
        del state.server_requests[oldest]
    _nest(state, record)


def host_key(state: SessionState, key: str) -> str:
    """The timeline entry that shows exchange `key`: its own, or its operation's when it is a round."""
    rnd = state.rounds.get(key)
    return f"op-{rnd['op']}" if rnd is not None and rnd.get("op") else key


def _nest(state: SessionState, record: ServerRequestRecord) -> None:
    """The server request shows under the entry of the client request whose stream carried it."""
    entry = state.entries.get(host_key(state, record.ev.key))
    if entry is not None:
        nested = dict(entry.get("server_requests") or {})
        nested[record.id] = record.summary()
        while len(nested) > NESTED_SERVER_REQUESTS:  # the latest; the session's list (and the store) have them all
            del nested[next(iter(nested))]
        entry["server_requests"] = nested


def _progress(state: SessionState, ev: Progress, _e: TimelineEvent) -> None:
    entry = state.entries.get(ev.target)
    if entry is not None:
        entry["progress"] = ev.to_data()


def _log(state: SessionState, ev: Log, _e: TimelineEvent) -> None:
    entry = state.entries.get(ev.target)
    if entry is not None:
        logs = entry.setdefault("logs", [])
        logs.append(ev.to_data())
        del logs[:-LOG_LINES]


def _stderr(state: SessionState, ev: Stderr, _e: TimelineEvent) -> None:
    state.stderr.extend(ev.lines)
    del state.stderr[:-STDERR_LINES]
    state.stderr_stored += len(ev.lines)
    state.stderr_dropped = max(state.stderr_dropped, ev.dropped)
    state.stderr_current = ev.current


def _new_subscription(state: SessionState, sub_id: str, requested: Json) -> SubscriptionRecord:
    sub = state.subscriptions.get(sub_id)
    if sub is None:
        sub = state.subscriptions[sub_id] = SubscriptionRecord(id=sub_id, requested=requested)
        while len(state.subscriptions) > MAX_SUBSCRIPTIONS:
            oldest = next((k for k, s in state.subscriptions.items() if s.state in ENDED_SUBSCRIPTIONS),
                          next(iter(state.subscriptions)))
            del state.subscriptions[oldest]
    return sub


def _subscription_of(state: SessionState, sub_id: str) -> SubscriptionRecord | None:
    sub = state.subscriptions.get(sub_id)
    if sub is not None:
        sub.resume = False  # it changed: whatever a restart left to resume is being done
    return sub


def _sub_started(state: SessionState, ev: SubStarted, _e: TimelineEvent) -> None:
    sub = _new_subscription(state, ev.sub, ev.requested)
    sub.requested, sub.state, sub.reconnects, sub.total, sub.resume = ev.requested, "opening", ev.reconnects, \
        ev.total, False


def _sub_listening(state: SessionState, ev: SubListening, _e: TimelineEvent) -> None:
    if (sub := _subscription_of(state, ev.sub)) is not None:
        sub.state, sub.exchange_key, sub.subscription_id, sub.reconnects = ev.state, ev.exchange, \
            ev.subscription_id, ev.reconnects
        sub.acknowledged, sub.dropped_, sub.ack_ms = None, None, None


def _sub_acknowledged(state: SessionState, ev: SubAcknowledged, _e: TimelineEvent) -> None:
    if (sub := _subscription_of(state, ev.sub)) is not None:
        sub.acknowledged, sub.dropped_, sub.ack_ms, sub.state = ev.acknowledged, ev.dropped, ev.ack_ms, ev.state


def _sub_notified(state: SessionState, ev: SubNotified, _e: TimelineEvent) -> None:
    if (sub := _subscription_of(state, ev.sub)) is not None:
        sub.total += 1
        sub.notifications.append(ev.notification)
        del sub.notifications[:-HISTORY]


SUBSCRIPTION_PROBLEMS = 20  # the latest problems kept per subscription


def _sub_problem(state: SessionState, ev: SubProblem, _e: TimelineEvent) -> None:
    if (sub := _subscription_of(state, ev.sub)) is not None:
        sub.problems.append(ev.problem)
        del sub.problems[:-SUBSCRIPTION_PROBLEMS]


def _sub_ended(state: SessionState, ev: SubEnded, _e: TimelineEvent) -> None:
    if (sub := _subscription_of(state, ev.sub)) is not None:
        sub.state = ev.state


def _sub_snapshot(state: SessionState, ev: SubscriptionSnapshot, _e: TimelineEvent) -> None:
    """A version 2 log's snapshot: the whole subscription at that point, and the notifications it added."""
    sub = _new_subscription(state, ev.sub, ev.requested)
    sub.requested, sub.state, sub.acknowledged, sub.dropped_ = ev.requested, ev.state, ev.acknowledged, ev.dropped
    sub.subscription_id, sub.exchange_key, sub.ack_ms = ev.subscription_id, ev.exchange, ev.ack_ms
    sub.reconnects, sub.problems, sub.total = ev.reconnects, list(ev.problems), ev.total
    sub.resume = False
    last = sub.notifications[-1].get("at", 0) if sub.notifications else None
    for n in ev.notifications:  # v1 snapshots repeat the last 20: keep only what is newer
        if last is None or n.get("at", 0) > last:
            sub.notifications.append(n)
            last = n.get("at", 0)
    del sub.notifications[:-HISTORY]


def _link_created(state: SessionState, ev: LinkCreated, _e: TimelineEvent) -> None:
    state.links[ev.id] = {**ev.to_data(), "revoked": None}


def _link_revoked(state: SessionState, ev: LinkRevoked, _e: TimelineEvent) -> None:
    if ev.id in state.links:
        state.links[ev.id]["revoked"] = ev.revoked


def _era(state: SessionState, ev: EraNegotiated, _e: TimelineEvent) -> None:
    state.era = ev.to_data()


def _doctor(state: SessionState, ev: DoctorRan, _e: TimelineEvent) -> None:
    # A run that starts keeps the last report on show until its own replaces it
    report = ev.report or ((state.doctor or {}).get("report") if ev.running else {})
    state.doctor = {"running": ev.running, "report": report or {}}


def _deadline_extended(state: SessionState, ev: DeadlineExtended, _e: TimelineEvent) -> None:
    entry = state.entries.get(ev.key)
    if entry is not None:
        entry["deadline_extensions"] = ev.extensions


FINDINGS_PER_ENTRY = 50  # kept on one entry for display; the counts (and the store) have them all


def _finding(state: SessionState, ev: FindingRecorded, _e: TimelineEvent) -> None:
    state.findings[ev.rule] = state.findings.get(ev.rule, 0) + 1
    # A round's finding shows on its operation's entry, as its server requests do.
    entry = state.entries.get(host_key(state, ev.exchange)) if ev.exchange else None
    if entry is not None:
        found = entry.setdefault("findings", [])
        if len(found) < FINDINGS_PER_ENTRY:
            found.append(ev.to_data())
        entry["finding_count"] = entry.get("finding_count", 0) + 1


_HANDLERS: dict[type[Any], Any] = {
    FindingRecorded: _finding,
    DeadlineExtended: _deadline_extended, EraNegotiated: _era, DoctorRan: _doctor,
    Restored: _restored, TakenOver: _taken_over, SessionCreated: _created, StatusChanged: _status,
    Discovered: _discovered, ListsRefreshed: _lists, SurfaceRecorded: _surface,
    CapabilitiesChanged: _capabilities, RootsChanged: _roots, SessionRenamed: _renamed, AuthChanged: _auth,
    AppChanged: _app,
    RequestSettingsChanged: _request_settings,
    ExchangeStarted: _exchange, ExchangeFinished: _exchange, Notice: _notice, OperationSnapshot: _op_snapshot,
    OpStarted: _op_started, OpRound: _op_round, OpAnswered: _op_answered, OpRefused: _op_refused, OpEnded: _op_ended,
    OpTask: _op_task,
    CancelRequested: _cancel_requested,
    Progress: _progress, Log: _log, Stderr: _stderr, SubscriptionSnapshot: _sub_snapshot,
    SubStarted: _sub_started, SubListening: _sub_listening, SubAcknowledged: _sub_acknowledged,
    SubNotified: _sub_notified, SubProblem: _sub_problem, SubEnded: _sub_ended,
    LinkCreated: _link_created, LinkRevoked: _link_revoked, ServerRequestSnapshot: _sr_snapshot,
    SrAsked: _sr_asked, SrRefused: _sr_refused, SrEnded: _sr_ended,
}


def fold(session_id: str, events: list[TimelineEvent], window: int = 200) -> SessionState:
    state = SessionState(session_id, window=window)
    for event in events:
        apply(state, event)
    return state


def projection(state: SessionState) -> Json:
    """Everything the fold writes, as JSON-able data: two states are the same when these are equal."""
    return {
        "target": state.target, "read_only": state.read_only, "status": state.status,
        "status_message": state.status_message, "connects": state.connects, "last_id": state.last_id,
        "capabilities": state.capabilities, "discover": state.discover, "era": state.era, "lists": state.lists,
        "doctor": state.doctor, "roots": state.roots, "label": state.label, "auth": state.auth,
        "ever_connected": state.ever_connected,
        "request_settings": [state.log_level, state.progress_enabled, state.auto_refresh, state.idle_timeout_s,
                             state.max_s],
        "status_since": state.status_since, "findings": state.findings,
        "stderr_counts": [state.stderr_stored, state.stderr_dropped], "stderr_current": state.stderr_current,
        "operations": [op.to_json() for op in state.operations.values()],
        "subscriptions": [{**s.snapshot(), "notifications": s.notifications} for s in state.subscriptions.values()],
        "server_requests": [r.to_json() for r in state.server_requests.values()],
        "links": list(state.links.values()), "stderr": state.stderr, "store_quota_reached": state.store_quota_reached,
        "seq": state.seq, "entries": list(state.entries.values()), "rounds": list(state.rounds.values()),
        "evicted": state.evicted, "entry_count": state.entry_count,
        "surface": state.surface, "surfaces": state.surfaces,
    }


