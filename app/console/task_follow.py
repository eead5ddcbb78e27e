"""Following the task a tools/call became (2026-07-28, the `io.modelcontextprotocol/tasks` extension; 2025-11-25,
a call sent with `params.task`, whose result comes with `tasks/result`).

The task machine (app/mcp/task.py, the one the command line drives too) says what to do; this drives it in the
session's background: `tasks/get` at the server's interval (or the person's), each tasks/get|update|cancel an
exchange of the operation on the timeline, each step an `op_task` event the fold keeps (so a page, a link holder and
a restart see the same), the task's input requests asked through the operation's dialogs (answered with
`tasks/update`), and its end recorded as the operation's end, so the card shows the result as any call's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from app.console.events import FindingRecorded
from app.console.live_events import OpAnswered, OpTask
from app.mcp.client import Reply
from app.mcp.errors import McpError, RpcError
from app.mcp.jsonrpc import Frame
from app.mcp.lint.rules import RULES
from app.mcp.task import AskInput, Ended, FetchResult, Poll, SendUpdate, TaskMachine, reply_outcome
from app.mcp.task import Command as TaskCommand

if TYPE_CHECKING:
    from app.console.operations import Operation, OperationDriver

# What the operation ends as, for each way a task ends (a tool result with isError is a completed task in
# 2026-07-28: the operation then shows it as a tool error, as any call's).
MAX_MISSES = 3  # polls in a row that may fail on the wire before the task is given up as failed
STATUS_NOTIFICATION = "notifications/tasks/status"  # 2025-11-25: the whole Task, optional, never relied on
PUSH_NOTIFICATION = "notifications/tasks"  # 2026-07-28: a DetailedTask on a listen stream asked for its taskIds
TASK_NOTIFICATIONS = frozenset({STATUS_NOTIFICATION, PUSH_NOTIFICATION})
OP_STATUS = {"completed": "complete", "failed": "error", "cancelled": "cancelled", "expired": "error", "gone": "error"}


MAX_STATUS_NOTICES = 200  # per session run: a server may send status notifications without end
MAX_TASKS_REMEMBERED = 256


class StatusNotices:
    """What the timeline says of status notifications that came outside any request (no exchange holds them): one
    notice each, but none for one that repeats the last of its task, and at most MAX_STATUS_NOTICES (then one notice
    saying the rest are not listed). The task's view takes every one all the same."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[str, str]] = {}
        self.said = 0

    def notice(self, task: dict[str, Any]) -> str | None:
        task_id, status = str(task.get("taskId"))[:100], str(task.get("status"))[:40]
        message = task.get("statusMessage")
        message = message[:300] if isinstance(message, str) else ""
        if self.last.get(task_id) == (status, message) or self.said > MAX_STATUS_NOTICES:
            return None
        self.last[task_id] = (status, message)
        if len(self.last) > MAX_TASKS_REMEMBERED:
            del self.last[next(iter(self.last))]
        self.said += 1
        if self.said > MAX_STATUS_NOTICES:
            return f"more than {MAX_STATUS_NOTICES} notifications/tasks/status: the rest are not listed here"
        return f"notifications/tasks/status: task {task_id!r} is {status}" + (f": {message}" if message else "")


