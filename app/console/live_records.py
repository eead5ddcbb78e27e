"""What the fold (`app/console/state.py`) keeps of what lives across requests: an operation, a request from the
server, a subscription. Plain records, the same live and after a restart or an import; pages, JSON twins and the
drivers read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.console.live_events import OperationSnapshot, ServerRequestSnapshot

Json = dict[str, Any]
ROUNDS_KEPT = 1000  # rounds an operation keeps in the fold (see OperationRecord.put_round)


class ErrorInfo(dict[str, Any]):
    """A recorded reply error: shows as its message (as a live error does), keeps code and data."""

    def __str__(self) -> str:
        return str(self.get("message", ""))

    def __getattr__(self, name: str) -> Any:  # templates read error.data like a live error's attribute
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(name) from exc


@dataclass(slots=True)
class FinalReply:
    """An operation's final reply as recorded (the shape of `reply_json`), readable by the result template."""

    data: Json

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "error":
            err = self.data.get("error")
            return ErrorInfo(err) if isinstance(err, dict) else err
        # A reply field the record lacks, or holds as another type (an imported file's final reply may be anything
        # of an object), reads as a live reply's would when empty: the result template reads them as attributes.
        value = self.data.get(name)
        if name in ("warnings", "notifications"):
            return value if isinstance(value, list) else []
        if name in ("result", "params"):
            return value if isinstance(value, dict) else None
        if name == "ok":
            return value is True
        return value


@dataclass(slots=True)
class OperationRecord:
    """An operation as the fold knows it: the same record live and after a restart or an import."""

    id: str
    key: str
    method: str = ""
    name: Any = None
    status: str = "running"
    message: str = ""
    started: float = 0.0
    rounds: list[Json] = field(default_factory=list)
    pending: Json = field(default_factory=dict)        # input key → input request
    answers: list[str] = field(default_factory=list)   # the input keys answered so far in this round
    errors: Json = field(default_factory=dict)
    drafts: Json = field(default_factory=dict)
    required_capabilities: Json | None = None
    replay_of: str | None = None
    params: Json = field(default_factory=dict)
    final: FinalReply | None = None
    validation: Json | None = None
    log_level: str | None = None
    # input key → the answer given in this round, until the retry carries them (never shown: what a person typed)
    answer_values: Json = field(default_factory=dict)
    task: Json | None = None  # the task a tools/call became (the task machine's data, app/mcp/task.py)
    via: str | None = None  # the entry that led to it (an MCP App's bridge request)

    @classmethod
    def of(cls, ev: OperationSnapshot) -> OperationRecord:
        return cls(id=ev.op, key=ev.key, method=ev.method, name=ev.name, status=ev.status, message=ev.message,
                   started=ev.started, rounds=[dict(r) for r in ev.rounds], pending=dict(ev.pending_requests),
                   answers=list(ev.answered), errors=dict(ev.errors), drafts=dict(ev.drafts),
                   required_capabilities=ev.required_capabilities, replay_of=ev.replay_of, params=dict(ev.params),
                   final=FinalReply(ev.final) if ev.final is not None else None, validation=ev.validation,
                   log_level=ev.log_level)

    def summary(self) -> Json:
        """What its timeline entry shows (the record keeps params, the input requests, what was typed, the reply).
        Its rounds are the record's round objects (a round changed is replaced, never changed in place), in a list
        of its own: a copy of each on every change of an operation of thousands of rounds was quadratic."""
        return {"key": self.key, "op": self.id, "method": self.method, "name": self.name, "status": self.status,
                "message": self.message, "started": self.started, "rounds": list(self.rounds),
                "pending": sorted(self.pending), "answered": sorted(self.answers),
                "required_capabilities": self.required_capabilities, "replay_of": self.replay_of, "task": self.task,
                "via": self.via}

    def put_round(self, data: Json) -> None:
        """A round as it now stands: replaces the one of its number, or comes after the last. At most
        ROUNDS_KEPT rounds are kept, the latest (a live operation stops at the setting mrtr_max_rounds, 10 by
        default; a file may hold any number, and every change of an operation costs as many as it keeps)."""
        n = data.get("n")
        rounds = self.rounds
        if rounds and rounds[-1].get("n") == n:  # the usual cases first: the last round changed, or a new one
            rounds[-1] = dict(data)
            return
        if rounds and not (isinstance(n, int) and isinstance(rounds[-1].get("n"), int) and n > rounds[-1]["n"]):
            for i in range(len(rounds) - 1, -1, -1):
                if rounds[i].get("n") == n:
                    rounds[i] = dict(data)
                    return
        rounds.append(dict(data))
        if len(rounds) > ROUNDS_KEPT:
            del rounds[0]

    @property
    def asking_round(self) -> Any:
        """The number of the last round (the one an answer must be written for)."""
        return self.rounds[-1].get("n") if self.rounds else None

    def to_json(self, with_final: bool = True) -> Json:
        """The JSON twin's operation: the snapshot keys, the input requests, errors and the final reply.

        `with_final=False` leaves the final reply out, for an answer that carries that reply itself (a script's
        call): it was every byte of the answer twice, and the client's parse of it is part of every call's time.
        """
        data = {"key": self.key, "op": self.id, "method": self.method, "name": self.name, "status": self.status,
                "message": self.message, "started": self.started, "rounds": self.rounds,
                "pending": sorted(self.pending), "answered": sorted(self.answers),
                "required_capabilities": self.required_capabilities, "replay_of": self.replay_of,
                "pending_requests": self.pending, "errors": self.errors, "task": self.task}
        if with_final:
            data["final"] = self.final.data if self.final is not None else None
        return data


