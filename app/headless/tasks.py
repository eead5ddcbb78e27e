"""The command line following a task (app/mcp/task.py): `call` and `check` drive the task machine here, as the
console's task follower (app/console/task_follow.py) does in a session, over the same headless connection."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from app.headless.answers import Elicitor
from app.mcp.client import Reply
from app.mcp.errors import RpcError
from app.mcp.task import AskInput as TaskAskInput
from app.mcp.task import Command as TaskCommand
from app.mcp.task import Ended as TaskEnded
from app.mcp.task import Poll as TaskPoll
from app.mcp.task import SendCancel as TaskCancel
from app.mcp.task import SendUpdate as TaskUpdate
from app.mcp.task import TaskMachine, reply_outcome
from app.mcp.task import Wire as TaskWire

if TYPE_CHECKING:
    from app.headless.runner import Headless


async def follow_task(self: Headless, created: Reply, answer: Elicitor) -> Reply:
    """A tools/call answered with a task (2026-07-28, the tasks extension; 2025-11-25, params.task): followed
    with the task machine (app/mcp/task.py) until it ends, its input requests answered as MRTR ones are (on
    2025-11-25 they come as server requests on the tasks/result stream), at most --max-time. The reply given
    back is the task's outcome: its result, or its error."""
    wire: TaskWire = "2025-11-25" if created.result_type != "task" else "2026-07-28"
    task = TaskMachine(wire)
    command: TaskCommand = task.created(created.result or {})
    self.say(f"the server answered with task {task.task_id!r}: following it with tasks/get", "tools/call")
    deadline = asyncio.get_running_loop().time() + self.max_s
    last = created
    while not isinstance(command, TaskEnded):
        if isinstance(command, TaskPoll):
            if asyncio.get_running_loop().time() + command.after_ms / 1000 > deadline:
                command = task.cancel() or TaskEnded("expired", "--max-time passed")
                self.say(f"task {task.task_id!r}: --max-time passed, cancelling it", "tasks/cancel")
                continue
            await asyncio.sleep(command.after_ms / 1000)  # the server's poll interval: how tasks are followed
            command = task.expired() or task.polled(*reply_outcome(last := await self.request(
                "tasks/get", {"taskId": task.task_id})))
            _status_notified(task, last)
        elif isinstance(command, TaskAskInput):
            self.say(f"task {task.task_id!r} asks for input ({', '.join(map(repr, command.requests))})",
                     "tasks/get")
            given: TaskCommand | None = None
            for key, request in command.requests.items():
                given = task.answer(key, answer(key, request)) or given
            command = given or TaskPoll(task.task_id, 0)
        elif isinstance(command, TaskUpdate):
            last = await self.request("tasks/update", {"taskId": task.task_id,
                                                       "inputResponses": command.responses})
            command = task.updated(reply_outcome(last)[1])
        elif isinstance(command, TaskCancel):
            last = await self.request("tasks/cancel", {"taskId": task.task_id})
            command = task.cancel_answered(reply_outcome(last)[1])
        else:  # FetchResult (2025-11-25): blocks until the task ends; the server's questions come on its stream
            last = await self.request("tasks/result", {"taskId": task.task_id})
            _status_notified(task, last)
            command = task.fetched(*reply_outcome(last))
    for finding in task.findings:
        self.linter.report(finding.rule, finding.message, last.key)
    self.say(f"task {task.task_id!r} ended {command.status} after {task.polls} poll(s)", "tasks/get")
    outcome = Reply(key=last.key, id=last.id, method="tools/call", params=created.params, sent=created.sent,
                    finished=last.finished, warnings=list(created.warnings))
    if command.status == "completed" and command.result is not None:
        outcome.result = command.result
    else:
        error = command.error or {}
        outcome.error = RpcError(int(error.get("code", -32603)) if isinstance(error.get("code"), int) else -32603,
                                 f"task {task.task_id} {command.status}: {error.get('message') or command.message}")
    return outcome


def _status_notified(task: TaskMachine, reply: Reply) -> None:
    """2025-11-25 status notifications that came on a request's stream, checked as the console checks them (a
    terminal status that changes is a finding); never relied on: what the requests answer decides."""
    for frame in reply.notifications:
        if frame.method == "notifications/tasks/status":
            task.status_notified(frame.params)