class TaskFollower:
    """One task being followed: its machine, the input requests it still holds, and a wake-up for the poller (an
    answer sent or a new poll interval means polling now, not after the old interval)."""

    def __init__(self, driver: OperationDriver, op: Operation, machine: TaskMachine,
                 requests: dict[str, Any] | None = None) -> None:
        self.driver = driver
        self.op = op
        self.machine = machine
        self.requests: dict[str, Any] = dict(requests or {})  # input key → request, while the machine holds it
        self.wake = asyncio.Event()
        self.finished = asyncio.Event()  # set at the end: what lives only as long as the task (a push listen) stops
        self.last: Reply | None = None
        self.exchange: Reply | None = None  # a poll whose step (asking, ending) records it
        self.done = False
        self.misses = 0  # polls in a row the wire failed
        self.findings_said = len(machine.findings)  # those of a task taken up again were said before the restart

    # --- what people do --------------------------------------------------------------------------------------

    async def answer(self, key: str, value: Any) -> bool:
        """One input request answered (the caller holds the operation's lock); `tasks/update` once all are."""
        machine = self.machine
        if self.done or key not in machine.pending:
            return False
        command = machine.answer(key, value)
        self.driver.timeline.append(OpAnswered(key=self.op.key, op=self.op.id, round=len(self.op.rounds),
                                               input=key, at=self.op.clock(), value=value))
        if isinstance(command, SendUpdate):  # every question asked so far is answered
            await self._update(command)
        return True

    async def _update(self, command: SendUpdate) -> None:
        reply = await self._send("tasks/update", {"inputResponses": command.responses})
        if not self.done:
            next_poll = self.machine.updated(reply_outcome(reply)[1])
            self.requests = {k: v for k, v in self.requests.items() if k in self.machine.pending}
            self.record_step(reply)
            self._poll_now(next_poll)

    async def resume(self, answers: dict[str, Any]) -> None:
        """After a restart: the answers given before it sent (tasks/update once all are), then polling again."""
        async with self.op.lock:
            for key, value in answers.items():
                command = self.machine.answer(key, value)
                if isinstance(command, SendUpdate):
                    await self._update(command)
        command = self.machine.resume()
        if command is not None:
            await self.follow(command)

    async def cancel(self) -> bool:
        """`tasks/cancel` (never notifications/cancelled); cooperative, but the console stops following at once."""
        if self.done or self.machine.cancel() is None:
            return False
        self.record_step()
        self.wake.set()
        reply = await self._send("tasks/cancel", {})
        command = self.machine.cancel_answered(reply_outcome(reply)[1])
        if isinstance(command, Ended):  # a cancelled task is no longer followed
            self.exchange = reply  # recorded with the end it brings
            self._finish(command)
        elif not self.done:  # refused (-32602): the poller asks once more whether the task ended or is unknown
            self.record_step(reply)
            self._poll_now(command)
        return True

    # --- what the server says of the task on its own ----------------------------------------------------------

    def notified(self, frame: Frame) -> bool:
        """The server's word on this task outside the polls: a 2025-11-25 `notifications/tasks/status` (its status
        and statusMessage taken, never relied on: polling goes on), or a 2026-07-28 `notifications/tasks` pushed on a
        listen stream (a DetailedTask, folded as a poll's result: it may end the task or ask). Checked as a poll is
        (a terminal status that changes is a finding). False when the task is not this one's, or is over."""
        machine, params = self.machine, frame.params
        if self.done or params.get("taskId") != machine.task_id:
            return False
        if frame.method == STATUS_NOTIFICATION:
            before = (machine.status, machine.status_message, len(machine.findings))
            machine.status_notified(params)
            if (machine.status, machine.status_message, len(machine.findings)) != before:
                self.record_step()  # one that repeats what the view shows records nothing (a server may flood)
            return True
        command = machine.pushed(params)
        if isinstance(command, Ended):
            self._finish(command)
        elif isinstance(command, AskInput):
            self.requests.update(command.requests)
            self.record_step()
        elif command is not None:
            self.requests = {k: v for k, v in self.requests.items() if k in machine.pending}
            self.record_step()
        return command is not None

    def _on_stream(self, frame: Frame) -> None:
        """A notification on one of the task's own requests' streams (a status notification on tasks/result's, say):
        it may be about any task the session follows."""
        if frame.method in TASK_NOTIFICATIONS:
            self.driver.task_notified(frame)

    def set_poll_interval(self, ms: int | None) -> None:
        self.machine.set_poll_interval(ms)
        self.record_step()
        self.wake.set()

    # --- the poller --------------------------------------------------------------------------------------------

    async def follow(self, command: TaskCommand) -> None:
        """Poll until the task ends (or someone else ended it: a cancel), recording each step. A poller that dies
        (the session lost its client) lets go of the task, so the next connect takes it up again from the fold."""
        try:
            await self._follow(command)
        except Exception:
            if not self.done:
                self.driver.tasks.pop(self.op.id, None)
            raise

    async def _follow(self, command: TaskCommand) -> None:
        while not self.done:
            if isinstance(command, Ended):
                self._finish(command)
                return
            if isinstance(command, AskInput):
                self.requests.update(command.requests)
                self.record_step()
                command = self.machine.next_poll()  # keep polling while the person answers: the task may move on
                continue
            if isinstance(command, FetchResult):  # 2025-11-25: blocks until the task ends; the server's questions
                reply = await self._send("tasks/result", {})  # come on its stream, asked as any server request
                if self.done:
                    return
                self.exchange = reply
                command = self.machine.fetched(*reply_outcome(reply))
                continue
            assert isinstance(command, Poll), f"not sent by the console: {command!r}"  # updates and cancels: people's
            await self._wait(command.after_ms)
            if self.done:
                return
            expired = self.machine.expired()
            if expired is not None:
                command = expired
                continue
            reply = await self._send("tasks/get", {})
            if self.done:
                return  # cancelled while it was in flight: its answer is past
            if reply.error is not None and not isinstance(reply.error, RpcError) and self.misses < MAX_MISSES:
                # The wire, not the server, failed (a timeout, a dropped connection): the task lives on the server,
                # so it is polled again; only the server's own error ends it.
                self.misses += 1
                self.record_step(reply)
                command = self.machine.next_poll()
                continue
            self.misses = 0
            command = self.machine.polled(*reply_outcome(reply))
            if not isinstance(command, Ended | AskInput):
                self.requests = {k: v for k, v in self.requests.items() if k in self.machine.pending}
                self.record_step(reply)  # a poll that changed nothing too: its count and exchange are the task's story
            else:
                self.exchange = reply

    async def _wait(self, after_ms: int) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), after_ms / 1000)
        self.wake.clear()

    def _poll_now(self, command: TaskCommand) -> None:
        if isinstance(command, Poll) and command.after_ms == 0:
            self.wake.set()

    async def _send(self, method: str, extra: dict[str, Any]) -> Reply:
        reply = await self.driver.runner.run(method, {"taskId": self.machine.task_id, **extra}, op=self.op.id,
                                             log_level=self.op.log_level, on_notification=self._on_stream)
        self.last = reply
        return reply

    # --- the record ---------------------------------------------------------------------------------------------

    def record_step(self, reply: Reply | None = None) -> None:
        """One step as an event, with the exchange that brought it (None: a step of the console's own)."""
        machine = self.machine
        if reply is None and self.exchange is not None:  # a poll's news recorded by the step it led to
            reply, self.exchange = self.exchange, None
        shown = [*machine.answers, *machine.pending]
        asking = bool(machine.pending) and not machine.ended
        status = "awaiting_input" if asking else "running"
        self.op.status = "awaiting_input" if asking else "running"
        exchange = {"key": reply.key, "method": reply.method} if reply is not None else None
        for finding in machine.findings[self.findings_said:]:  # in the session's lint too, on the exchange
            rule = RULES.get(finding.rule)
            self.driver.timeline.append(FindingRecorded(
                rule=finding.rule, severity=rule.severity if rule else "warning", message=finding.message,
                exchange=reply.key if reply is not None else self.op.key, spec_url=rule.spec_url if rule else ""))
        self.findings_said = len(machine.findings)
        self.driver.timeline.append(OpTask(  # no message: the task view says where the task stands
            key=self.op.key, op=self.op.id, task=machine.to_data(), status=status, message="",
            pending_requests={k: self.requests[k] for k in shown if k in self.requests},
            answered=list(machine.answers), via=exchange))

    def _finish(self, ended: Ended) -> None:
        """The task's end as the operation's: its result, or an error saying how the task ended."""
        if self.done:
            return
        self.done = True
        self.wake.set()
        self.finished.set()
        op, last = self.op, self.last
        self.record_step()
        rnd = op.last
        # The task's whole time, on the replies' clock (monotonic): a round's `sent` is wall time, so it is carried
        # over as how long ago it was (mixing the two made every task last minus the epoch).
        now = time.monotonic()
        began = now - max(0.0, time.time() - rnd.sent) if rnd and rnd.sent else (last.sent if last else now)
        first = op.rounds[0] if op.rounds else rnd  # the tools/call itself: the reply is the call's, not a poll's
        final = Reply(key=first.key if first else (last.key if last else ""),
                      id=first.request_id if first and first.request_id != "" else (last.id if last else ""),
                      method="tools/call", params=dict(op.params), sent=began,
                      finished=last.finished if last and last.finished is not None else now)
        if ended.status == "completed" and ended.result is not None:
            final.result = ended.result
            op.status = "tool_error" if ended.result.get("isError") is True else "complete"
            op.message = ""
        else:
            error = ended.error or {}
            if error:  # the server's own JSON-RPC error: shown as it sent it
                code = error["code"] if isinstance(error.get("code"), int) else -32603
                detail = error.get("message") or ended.message
                final.error = RpcError(code, f"task {self.machine.task_id} {ended.status}: {detail}", error.get("data"))
            else:  # cancelled, expired or gone: the console's words, never dressed as a server's error
                final.error = McpError(f"The task {self.machine.task_id} {ended.status}: {ended.message} "
                                       "(said by the console: the server sent no error)")
            op.status = OP_STATUS.get(ended.status, "error")  # type: ignore[assignment]
            op.message = f"The task {ended.status}: {ended.message}"
        op.final = final
        self.driver.task_ended(op)