@dataclass(slots=True)
class ServerRequestRecord:
    """A request from the server as the fold knows it, shaped for the MRTR dialog macro.

    The dialog reads `errors`, `drafts` and `answers` by input key; a server request has one question,
    keyed by the server's JSON-RPC id (`dialog_key`), and `request` is it in the MRTR input-request shape.
    """

    ev: ServerRequestSnapshot  # the question and where it stands, in the shape version 2 recorded it

    @property
    def id(self) -> str:
        return self.ev.id

    @property
    def status(self) -> str:
        return self.ev.status

    @property
    def dialog_key(self) -> str:
        return str(self.ev.request_id)

    @property
    def request(self) -> Json:
        return {"method": self.ev.method, "params": self.ev.params}

    @property
    def errors(self) -> Json:
        return {self.dialog_key: self.ev.errors} if self.ev.errors else {}

    @property
    def drafts(self) -> Json:
        return {self.dialog_key: self.ev.drafts} if self.ev.drafts else {}

    @property
    def answers(self) -> list[str]:
        return [] if self.ev.status == "awaiting" else [self.dialog_key]

    def summary(self) -> Json:
        """What the carrying entry shows of it (the record keeps params and drafts)."""
        return {k: v for k, v in self.ev.to_data().items() if k not in ("params", "drafts", "errors")}

    def to_json(self) -> Json:
        return self.ev.to_data()


@dataclass(slots=True)
class SubscriptionRecord:
    id: str
    requested: Json
    state: str = "opening"
    acknowledged: Json | None = None
    dropped_: Json | None = None
    subscription_id: Any = None
    exchange_key: str | None = None
    ack_ms: float | None = None
    reconnects: int = 0
    problems: list[str] = field(default_factory=list)
    total: int = 0
    notifications: list[Json] = field(default_factory=list)  # the history, oldest first, bounded
    resume: bool = False  # it was live when the console went down: Reconnect listens again

    def dropped(self) -> Json:
        return self.dropped_ or {}

    def snapshot(self) -> Json:
        return {"sub": self.id, "requested": self.requested, "acknowledged": self.acknowledged,
                "dropped": self.dropped_, "state": self.state, "subscription_id": self.subscription_id,
                "ack_ms": self.ack_ms, "reconnects": self.reconnects, "problems": list(self.problems),
                "total": self.total, "exchange": self.exchange_key, "notifications": self.notifications[-20:]}
