"""One logical request and its Multi Round-Trip rounds, as a sans-I/O state machine.

A `tools/call`, `prompts/get` or `resources/read` may answer `resultType: "input_required"` with `inputRequests`
and `requestState`; the client answers and sends the request again under a new id, with the original params, the
answers keyed as the server keyed its requests, and the state echoed byte for byte. This machine is that protocol
and nothing else: it sends nothing and waits for nothing. It takes events (a round's reply, an answer, giving up,
enabling capabilities) and returns what to do next:

- `SendRound(round, params)`: send the request with these params; feed the reply to `took`;
- `AskInput(round, requests)`: these input requests wait for answers; feed each to `answer`;
- `Ended(status, message)`: the operation is over (`final` holds the last reply, when one came).

The console (`app/console/operations.py`) and the command line (`app/headless/runner.py`) both drive it, so the
rounds of one MRTR flow are the same in both. Its whole state is plain data (`revive` builds it again from what
the console's fold recorded): the 2026-07-28 revision keeps no state on the server between rounds, so an
operation waiting for input can be taken up again after the console restarted.

    start ──► SendRound ──took──► Ended (complete, tool_error, error, cancelled)
                 ▲   │
                 │   ├── input_required with requests ──► AskInput ──answer (all keys)──┐
                 │   └── requestState only: sent again at once ─┐                        │
                 └──────────────────────────────────────────────┴────────────────────────┘
    (more than max_rounds rounds: Ended "capped"; abandon while asking: Ended "abandoned")
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.mcp import mrtr
from app.mcp.client import KNOWN_RESULT_TYPES, Reply
from app.mcp.state import analyze, compare

OpStatus = Literal["running", "awaiting_input", "complete", "tool_error", "error", "cancelled", "capped",
                   "abandoned"]
ENDED: tuple[OpStatus, ...] = ("complete", "tool_error", "error", "cancelled", "capped", "abandoned")
# Inputs one input_required round may ask for. Each is a dialog on every tab, and each answer re-records the
# operation with all of them: 5,000 made a 10 MB session page and a 1 MB event per answer. Real servers ask for a few.
MAX_INPUT_REQUESTS = 100


@dataclass(slots=True)
class Round:
    n: int
    key: str                      # the exchange key of this round's request (set by the driver when it is sent)
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

    def to_data(self) -> dict[str, Any]:
        """The round as plain data (its lists and dicts copied), `human_ms` spelled out."""
        return {"n": self.n, "key": self.key, "request_id": self.request_id, "sent": self.sent,
                "received": self.received, "server_ms": self.server_ms, "status": self.status,
                "input_keys": list(self.input_keys), "input_kinds": dict(self.input_kinds), "state": self.state,
                "state_info": copy.deepcopy(self.state_info) if self.state_info is not None else None,
                "state_change": self.state_change, "answered": self.answered,
                "retried_at_once": self.retried_at_once, "human_ms": self.human_ms}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Round:
        return cls(n=int(data["n"]), key=str(data.get("key", "")), request_id=data.get("request_id", ""),
                   sent=float(data.get("sent") or 0.0), received=data.get("received"),
                   server_ms=data.get("server_ms"), status=str(data.get("status", "pending")),
                   input_keys=list(data.get("input_keys") or []), input_kinds=dict(data.get("input_kinds") or {}),
                   state=data.get("state"), state_info=data.get("state_info"),
                   state_change=str(data.get("state_change", "")), answered=data.get("answered"),
                   retried_at_once=bool(data.get("retried_at_once")))


@dataclass(frozen=True, slots=True)
class SendRound:
    round: Round
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AskInput:
    round: int
    requests: dict[str, dict[str, Any]]  # the keys still unanswered in this round


@dataclass(frozen=True, slots=True)
class Ended:
    status: OpStatus
    message: str


Command = SendRound | AskInput | Ended


class OperationMachine:
    """The rounds of one operation. Not thread- or task-safe on its own: a driver serialises events to it."""

    def __init__(self, method: str, params: dict[str, Any], *, max_rounds: int,
                 first_params: dict[str, Any] | None = None, clock: Callable[[], float] = time.time,
                 cap_hint: str = "") -> None:
        self.method = method
        self.params = {k: v for k, v in params.items() if k not in mrtr.MRTR_KEYS}  # the original, without _meta
        # What round 1 sends: the original params, or (a replay of a recorded round) what that round sent.
        self.first_params = dict(first_params) if first_params is not None else dict(self.params)
        self.max_rounds = max_rounds
        self.cap_hint = cap_hint  # where the cap is set, for the message that says it was reached
        self.clock = clock
        self.started = clock()
        self.status: OpStatus = "running"
        self.message = ""
        self.rounds: list[Round] = []
        self.pending: dict[str, dict[str, Any]] = {}   # key → input request
        self.answers: dict[str, Any] = {}              # key → response value
        self.errors: dict[str, dict[str, str]] = {}    # key → field → message (a refused answer)
        self.drafts: dict[str, dict[str, list[str]]] = {}  # key → what was typed (a refused answer)
        self.required_capabilities: dict[str, Any] | None = None  # after -32021: what "enable and retry" merges
        self.final: Reply | None = None

    @property
    def name(self) -> Any:
        return self.params.get("name") or self.params.get("uri")

    @property
    def last(self) -> Round | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def is_stale(self, round_: int | None) -> bool:
        """An answer written for another round than the one now asking (None: the caller did not say)."""
        return round_ is not None and round_ != len(self.rounds)

    # -- events ---------------------------------------------------------------------------------------

    def start(self) -> Command:
        return self._next_round(dict(self.first_params))

    def took(self, reply: Reply) -> Command:
        """The reply to the last round's request."""
        rnd = self.last
        assert rnd is not None and rnd.status == "pending", "a reply needs a round in flight"
        rnd.received = self.clock()
        rnd.server_ms = reply.duration_ms
        self.pending, self.answers, self.errors, self.drafts = {}, {}, {}, {}
        ended = self._ending(rnd, reply)
        if ended is not None:
            return ended
        if self.pending and len(self.rounds) >= self.max_rounds:
            # No retry may follow: asking would take answers that are never sent.
            self.pending = {}
            return self._capped(f"round {rnd.n} asked for input again")
        if self.pending:
            self.status = "awaiting_input"
            return AskInput(rnd.n, dict(self.pending))
        # Only requestState came back (e.g. load shedding): sent again at once, and said so on the round (no person
        # answered it: it has no human time).
        rnd.retried_at_once = True
        return self._next_round(mrtr.retry_params(self.params, {}, rnd.state))

    def answer(self, key: str, value: Any, round_: int | None = None) -> Command | None:
        """One answer. None when it is not taken: the operation is not asking, the key is not asked or already
        answered (the first answer stands: it is what the person who answered first was shown and chose), or
        it was written for another round. When every request of the round is answered: the retry."""
        if self.status != "awaiting_input" or key not in self.pending or key in self.answers \
                or self.is_stale(round_):
            return None
        self.answers[key] = value
        self.errors.pop(key, None)
        self.drafts.pop(key, None)
        rnd = self.last
        assert rnd is not None
        unanswered = {k: v for k, v in self.pending.items() if k not in self.answers}
        if unanswered:
            return AskInput(rnd.n, unanswered)
        rnd.answered = self.clock()
        return self._next_round(mrtr.retry_params(self.params, dict(self.answers), rnd.state))

    def refuse(self, key: str, errors: dict[str, str], drafts: dict[str, list[str]],
               round_: int | None = None) -> bool:
        """An answer that did not pass the driver's checks: keep what was typed and why. False: not asking."""
        if self.status != "awaiting_input" or key not in self.pending or key in self.answers \
                or self.is_stale(round_):
            return False
        self.errors[key], self.drafts[key] = errors, drafts
        return True

    def abandon(self, why: str, round_: int | None = None) -> Ended | None:
        """Give up while asking; None when it is not asking or the round moved on."""
        if self.status != "awaiting_input" or self.is_stale(round_):
            return None
        self.status, self.message, self.pending = "abandoned", why, {}
        return Ended("abandoned", why)

    def retry_enabled(self) -> SendRound | None:
        """After -32021 (the server wants capabilities), once the driver enabled them: run the whole operation again.
        Only an operation that ended in that error (never one that completed: that would run a side-effecting tool
        twice); None otherwise."""
        if self.status != "error" or not self.required_capabilities:
            return None
        self.required_capabilities = None
        command = self._next_round(dict(self.params))
        assert isinstance(command, SendRound)
        return command

    # -- inside ---------------------------------------------------------------------------------------

    def _capped(self, why: str) -> Ended:
        hint = f"; {self.cap_hint}" if self.cap_hint else ""
        self.status = "capped"
        self.message = f"Stopped after {len(self.rounds)} rounds: {why} (the cap is {self.max_rounds}{hint})."
        return Ended("capped", self.message)

    def _next_round(self, params: dict[str, Any]) -> Command:
        if len(self.rounds) >= self.max_rounds:
            return self._capped("the server wanted another round")
        self.status, self.message = "running", ""
        rnd = Round(n=len(self.rounds) + 1, key="", request_id="", sent=self.clock())
        self.rounds.append(rnd)
        return SendRound(rnd, params)

    def _ending(self, rnd: Round, reply: Reply) -> Ended | None:
        """Fold one round's reply in; the end it makes, or None when more input (or a retry) is needed."""
        if reply.error is not None:
            rnd.status = "error"
            self.final = reply
            cancelled = type(reply.error).__name__ == "RequestCancelled"
            self.status = "cancelled" if cancelled else "error"
            self.message = f"Cancelled: {reply.error}" if cancelled else str(reply.error)
            data = getattr(reply.error, "data", None)
            if getattr(reply.error, "code", None) == -32021 and isinstance(data, dict):
                wanted = data.get("requiredCapabilities")
                if isinstance(wanted, dict):  # capability names to values: what "enable and retry" merges
                    self.required_capabilities = wanted
                else:  # a list or a string names nothing to enable: said, and nothing is offered
                    self.message += " (its requiredCapabilities is not an object: nothing to enable)"
            return Ended(self.status, self.message)
        result = reply.result or {}
        result_type = reply.result_type  # read once: a property that looks into the result each time
        if result_type not in KNOWN_RESULT_TYPES:
            # The spec: a resultType the client does not recognise MUST be treated as invalid.
            rnd.status = self.status = "error"
            self.final = reply
            old = ' (the pre-release name of "input_required")' if result_type == "incomplete" else ""
            self.message = f"Invalid result: unknown resultType {result_type!r}{old}."
            return Ended("error", self.message)
        if result_type != "input_required":
            rnd.status = result_type or "complete"
            self.final = reply
            self.status = "complete"
            if result.get("isError") is True:  # the tool ran and failed: a result, but an error one
                rnd.status = self.status = "tool_error"
            return Ended(self.status, "")
        return self._input_required(rnd, reply, result)

    def _input_required(self, rnd: Round, reply: Reply, result: dict[str, Any]) -> Ended | None:
        rnd.status = "input_required"
        problem = mrtr.shape_problem(result)
        previous = self.rounds[-2].state if len(self.rounds) > 1 else None
        rnd.state = mrtr.request_state(result)
        rnd.state_info = analyze(rnd.state) if rnd.state is not None else None
        rnd.state_change = compare(previous, rnd.state)
        requests = mrtr.input_requests(result)
        if len(requests) > MAX_INPUT_REQUESTS:  # the frame itself stays on the wire record, as it came
            self.status, self.final = "error", reply
            self.message = (f"input_required asks for {len(requests)} inputs in one round; the console takes at "
                            f"most {MAX_INPUT_REQUESTS}.")
            return Ended("error", self.message)
        rnd.input_keys = list(requests)
        rnd.input_kinds = {k: mrtr.kind_of(v) for k, v in requests.items()}
        if problem and not requests and rnd.state is None:
            self.status, self.message, self.final = "error", problem, reply
            return Ended("error", problem)
        if problem or ("requestState" in result and rnd.state is None):
            self.message = f"Malformed input_required: {problem or 'requestState is not a string'}"
        self.pending = requests
        return None

    # -- taken up again ---------------------------------------------------------------------------------

    def resume(self) -> SendRound | Ended | None:
        """A revived operation whose round was answered in full before the console stopped, but whose retry never
        went out: the retry now (or its end, when the round cap has been lowered meanwhile). None when something is
        still to be answered (or it is not waiting)."""
        rnd = self.last
        if self.status != "awaiting_input" or not self.pending or rnd is None \
                or any(k not in self.answers for k in self.pending):
            return None
        if rnd.answered is None:
            rnd.answered = self.clock()
        command = self._next_round(mrtr.retry_params(self.params, dict(self.answers), rnd.state))
        return command if isinstance(command, SendRound | Ended) else None

    def revive(self, status: OpStatus, message: str, rounds: list[dict[str, Any]],
               pending: dict[str, dict[str, Any]], started: float, answers: dict[str, Any] | None = None) -> None:
        """Take up a recorded operation that was waiting for input (after a restart): its rounds, the requests of
        its last one and the answers already given to them (the retry is sent once every request has one)."""
        self.status, self.message, self.started = status, message, started
        self.rounds = [Round.from_data(r) for r in rounds]
        self.pending = dict(pending) if status == "awaiting_input" else {}
        self.answers = {k: v for k, v in (answers or {}).items() if k in self.pending}
        self.errors, self.drafts = {}, {}
