"""The transitions of what lives across requests: an operation and its rounds, a request from the server, a
listen subscription (event version 3). Each names what it changes; the fold (`app/console/state.py`) builds the
operation, the question or the subscription from them. Version 2 recorded a full snapshot of each at every
change: those are read as `op_snapshot`, `sr_snapshot` and `sub_snapshot` (`events.migrate_v2`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from app.console.record import Json, Record


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
    via: str | None = None  # the entry that led to it: an MCP App's bridge request (app/console/apps.py)


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


@dataclass(slots=True)
class OpTask(Record):
    """A tools/call round was answered with a task (2026-07-28, the tasks extension), and each step of following
    it: created, polled, asking for input, answered with tasks/update, cancelling. `task` is the task machine's
    plain data (app/mcp/task.py `to_data`), so a restart resumes polling from it; the operation stays running (or
    awaiting input while the task asks) until its `op_ended`."""

    KIND = "op_task"
    kind: Literal["op_task"] = field(default="op_task", init=False)
    key: str = ""
    op: str = ""
    task: Json = field(default_factory=dict)
    status: str = "running"         # the operation's: running | awaiting_input
    message: str = ""
    pending_requests: Json = field(default_factory=dict)  # input key → input request, asked and not yet sent
    answered: list[str] = field(default_factory=list)     # of those, the keys answered (sent with tasks/update
    #                                                       once every one is)
    via: Json | None = None  # {key, method}: the tasks/get|update|cancel exchange this step came from


OP_RECORDS: tuple[type[Record], ...] = (OperationSnapshot, OpStarted, OpRound, OpAnswered, OpRefused, OpEnded,
                                        OpTask)
OP_KINDS = tuple(cls.KIND for cls in OP_RECORDS)


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
