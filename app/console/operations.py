"""Operations: one logical request (tools/call, prompts/get, resources/read) and its MRTR rounds.

The console gives each operation its own id and links rounds by it, never by comparing
requestState strings (servers rotate them, some rounds carry none, operations interleave).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from app.console.events import OperationChanged
from app.console.outputs import validate_structured
from app.console.state import OperationRecord
from app.mcp import mrtr
from app.mcp.client import KNOWN_RESULT_TYPES, Reply
from app.mcp.state import analyze, compare

if TYPE_CHECKING:
    from app.console.runner import RequestRunner
    from app.console.timeline import Timeline

OpStatus = Literal["running", "awaiting_input", "complete", "tool_error", "error", "cancelled", "capped",
                   "abandoned"]
_op_ids = itertools.count(1)
MAX_KEPT = 500
# Inputs one input_required round may ask for. Each is a dialog on every tab, and each answer re-records the
# operation with all of them: 5,000 made a 10 MB session page and a 1 MB event per answer. Real servers ask for a few.
MAX_INPUT_REQUESTS = 100


@dataclass(slots=True)
class Round:
    n: int
    key: str                      # the exchange key of this round's request
    request_id: int | str
    sent: float                   # wall clock: request sent
    received: float | None = None  # wall clock: final answer for this round
    server_ms: float | None = None
    status: str = "pending"
    input_keys: list[str] = field(default_factory=list)
    input_kinds: dict[str, str] = field(default_factory=dict)
    state: str | None = None
    state_info: dict[str, Any] | None = None
    state_change: str = ""
    answered: float | None = None  # wall clock: the last answer given (human time ends)
    retried_at_once: bool = False  # a requestState-only round is retried without asking anyone

    @property
    def human_ms(self) -> float | None:
        if self.received is None or self.answered is None:
            return None
        return (self.answered - self.received) * 1000


@dataclass(slots=True)
class Operation:
    id: str
    method: str
    params: dict[str, Any]        # the original params, without _meta
    started: float = field(default_factory=time.time)
    status: OpStatus = "running"
    message: str = ""
    rounds: list[Round] = field(default_factory=list)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)   # key → input request
    answers: dict[str, Any] = field(default_factory=dict)              # key → response value
    errors: dict[str, dict[str, str]] = field(default_factory=dict)    # key → field → message
    drafts: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # key → what was typed (refused)
    required_capabilities: dict[str, Any] | None = None
    final: Reply | None = None
    validation: dict[str, Any] | None = None  # structuredContent checked against outputSchema
    replay_of: str | None = None              # the exchange key this operation re-sends
    first_params: dict[str, Any] | None = None
    log_level: str | None = None  # this operation's own _meta logLevel (else the session's)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    recorded: OperationChanged | None = field(default=None, repr=False)  # the last snapshot appended

    @property
    def key(self) -> str:
        return f"op-{self.id}"

    @property
    def name(self) -> Any:
        return self.params.get("name") or self.params.get("uri")

    @property
    def last(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    def snapshot(self) -> OperationChanged:
        """What the timeline records for this operation: a full snapshot, enough to show it after a restart."""
        return OperationChanged(
            key=self.key, op=self.id, method=self.method, name=self.name, status=self.status, message=self.message,
            started=self.started, rounds=[_round_data(r) for r in self.rounds],
            pending=sorted(self.pending), answered=sorted(self.answers),
            required_capabilities=self.required_capabilities, replay_of=self.replay_of, params=self.params,
            pending_requests=dict(self.pending), errors=dict(self.errors), drafts=dict(self.drafts),
            final=reply_json(self.final) if self.final is not None else None, validation=self.validation,
            log_level=self.log_level)


def _round_data(r: Round) -> dict[str, Any]:
    """A round as its snapshot records it: `asdict` plus `human_ms`, spelled out (asdict's generic deep copy was
    most of a snapshot's cost, two snapshots per call). The lists and dicts are copied, as asdict copies them."""
    return {"n": r.n, "key": r.key, "request_id": r.request_id, "sent": r.sent, "received": r.received,
            "server_ms": r.server_ms, "status": r.status, "input_keys": list(r.input_keys),
            "input_kinds": dict(r.input_kinds), "state": r.state,
            "state_info": copy.deepcopy(r.state_info) if r.state_info is not None else None,
            "state_change": r.state_change, "answered": r.answered, "retried_at_once": r.retried_at_once,
            "human_ms": r.human_ms}


def reply_json(reply: Reply) -> dict[str, Any]:
    """A reply as JSON: what the JSON twins show and what an operation's final event records."""
    return {
        "key": reply.key,
        "id": reply.id,
        "method": reply.method,
        "params": reply.params,
        "ok": reply.ok,
        "result": reply.result,
        "result_type": reply.result_type,
        "error": _error_json(reply),
        "duration_ms": reply.duration_ms,
        "warnings": reply.warnings,
        "notification_count": reply.notification_count,
        "notifications": [f.message for f in reply.notifications],  # the last ones; the wire has all
    }


def _error_json(reply: Reply) -> dict[str, Any] | None:
    err = reply.error
    if err is None:
        return None
    data: dict[str, Any] = {"type": type(err).__name__, "message": str(err)}
    for attr in ("code", "data", "http_status", "name"):
        if hasattr(err, attr):
            data[attr] = getattr(err, attr)
    return data


def is_stale(op: Operation, round_: int | None) -> bool:
    """An answer written for another round than the one now asking (None: the caller did not say)."""
    return round_ is not None and round_ != len(op.rounds)


class OperationDriver:
    """Runs rounds for a session's operations and keeps them (pending ones survive a page reload).

    It sends through a `RequestRunner` and records every change as an `OperationChanged` on the
    timeline; what it reads back (ids in use, awaiting operations) comes from the timeline's fold.
    """

    def __init__(self, runner: RequestRunner, timeline: Timeline) -> None:
        self.runner = runner
        self.timeline = timeline
        self.ops: dict[str, Operation] = {}
        # The lowest number a new id may take. Read from the fold once, at the first new operation (a restored
        # session has folded its events by then); after that every id is made here, so it only moves up.
        # Scanning the fold on every call cost a string split per kept operation on each tools/call.
        self._floor: int | None = None

    def _known_floor(self) -> int:
        known = [*self.timeline.state.operations, *self.ops]
        numbers = (int(k.split("-", 1)[0]) + 1 for k in known if k.split("-", 1)[0].isdigit())
        return max(numbers, default=0)

    def _new_id(self) -> str:
        """Unique within the session, also after a restart: past the ids the fold already knows."""
        if self._floor is None:
            self._floor = self._known_floor()
        n = max(next(_op_ids), self._floor)
        self._floor = n + 1
        return f"{n}-{self.timeline.session_id[:4]}"

    def awaiting(self) -> list[OperationRecord]:
        """Operations waiting for answers, as the fold knows them (the page renders records)."""
        return [op for op in self.timeline.state.operations.values() if op.status == "awaiting_input"]

    def record_of(self, op: Operation) -> OperationRecord:
        """The record the fold makes of the operation's last snapshot (made here: while its request is held the
        fold has not seen it yet); an operation not yet recorded (its first round not started) shows as it is."""
        if op.recorded is not None:
            return OperationRecord.of(op.recorded)
        return self.timeline.state.operations.get(op.id) or OperationRecord.of(op.snapshot())

    def refuse(self, op: Operation, key: str, errors: dict[str, str], drafts: dict[str, list[str]],
               round_: int | None = None) -> None:
        """An answer that did not pass the checks: keep what was typed and say why, in every tab."""
        if op.status != "awaiting_input" or key not in op.pending or key in op.answers or is_stale(op, round_):
            return
        op.errors[key], op.drafts[key] = errors, drafts
        self._record(op)

    def _record(self, op: Operation) -> None:
        op.recorded = op.snapshot()
        self.timeline.append(op.recorded)

    def record(self, op: Operation) -> None:
        """Re-publish an operation as it stands (e.g. its deadline moved): every tab re-renders it."""
        self._record(op)

    def create(self, method: str, params: dict[str, Any], replay_of: str | None = None,
               keep_mrtr: bool = False, log_level: str | None = None) -> Operation:
        """A new operation. A replay keeps inputResponses/requestState in its first round (as it was sent)."""
        op = Operation(id=self._new_id(), method=method,
                       params={k: v for k, v in params.items() if k not in mrtr.MRTR_KEYS}, replay_of=replay_of)
        op.first_params = {k: v for k, v in params.items() if k != "_meta"} if keep_mrtr else dict(op.params)
        op.log_level = log_level
        self.ops[op.id] = op
        if len(self.ops) > MAX_KEPT:  # bounded: finished operations live on in the timeline store
            oldest = next((k for k, o in self.ops.items() if o.status not in ("awaiting_input", "running")),
                          next(iter(self.ops)))
            del self.ops[oldest]
        return op

    async def run(self, op: Operation) -> Operation:
        async with op.lock:
            await self._run_round(op, dict(op.first_params or op.params))
        return op

    async def start(self, method: str, params: dict[str, Any]) -> Operation:
        return await self.run(self.create(method, params))

    async def cancel(self, op: Operation, who: str) -> bool:
        rnd = op.last
        if op.status != "running" or rnd is None or not rnd.key:
            return False
        return await self.runner.cancel(rnd.key, who)

    async def _run_round(self, op: Operation, params: dict[str, Any]) -> None:
        """Send one round and follow requestState-only rounds at once, until input or an end."""
        while True:
            cap = self.runner.mrtr_max_rounds
            if len(op.rounds) >= cap:
                op.status = "capped"
                op.message = f"Stopped after {len(op.rounds)} rounds (the cap is {cap}; setting mrtr_max_rounds)."
                self._record(op)
                return
            op.status, op.message = "running", ""
            n = len(op.rounds) + 1
            rnd = Round(n=n, key="", request_id="", sent=time.time())
            op.rounds.append(rnd)

            def started(key: str, request_id: Any, rnd: Round = rnd) -> Callable[[], None]:
                rnd.key, rnd.request_id = key, request_id
                return functools.partial(self._record, op)

            reply = await self.runner.run(op.method, params, op=op.id, round_=n, on_start=started,
                                           log_level=op.log_level)
            if not self._take_reply(op, rnd, reply):
                self._record(op)
                return
            state = rnd.state
            if op.pending:
                op.status = "awaiting_input"
                self._record(op)
                return
            # Only requestState came back (e.g. load shedding): retry at once, and say so.
            rnd.retried_at_once = True
            rnd.answered = time.time()
            params = mrtr.retry_params(op.params, {}, state)

    def _take_reply(self, op: Operation, rnd: Round, reply: Reply) -> bool:
        """Fold one round's reply into the operation. True when more input (or a retry) is needed."""
        rnd.received = time.time()
        rnd.server_ms = reply.duration_ms
        op.pending, op.answers, op.errors, op.drafts = {}, {}, {}, {}
        if reply.error is not None:
            rnd.status = "error"
            op.final = reply
            op.status = "cancelled" if type(reply.error).__name__ == "RequestCancelled" else "error"
            op.message = f"Cancelled: {reply.error}" if op.status == "cancelled" else str(reply.error)
            data = getattr(reply.error, "data", None)
            if getattr(reply.error, "code", None) == -32021 and isinstance(data, dict):
                wanted = data.get("requiredCapabilities")
                if isinstance(wanted, dict):  # capability names to values: what Enable and retry merges
                    op.required_capabilities = wanted
                else:  # a list or a string names nothing to enable: said, and no button is offered
                    op.message += " (its requiredCapabilities is not an object: nothing to enable)"
            return False
        result = reply.result or {}
        result_type = reply.result_type  # read once: a property that looks into the result each time
        if result_type not in KNOWN_RESULT_TYPES:
            # The spec: a resultType the client does not recognise MUST be treated as invalid.
            rnd.status = op.status = "error"
            op.final = reply
            old = ' (the pre-release name of "input_required")' if result_type == "incomplete" else ""
            op.message = f"Invalid result: unknown resultType {result_type!r}{old}."
            return False
        if result_type != "input_required":
            rnd.status = result_type or "complete"
            op.final = reply
            op.status = "complete"
            if result.get("isError") is True:  # the tool ran and failed: a result, but an error one
                rnd.status = op.status = "tool_error"
            if op.method == "tools/call":  # checked before the final event, so every tab shows it
                tool = next((t for t in self.runner.lists.get("tools", []) if t.get("name") == op.name), None)
                op.validation = validate_structured(tool, result)
            return False
        rnd.status = "input_required"
        problem = mrtr.shape_problem(result)
        previous = op.rounds[-2].state if len(op.rounds) > 1 else None
        rnd.state = mrtr.request_state(result)
        rnd.state_info = analyze(rnd.state) if rnd.state is not None else None
        rnd.state_change = compare(previous, rnd.state)
        requests = mrtr.input_requests(result)
        if len(requests) > MAX_INPUT_REQUESTS:  # the frame itself stays on the wire record, as it came
            op.status, op.final = "error", reply
            op.message = (f"input_required asks for {len(requests)} inputs in one round; the console takes at most "
                          f"{MAX_INPUT_REQUESTS}.")
            return False
        rnd.input_keys = list(requests)
        rnd.input_kinds = {k: mrtr.kind_of(v) for k, v in requests.items()}
        if problem and not requests and rnd.state is None:
            op.status, op.message, op.final = "error", problem, reply
            return False
        if problem or ("requestState" in result and rnd.state is None):
            op.message = f"Malformed input_required: {problem or 'requestState is not a string'}"
        op.pending = requests
        return True

    async def answer(self, op: Operation, key: str, value: Any, round_: int | None = None) -> bool:
        """Record one answer; when every input request of the round is answered, send the retry.

        `round_` is the round the answer was written for: servers may ask again under the same key, and an answer
        to the last round's question (another tab's, or one that waited on the lock while the retry ran) must not
        become the answer to a question nobody here has read. A key already answered in this round keeps its
        first answer: a second one (another tab's dialog, sent before the push reached it) is not taken, so what
        goes back is what the person who answered first was shown and chose. False when nothing was taken."""
        async with op.lock:
            if op.status != "awaiting_input" or key not in op.pending or key in op.answers or is_stale(op, round_):
                return False
            op.answers[key] = value
            op.errors.pop(key, None)
            op.drafts.pop(key, None)
            rnd = op.last
            if set(op.answers) < set(op.pending):
                self._record(op)
                return True
            assert rnd is not None
            rnd.answered = time.time()
            params = mrtr.retry_params(op.params, dict(op.answers), rnd.state)
            await self._run_round(op, params)
            return True

    async def abandon(self, op: Operation, why: str, round_: int | None = None) -> bool:
        """Give up an operation awaiting input. `round_` is the round the person giving up was shown (None: not
        said): once another tab's answer has brought a new question, giving up is for that one to decide, not
        for a tab that has not read it. False when nothing was abandoned."""
        async with op.lock:
            if op.status != "awaiting_input" or is_stale(op, round_):
                return False
            op.status, op.message, op.pending = "abandoned", why, {}
            self._record(op)
            return True

    async def enable_and_retry(self, op: Operation) -> bool:
        """After -32021: merge the capabilities the server asked for, then run the operation again.

        Only an operation that ended in that error is run again: the retry re-sends the whole request, and for
        one that completed (or that another tab already enabled and retried) that would run a side-effecting tool
        twice. Checked under the lock, so of two tabs pressing at once only the first retries. False when
        nothing was enabled or sent."""
        async with op.lock:
            if op.status != "error" or not op.required_capabilities:
                return False
            wanted = op.required_capabilities
            caps = dict(self.runner.capabilities)
            for name, value in wanted.items():
                caps[name] = {**(caps.get(name) or {}), **(value if isinstance(value, dict) else {})}
            self.runner.set_capabilities(caps, saved=False)
            op.required_capabilities = None
            op.status = "running"
            await self._run_round(op, dict(op.params))
            return True
