"""A task, as a sans-I/O state machine: the Tasks of 2025-11-25 and the `io.modelcontextprotocol/tasks` extension
of 2026-07-28 (SEP-2663), one machine beside the operation machine (app/mcp/operation.py).

A `tools/call` may answer with a task instead of its result: `resultType: "task"` and the task's fields flat
(2026-07-28), or `{task: {...}}` (2025-11-25, when the request carried `params.task`). From then on the client polls
`tasks/get` at the server's interval until the task ends. It takes events and returns what to do next:

- `Poll(task_id, after_ms)`: send `tasks/get` after that delay (with `Mcp-Name: <taskId>` over HTTP); feed `polled`;
- `AskInput(requests)` (2026-07-28): input requests not asked before (keys are unique for the task's life, so a
  key seen on an earlier poll is never asked twice); feed each answer to `answer`;
- `SendUpdate(task_id, responses)` (2026-07-28): `tasks/update` with the answers; feed `updated`;
- `FetchResult(task_id)` (2025-11-25): `tasks/result`, which blocks until the task ends (the server's own requests
  come on that stream, tagged with the task, and are answered as any 2025-11-25 server request); feed `fetched`;
- `SendCancel(task_id)`: `tasks/cancel` (never `notifications/cancelled`); feed `cancel_answered` (a -32602 asks for
  one more poll: the task may have ended before the cancel came);
- `Ended(status, ...)`: completed (with the result), failed (with the error), cancelled, expired, or gone.

It checks what it is told as it goes (`findings`): a status the graph does not allow, a terminal status that
changes, fields missing or of the other revision's names. Its whole state is plain data (`to_data`, `from_data`),
so a task survives a restart of whoever drives it: polling resumes from the task id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from app.mcp.client import Reply
from app.mcp.errors import RpcError

Wire = Literal["2026-07-28", "2025-11-25"]
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
NEXT: dict[str, frozenset[str]] = {  # the status graph; a terminal status has no way out
    "working": frozenset(STATUSES), "input_required": frozenset(STATUSES)}
DEFAULT_POLL_MS = 1000
MIN_POLL_MS = 100  # a server asking for less is polled at this: every poll is a timeline entry, 10 a second at most
MAX_FINDINGS = 50  # distinct findings a task keeps (see TaskMachine._find)
MAX_POLL_MS = 60_000
MAX_INPUT_REQUESTS = 100  # as an operation round: more are not asked (each is a dialog on every tab)
LEGACY_TTL_MS = 300_000   # the ttl a 2025-11-25 task is asked for (the server may choose another)


@dataclass(frozen=True, slots=True)
class TaskChoice:
    """A person's choice, for one call, to run a 2025-11-25 tool as a task: asked for where the tool's
    execution.taskSupport is "optional" (a "required" tool always goes as one), with the ttl to ask for (None: ask
    for none, the server chooses)."""

    ttl_ms: int | None = None


def as_task(params: dict[str, Any], server_capabilities: Any, task_support: str | None,
            choice: TaskChoice | None = None) -> dict[str, Any]:
    """2025-11-25: a tools/call goes as a task (`params.task`) when the server says it runs tool calls as tasks
    (`tasks.requests.tools.call`) and the tool's execution.taskSupport is "required" (always: a plain call is
    refused), or "optional" and the person chose it for this call. Absent and "forbidden" tools never go as one
    (the server SHOULD answer -32601), whatever was chosen. The params unchanged (the same object) when it is not a
    task."""
    tasks = server_capabilities.get("tasks") if isinstance(server_capabilities, dict) else None
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    if not isinstance(tools, dict) or "call" not in tools:
        return params
    if task_support == "required":
        ttl = choice.ttl_ms if choice is not None and choice.ttl_ms is not None else LEGACY_TTL_MS
        return {**params, "task": {"ttl": ttl}}
    if task_support == "optional" and choice is not None:
        return {**params, "task": {} if choice.ttl_ms is None else {"ttl": choice.ttl_ms}}
    return params


def lists_tasks(server_capabilities: Any) -> bool:
    """2025-11-25: whether the server answers `tasks/list` (its `tasks.list` capability); 2026-07-28 has no
    tasks/list at all."""
    tasks = server_capabilities.get("tasks") if isinstance(server_capabilities, dict) else None
    return isinstance(tasks, dict) and isinstance(tasks.get("list"), dict)


def made_task(params_sent: dict[str, Any], result: dict[str, Any] | None) -> Wire | None:
    """Which task a tools/call answer made, if any: the extension's flat `resultType: "task"` (2026-07-28), or the
    nested `{task}` answering a request that went with `params.task` (2025-11-25)."""
    if not isinstance(result, dict):
        return None
    if result.get("resultType") == "task":
        return "2026-07-28"
    if "task" in params_sent and isinstance(result.get("task"), dict):
        return "2025-11-25"
    return None


@dataclass(frozen=True, slots=True)
class Poll:
    task_id: str
    after_ms: int


@dataclass(frozen=True, slots=True)
class AskInput:
    requests: dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class SendUpdate:
    task_id: str
    responses: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FetchResult:
    task_id: str


@dataclass(frozen=True, slots=True)
class SendCancel:
    task_id: str


@dataclass(frozen=True, slots=True)
class Ended:
    status: Literal["completed", "failed", "cancelled", "expired", "gone"]
    message: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


Command = Poll | AskInput | SendUpdate | FetchResult | SendCancel | Ended


@dataclass(slots=True)
class TaskFinding:
    rule: str
    message: str


@dataclass(slots=True)
class TaskMachine:
    wire: Wire
    task_id: str = ""
    status: str = ""
    status_message: str = ""
    created_at: str = ""
    ttl_ms: int | None = None
    poll_ms: int | None = None            # what the server last asked for
    poll_override_ms: int | None = None   # what the person set instead
    polls: int = 0
    notified: int = 0  # the server's own word on the task: status notifications (2025-11-25), pushes (2026-07-28)
    asked: list[str] = field(default_factory=list)        # every input key ever asked (de-duplicated across polls)
    answers: dict[str, Any] = field(default_factory=dict)  # answered, not yet sent with tasks/update
    pending: list[str] = field(default_factory=list)      # asked and not yet answered
    cancelling: bool = False
    ended: str = ""
    findings: list[TaskFinding] = field(default_factory=list)
    started_wall: float = field(default_factory=time.time)

    # --- the way in ------------------------------------------------------------------------------------------

    def created(self, result: dict[str, Any]) -> Command:
        """The `tools/call` answer that made the task."""
        fields = result.get("task") if self.wire == "2025-11-25" else result
        if not isinstance(fields, dict) or not isinstance(fields.get("taskId"), str) or not fields["taskId"]:
            shape = "{task: {taskId, ...}}" if self.wire == "2025-11-25" else "a flat taskId"
            self._find("tasks.wire-fields", f"the task the server created has no taskId (expected {shape})")
            return self._end(Ended("gone", "the server answered with a task it gave no id"))
        self.task_id = fields["taskId"]
        self._take(fields)
        return self._next_poll()

    def polled(self, result: dict[str, Any] | None, error: dict[str, Any] | None = None) -> Command:
        """A `tasks/get` answer: its result (the task, flat) or its JSON-RPC error."""
        self.polls += 1
        if error is not None:
            code = error.get("code")
            if code == -32602:  # unknown or expired: the server has let it go
                return self._end(Ended("gone", f"the server no longer knows the task ({error.get('message')})",
                                       error=error))
            return self._end(Ended("failed", f"tasks/get failed: {error.get('message')}", error=error))
        if not isinstance(result, dict):
            self._find("tasks.wire-fields", "tasks/get answered with no task")
            return self._next_poll()
        before = self.status
        self._take(result)
        if self.status in TERMINAL:
            if self.wire == "2025-11-25":
                return FetchResult(self.task_id) if self.status != "cancelled" else \
                    self._end(Ended("cancelled", self.status_message or "the task was cancelled"))
            return self._terminal(result)
        if self.status == "input_required":
            if self.wire == "2025-11-25":
                return FetchResult(self.task_id)  # its stream carries the server's questions
            asked = self._new_requests(result.get("inputRequests"))
            if asked:
                return AskInput(asked)
        elif before == "input_required" and self.status == "working":
            self.pending = []  # the server took what it needed: questions still open are no longer asked
        return self._next_poll()

    def status_notified(self, task: dict[str, Any]) -> bool:
        """2025-11-25 `notifications/tasks/status` (params: the whole Task): its status and statusMessage are taken
        and checked as a poll's are (a terminal status that changes is a finding), but nothing is decided on it: a
        client MUST NOT rely on it, so polling goes on as it was. False when it is about another task."""
        if task.get("taskId") != self.task_id:
            return False
        self.notified += 1
        self._take(task)
        return True

    def pushed(self, detailed: dict[str, Any]) -> Command | None:
        """2026-07-28 `notifications/tasks` (params: a DetailedTask, what tasks/get would answer): folded as a poll's
        result, without counting as a poll, so it may end the task or ask for input. A `Poll` it returns is no
        order (the poller keeps its own time); None when it is about another task, or the task has ended."""
        if self.ended or detailed.get("taskId") != self.task_id:
            return None
        self.notified += 1
        polls = self.polls
        command = self.polled(detailed)
        self.polls = polls
        return command

    def answer(self, key: str, response: Any) -> Command | None:
        """The person's answer to one input request; `SendUpdate` once every pending one is answered."""
        if key not in self.pending:
            return None
        self.pending.remove(key)
        self.answers[key] = response
        if self.pending:
            return None
        responses, self.answers = self.answers, {}
        return SendUpdate(self.task_id, responses)

    def updated(self, error: dict[str, Any] | None = None) -> Command:
        """`tasks/update` answered (eventually consistent: the next poll shows what the server made of it)."""
        if error is not None:
            self._find("tasks.update-refused", f"tasks/update was refused: {error.get('message')}")
        return Poll(self.task_id, 0)

    def fetched(self, result: dict[str, Any] | None, error: dict[str, Any] | None = None) -> Command:
        """The `tasks/result` answer (2025-11-25): exactly what the tool call would have answered."""
        if error is not None:
            return self._end(Ended("failed", f"the task failed: {error.get('message')}", error=error))
        result = result or {}
        if result.get("isError") is True:  # 2025-11-25: a tool error is a failed task
            return self._end(Ended("failed", "the tool reported an error (isError)", result=result))
        return self._end(Ended("completed", "completed", result=result))

    def cancel(self) -> Command | None:
        if self.ended or self.cancelling:
            return None
        self.cancelling = True
        return SendCancel(self.task_id)

    def cancel_answered(self, error: dict[str, Any] | None = None) -> Command:
        """Cancelling is cooperative: the task may still complete; the client may stop following it at once.
        -32602 answers both an unknown task and one already ended (2025-11-25: cancelling a terminal task), so one
        more `tasks/get` says which: a task that ended before the cancel came ends as it did, with its result."""
        if error is not None and error.get("code") == -32602:
            return Poll(self.task_id, 0)
        return self._end(Ended("cancelled", "cancelled by you (tasks/cancel)"))

    def expired(self, now_ms: float | None = None) -> Ended | None:
        """Past its creation + ttlMs the server may have let the task go: the client may give up too. Measured from
        when this client saw it created (the server's createdAt is its own clock's)."""
        if self.ttl_ms is None or self.ended:
            return None
        now = now_ms if now_ms is not None else time.time() * 1000
        if now < self.started_wall * 1000 + self.ttl_ms:
            return None
        ended = self._end(Ended("expired", f"its ttl of {self.ttl_ms} ms passed"))
        assert isinstance(ended, Ended)
        return ended

    def next_poll(self) -> Poll:
        """The poll after this one, at the interval in force (a driver that keeps polling while input is asked)."""
        return self._next_poll()

    def set_poll_interval(self, ms: int | None) -> None:
        self.poll_override_ms = None if ms is None else max(MIN_POLL_MS, min(MAX_POLL_MS, int(ms)))

    # --- plain data ---------------------------------------------------------------------------------------------

    def to_data(self) -> dict[str, Any]:
        return {"wire": self.wire, "task_id": self.task_id, "status": self.status,
                "status_message": self.status_message, "created_at": self.created_at, "ttl_ms": self.ttl_ms,
                "poll_ms": self.poll_ms, "poll_override_ms": self.poll_override_ms, "polls": self.polls,
                "notified": self.notified,
                "asked": list(self.asked), "pending": list(self.pending), "cancelling": self.cancelling,
                "ended": self.ended, "started_wall": self.started_wall,
                "findings": [{"rule": f.rule, "message": f.message} for f in self.findings]}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> TaskMachine:
        """The machine again from `to_data` (a restart): answers given and not yet sent are asked again."""
        machine = cls(wire=data.get("wire", "2026-07-28"), task_id=str(data.get("task_id", "")),
                      status=str(data.get("status", "")), status_message=str(data.get("status_message", "")),
                      created_at=str(data.get("created_at", "")), ttl_ms=data.get("ttl_ms"),
                      poll_ms=data.get("poll_ms"), poll_override_ms=data.get("poll_override_ms"),
                      polls=int(data.get("polls") or 0), notified=int(data.get("notified") or 0),
                      asked=list(data.get("asked") or []),
                      pending=list(data.get("pending") or []), cancelling=bool(data.get("cancelling")),
                      ended=str(data.get("ended", "")), started_wall=float(data.get("started_wall") or time.time()))
        machine.findings = [TaskFinding(str(f.get("rule")), str(f.get("message")))
                            for f in data.get("findings") or [] if isinstance(f, dict)]
        return machine

    def resume(self) -> Command | None:
        """What to do first after a restart: poll again (a task that had ended does nothing)."""
        return None if self.ended else Poll(self.task_id, 0)

    # --- helpers -------------------------------------------------------------------------------------------------

    def _take(self, fields: dict[str, Any]) -> None:
        status = fields.get("status")
        if not isinstance(status, str) or status not in STATUSES:
            self._find("tasks.wire-fields", f"a task status {status!r} that is none of {', '.join(STATUSES)}")
        elif self.status in TERMINAL and status != self.status:
            self._find("tasks.terminal-changed", f"the task was {self.status}, then {status}: a terminal status "
                       "never changes")
        elif self.status and status not in NEXT.get(self.status, frozenset()):
            self._find("tasks.status-graph", f"{self.status} → {status} is not in the status graph")
        else:
            self.status = status
        message = fields.get("statusMessage")
        self.status_message = message if isinstance(message, str) else ""
        if isinstance(fields.get("createdAt"), str):
            self.created_at = fields["createdAt"]
        ttl_name, poll_name = ("ttl", "pollInterval") if self.wire == "2025-11-25" else ("ttlMs", "pollIntervalMs")
        other_ttl = "ttlMs" if ttl_name == "ttl" else "ttl"
        if other_ttl in fields and ttl_name not in fields:
            self._find("tasks.wire-fields", f"the task names its ttl {other_ttl!r}, the other revision's name "
                       f"({ttl_name!r} in {self.wire})")
        ttl = fields.get(ttl_name)
        self.ttl_ms = int(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0 else \
            self.ttl_ms if ttl_name not in fields else None
        poll = fields.get(poll_name)
        if isinstance(poll, int | float) and not isinstance(poll, bool):
            self.poll_ms = int(poll)

    def _terminal(self, result: dict[str, Any]) -> Command:
        if self.status == "completed":
            inner = result.get("result")
            if not isinstance(inner, dict):
                self._find("tasks.wire-fields", "a completed task with no result")
            return self._end(Ended("completed", self.status_message or "completed",
                                   result=inner if isinstance(inner, dict) else None))
        if self.status == "failed":
            error = result.get("error")
            return self._end(Ended("failed", self.status_message or "failed",
                                   error=error if isinstance(error, dict) else None))
        return self._end(Ended("cancelled", self.status_message or "cancelled"))

    def _new_requests(self, requests: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(requests, dict):
            self._find("tasks.wire-fields", "input_required with no inputRequests")
            return {}
        fresh: dict[str, dict[str, Any]] = {}
        for key, request in requests.items():
            if key in self.asked or not isinstance(request, dict) or len(self.asked) >= MAX_INPUT_REQUESTS:
                continue
            self.asked.append(key)
            self.pending.append(key)
            fresh[key] = request
        return fresh

    def _next_poll(self) -> Poll:
        interval = self.poll_override_ms or self.poll_ms or DEFAULT_POLL_MS
        return Poll(self.task_id, max(MIN_POLL_MS, min(MAX_POLL_MS, interval)))

    def _find(self, rule: str, message: str) -> None:
        # Kept once each and at most MAX_FINDINGS: every step records the machine's data whole, so a server that
        # breaks a rule on each of thousands of polls made the log grow with their square.
        finding = TaskFinding(rule, message[:500])
        if len(self.findings) < MAX_FINDINGS and finding not in self.findings:
            self.findings.append(finding)

    def _end(self, ended: Ended) -> Command:
        self.ended = ended.status
        self.pending = []
        return ended


def reply_outcome(reply: Reply) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A reply as the machine takes it: (result, JSON-RPC error as an object), whoever drives it."""
    error = reply.error
    if error is None:
        return reply.result, None
    if isinstance(error, RpcError):
        return None, {"code": error.code, "message": error.message}
    return None, {"code": -32603, "message": str(error)}
