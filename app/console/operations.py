"""Operations: one logical request (tools/call, prompts/get, resources/read) and its MRTR rounds.

The console gives each operation its own id and links rounds by it, never by comparing
requestState strings (servers rotate them, some rounds carry none, operations interleave).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.console.live_events import OpAnswered, OpEnded, OpRefused, OpRound, OpStarted
from app.console.live_records import FinalReply, OperationRecord
from app.console.outputs import validate_structured
from app.console.task_follow import TaskFollower
from app.mcp.client import Reply, reply_json
from app.mcp.jsonrpc import Frame
from app.mcp.operation import AskInput, Command, Ended, OperationMachine, Round, SendRound
from app.mcp.secret import MASK
from app.mcp.task import TaskChoice, TaskMachine, made_task
from app.mcp.task import Wire as TaskWire
from app.mcp.task_extension import declares_tasks

if TYPE_CHECKING:
    from app.console.runner import RequestRunner
    from app.console.timeline import Timeline

_op_ids = itertools.count(1)
MAX_KEPT = 500


class Operation(OperationMachine):
    """An operation of a session: the protocol machine (`app/mcp/operation.py`) plus what the console keeps beside
    it: its id, the lock that serialises its events, what it replays, its log level, the outputSchema check."""

    def __init__(self, id: str, method: str, params: dict[str, Any], *, max_rounds: int,
                 first_params: dict[str, Any] | None = None, replay_of: str | None = None,
                 log_level: str | None = None, task_choice: TaskChoice | None = None,
                 via: str | None = None) -> None:
        super().__init__(method, params, max_rounds=max_rounds, first_params=first_params,
                         cap_hint="setting mrtr_max_rounds")
        self.id = id
        self.replay_of = replay_of                 # the exchange key this operation re-sends
        self.log_level = log_level                 # this operation's own _meta logLevel (else the session's)
        self.task_choice = task_choice             # "run as a task", chosen for this call (2025-11-25, optional)
        self.via = via                             # the entry that led to it (an MCP App's bridge request)
        self.validation: dict[str, Any] | None = None  # structuredContent checked against outputSchema
        self.lock = asyncio.Lock()
        self.begun = False  # its start is on the timeline (recorded when its first round's request is)

    @property
    def key(self) -> str:
        return f"op-{self.id}"


def is_stale(op: OperationRecord, round_: int | None) -> bool:
    """An answer written for another round than the one the fold shows asking (None: the caller did not say)."""
    return round_ is not None and round_ != op.asking_round


class OperationDriver:
    """Runs rounds for a session's operations and keeps them (pending ones survive a page reload).

    It sends through a `RequestRunner` and records each step as a transition on the timeline (started, a round
    sent or answered, an answer taken or refused, ended); the fold builds the operation from them, and what it
    reads back (ids in use, awaiting operations, the record a page shows) comes from the fold.
    """

    def __init__(self, runner: RequestRunner, timeline: Timeline) -> None:
        self.runner = runner
        self.timeline = timeline
        self.ops: dict[str, Operation] = {}
        self.tasks: dict[str, TaskFollower] = {}  # operation id → the task it became, while it is followed
        # Told of every operation's end once it is recorded: an MCP App waits for its call's (app/console/apps.py).
        self.on_ended: list[Callable[[Operation], None]] = []
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
        """The operation as the fold knows it; one whose first round never started (nothing reached the timeline:
        the session was not connected) shows as the machine left it."""
        record = self.timeline.state.operations.get(op.id)
        if record is not None:
            return record
        return OperationRecord(
            id=op.id, key=op.key, method=op.method, name=op.name, status=op.status, message=op.message,
            started=op.started, rounds=[r.to_data() for r in op.rounds], pending=dict(op.pending),
            required_capabilities=op.required_capabilities, replay_of=op.replay_of, params=dict(op.params),
            final=FinalReply(reply_json(op.final)) if op.final is not None else None, validation=op.validation,
            log_level=op.log_level, via=op.via)

    def refuse(self, op: Operation, key: str, errors: dict[str, str], drafts: dict[str, list[str]],
               round_: int | None = None) -> None:
        """An answer that did not pass the checks: keep what was typed and say why, in every tab."""
        follower = self.tasks.get(op.id)
        if (follower is not None and key in follower.machine.pending) or op.refuse(key, errors, drafts, round_):
            self.timeline.append(OpRefused(key=op.key, op=op.id, round=len(op.rounds), input=key, errors=errors,
                                           drafts=drafts))

    def _sent(self, op: Operation, rnd: Round) -> None:
        """A round's request went out: the operation's start with it, or the round."""
        if not op.begun:
            op.begun = True
            self.timeline.append(OpStarted(key=op.key, op=op.id, method=op.method, name=op.name, params=op.params,
                                           started=op.started, round=rnd.to_data(), replay_of=op.replay_of,
                                           log_level=op.log_level, via=op.via))
        else:
            self.timeline.append(OpRound(key=op.key, op=op.id, round=rnd.to_data()))

    def _took(self, op: Operation, command: Command) -> None:
        """What the machine made of a round's reply: asking for input, retrying at once, or (the caller records
        the end) over."""
        rnd = op.last
        if rnd is None or not op.begun or isinstance(command, Ended):
            return
        if isinstance(command, AskInput):
            self.timeline.append(OpRound(key=op.key, op=op.id, round=rnd.to_data(), status="awaiting_input",
                                         message=op.message, pending_requests=dict(op.pending)))
        elif isinstance(command, SendRound) and len(op.rounds) > 1:  # requestState only: the round it answered
            self.timeline.append(OpRound(key=op.key, op=op.id, round=op.rounds[-2].to_data(), message=op.message))

    def _ended(self, op: Operation) -> None:
        if not op.begun:
            for hook in self.on_ended:
                hook(op)
            return  # nothing of it reached the timeline (the session was not connected): the answer says why
        rnd = op.last
        self.timeline.append(OpEnded(
            key=op.key, op=op.id, status=op.status, message=op.message, round=rnd.to_data() if rnd else None,
            final=reply_json(op.final) if op.final is not None else None, validation=op.validation,
            required_capabilities=op.required_capabilities))
        for hook in self.on_ended:
            hook(op)

    def create(self, method: str, params: dict[str, Any], replay_of: str | None = None,
               keep_mrtr: bool = False, log_level: str | None = None,
               task_choice: TaskChoice | None = None, via: str | None = None) -> Operation:
        """A new operation. A replay keeps inputResponses/requestState in its first round (as it was sent)."""
        first = {k: v for k, v in params.items() if k != "_meta"} if keep_mrtr else None
        op = Operation(self._new_id(), method, params, max_rounds=self.runner.mrtr_max_rounds, first_params=first,
                       replay_of=replay_of, log_level=log_level, task_choice=task_choice, via=via)
        self._keep(op)
        return op

    def _keep(self, op: Operation) -> None:
        self.ops[op.id] = op
        if len(self.ops) > MAX_KEPT:  # bounded: finished operations live on in the timeline store
            oldest = next((k for k, o in self.ops.items() if o.status not in ("awaiting_input", "running")),
                          next(iter(self.ops)))
            del self.ops[oldest]

    def revive(self, op_id: str) -> Operation | None:
        """An operation the fold shows waiting for input that no live object drives (the console restarted, or
        took the session over from a process that died): taken up again from its record. Its retry needs only the
        original params, the last round's requestState and the answers, which the revision keeps nowhere else."""
        record = self.timeline.state.operations.get(op_id)
        if record is None or record.status != "awaiting_input" or record.task:
            return None  # a task's questions are taken up by its follower (resume_tasks), never by a retry
        if self.timeline.scrubber is not None and MASK in json.dumps(
                [record.params, record.rounds, record.answer_values], default=str):
            # The record holds a secret value as its mask (app/console/scrub.py): a retry made from it would send
            # the mask, not what the server gave. Never corrupt what is sent: it is not taken up again.
            return None
        op = Operation(record.id, record.method, dict(record.params), max_rounds=self.runner.mrtr_max_rounds,
                       replay_of=record.replay_of, log_level=record.log_level)
        op.revive("awaiting_input", record.message, record.rounds, record.pending, record.started,
                  answers=record.answer_values)
        op.begun = True
        self._keep(op)
        return op

    def answered_in_full(self) -> list[str]:
        """Operations the fold shows waiting with every question of their round answered: the console stopped
        between the last answer and the retry's start (the retry is recorded when it reaches the wire)."""
        return [op.id for op in self.timeline.state.operations.values()
                if op.status == "awaiting_input" and op.pending and all(k in op.answer_values for k in op.pending)
                and not op.task]  # a task's answers go with tasks/update (resume_tasks), never as a retry

    async def resume(self, op_id: str) -> bool:
        """Send the retry of an operation answered in full before a restart (see `answered_in_full`)."""
        op = self.ops.get(op_id) or self.revive(op_id)
        if op is None:
            return False
        async with op.lock:
            op.max_rounds = self.runner.mrtr_max_rounds
            command = op.resume()
            if command is None:
                return False
            if isinstance(command, Ended):  # the cap was lowered meanwhile: it ends here, and says so
                self._ended(op)
                return False
            await self._drive(op, command)
            return True

    async def run(self, op: Operation) -> Operation:
        async with op.lock:
            await self._drive(op, op.start())
        return op

    async def start(self, method: str, params: dict[str, Any]) -> Operation:
        return await self.run(self.create(method, params))

    async def cancel(self, op: Operation, who: str) -> bool:
        follower = self.tasks.get(op.id)
        if follower is not None:  # a task is cancelled with tasks/cancel, never notifications/cancelled
            return await follower.cancel()
        rnd = op.last
        if op.status != "running" or rnd is None or not rnd.key:
            return False
        return await self.runner.cancel(rnd.key, who)

    async def _drive(self, op: Operation, command: Command) -> None:
        """Send what the machine asks for, round after round (requestState-only rounds go again at once), until it
        asks for input or ends; each step is recorded, so every tab shows where it stands."""
        op.max_rounds = self.runner.mrtr_max_rounds
        while isinstance(command, SendRound):
            rnd = command.round

            def started(key: str, request_id: Any, rnd: Round = rnd) -> Callable[[], None]:
                rnd.key, rnd.request_id = key, request_id
                return functools.partial(self._sent, op, rnd)

            params = self.runner.as_task(op.method, command.params, op.task_choice)
            reply = await self.runner.run(op.method, params, op=op.id, round_=rnd.n, on_start=started,
                                           log_level=op.log_level)
            wire = made_task(params, reply.result) if op.method == "tools/call" and reply.error is None else None
            # An undeclared 2026-07-28 task is an invalid result (op.took says so): the server MUST NOT make one.
            if wire is not None and (wire == "2025-11-25" or declares_tasks(reply.params)):
                self._became_task(op, rnd, reply, wire)
                return
            command = op.took(reply)
            self._took(op, command)
        if isinstance(command, Ended):
            self._validated_end(op)

    def _validated_end(self, op: Operation) -> None:
        if op.method == "tools/call" and op.final is not None and op.status in ("complete", "tool_error"):
            # Checked before the end is recorded, so every tab shows it.
            tool = next((t for t in self.runner.lists.get("tools", []) if t.get("name") == op.name), None)
            op.validation = validate_structured(tool, op.final.result or {})
        self._ended(op)

    # -- tasks (2026-07-28, the io.modelcontextprotocol/tasks extension; 2025-11-25, params.task) ---------------

    def _became_task(self, op: Operation, rnd: Round, reply: Reply, wire: TaskWire) -> None:
        """The round was answered with a task, not the result: the task machine takes it from here, polled in the
        session's background; the operation stays running until the task ends."""
        rnd.received, rnd.server_ms, rnd.status = op.clock(), reply.duration_ms, "task"
        op.status, op.message = "running", ""
        follower = TaskFollower(self, op, TaskMachine(wire))
        follower.last = follower.exchange = reply
        command = follower.machine.created(reply.result or {})
        self.tasks[op.id] = follower
        self.timeline.append(OpRound(key=op.key, op=op.id, round=rnd.to_data(), status="running"))
        follower.record_step()
        self.runner.background.spawn(f"task-{op.id}", follower.follow(command))

    def task_ended(self, op: Operation) -> None:
        """The end a follower came to, as the operation's (see TaskFollower._finish)."""
        self.tasks.pop(op.id, None)
        self._validated_end(op)

    def task_notified(self, frame: Frame) -> bool:
        """A notification about a task (a 2025-11-25 status notification, a 2026-07-28 push), wherever it came: to
        the follower of that task, if the session follows it. False when none does (a task of another client, one
        that ended): the timeline has it all the same."""
        return any(follower.notified(frame) for follower in list(self.tasks.values()))

    def following(self) -> list[str]:
        """Operations whose task the fold shows not ended and no follower here follows (after a restart)."""
        return [op.id for op in self.timeline.state.operations.values()
                if op.task and not op.task.get("ended") and op.status in ("running", "awaiting_input")
                and op.id not in self.tasks]

    def resume_tasks(self) -> list[str]:
        """Poll again every task the fold shows not ended: task ids are persisted, so a restart loses none."""
        resumed = []
        for op_id in self.following():
            record = self.timeline.state.operations[op_id]
            assert record.task is not None
            op = Operation(record.id, record.method, dict(record.params), max_rounds=self.runner.mrtr_max_rounds,
                           replay_of=record.replay_of, log_level=record.log_level)
            op.revive("running", record.message, record.rounds, {}, record.started)
            op.begun = True
            self._keep(op)
            machine = TaskMachine.from_data(record.task)
            # Questions answered and not yet sent with tasks/update are the machine's again: their answers, when
            # the fold has them whole, go out at once; else they are asked again.
            machine.pending = [*machine.pending, *(k for k in record.pending if k not in machine.pending
                                                   and k in machine.asked)]
            answers = {k: v for k, v in record.answer_values.items() if k in machine.pending}
            if self.timeline.scrubber is not None and MASK in json.dumps(answers, default=str):
                answers = {}  # a masked answer would send the mask, not what was typed (see revive)
            follower = TaskFollower(self, op, machine, {k: v for k, v in record.pending.items()
                                                        if k in machine.pending})
            self.tasks[op.id] = follower
            if not machine.ended:
                self.runner.background.spawn(f"task-{op.id}", follower.resume(answers))
                resumed.append(op_id)
        return resumed

    def set_poll_interval(self, op: Operation, ms: int | None) -> bool:
        follower = self.tasks.get(op.id)
        if follower is None:
            return False
        follower.set_poll_interval(ms)
        return True

    async def answer(self, op: Operation, key: str, value: Any, round_: int | None = None) -> bool:
        """Record one answer; when every input request of the round is answered, send the retry.

        `round_` is the round the answer was written for: servers may ask again under the same key, and an answer
        to the last round's question (another tab's, or one that waited on the lock while the retry ran) must not
        become the answer to a question nobody here has read. A key already answered in this round keeps its
        first answer (see OperationMachine.answer). False when nothing was taken."""
        follower = self.tasks.get(op.id)
        if follower is not None:  # the task's question: answered with tasks/update once all are
            async with op.lock:
                return await follower.answer(key, value)
        async with op.lock:
            n = len(op.rounds)  # the round asking (a retry the answer brings is one more)
            command = op.answer(key, value, round_)
            if command is None:
                return False
            answered = op.rounds[n - 1].answered if n else None  # set when this answer was the round's last
            self.timeline.append(OpAnswered(key=op.key, op=op.id, round=n, input=key,
                                            at=answered if answered is not None else op.clock(), value=value))
            await self._drive(op, command)
            return True

    async def abandon(self, op: Operation, why: str, round_: int | None = None) -> bool:
        """Give up an operation awaiting input. `round_` is the round the person giving up was shown (None: not
        said): once another tab's answer has brought a new question, giving up is for that one to decide, not
        for a tab that has not read it. False when nothing was abandoned."""
        follower = self.tasks.get(op.id)
        if follower is not None:  # the server holds the task: giving up on it is cancelling it
            return await follower.cancel()
        async with op.lock:
            if op.abandon(why, round_) is None:
                return False
            self._ended(op)
            return True

    async def enable_and_retry(self, op: Operation) -> bool:
        """After -32021: merge the capabilities the server asked for, then run the operation again.

        Only an operation that ended in that error is run again (see OperationMachine.retry_enabled). Checked
        under the lock, so of two tabs pressing at once only the first retries. False when nothing was enabled
        or sent."""
        async with op.lock:
            if op.status != "error" or not op.required_capabilities:
                return False
            caps = dict(self.runner.capabilities)
            for name, value in op.required_capabilities.items():
                caps[name] = {**(caps.get(name) or {}), **(value if isinstance(value, dict) else {})}
            self.runner.set_capabilities(caps, saved=False)
            command = op.retry_enabled()
            assert command is not None
            await self._drive(op, command)
            return True
