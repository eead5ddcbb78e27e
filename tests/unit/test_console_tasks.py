"""OperationDriver follows a task (2026-07-28, io.modelcontextprotocol/tasks) on a memory runner: the task's steps
are `op_task` events, the fold of the stored events is the live fold, and a restart keeps a task not ended running
(it is polled again from its id) while it ends every other operation in flight."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from app.console.events import Restored, TimelineEvent
from app.console.live_events import OpAnswered
from app.console.operations import OperationDriver
from app.console.state import fold, projection
from app.console.timeline import Timeline
from app.mcp.task_extension import declaring
from tests.memory_runner import MakeRunner, error, result

ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "Your name?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}}}}


def task_server(asks: bool = False, polls_needed: int = 2) -> Any:
    """A task that works for `polls_needed` polls (or asks for a name until tasks/update answers it), then
    completes; every poll asks again for the same key until it is answered."""
    seen: dict[str, Any] = {"polls": 0, "answer": None}

    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        method, params = message["method"], message["params"]
        fields = {"taskId": "t1", "createdAt": "2026-12-07T00:00:00Z", "lastUpdatedAt": "2026-12-07T00:00:00Z",
                  "ttlMs": 60_000, "pollIntervalMs": 50}
        if method == "tools/call":
            yield result(message, {"resultType": "task", "status": "working", **fields})
        elif method == "tasks/update":
            seen["answer"] = params["inputResponses"]["name"]
            yield result(message, {"resultType": "complete"})
        elif method == "tasks/get":
            seen["polls"] += 1
            if asks and seen["answer"] is None:
                yield result(message, {"resultType": "complete", "status": "input_required",
                                       "inputRequests": {"name": ASK}, **fields})
            elif seen["polls"] >= polls_needed:
                yield result(message, {"resultType": "complete", "status": "completed", **fields,
                                       "result": {"content": [{"type": "text", "text": "done"}]}})
            else:
                yield result(message, {"resultType": "complete", "status": "working", **fields})

    return server


async def until(check: Any, what: str) -> None:
    async with asyncio.timeout(5):
        while not check():
            await asyncio.sleep(0.01)


async def test_a_task_is_polled_to_its_end_and_the_stored_events_fold_to_the_live_operation(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(task_server(polls_needed=3))
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "slow", "arguments": {}})
    await until(lambda: timeline.state.operations[op.id].status == "complete", "the task to complete")
    record = timeline.state.operations[op.id]
    assert record.task is not None and record.task["polls"] == 3 and record.task["ended"] == "completed"
    assert record.final is not None and record.final.data["result"]["content"][0]["text"] == "done"
    assert all(m["params"]["taskId"] == "t1" for m in runner.sent("tasks/get"))
    stored = timeline.stored().events(timeline.session_id)
    assert projection(fold(timeline.session_id, stored))["operations"] == projection(timeline.state)["operations"]


async def test_a_question_repeated_on_every_poll_is_asked_once_and_answered_with_one_tasks_update(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(task_server(asks=True))
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "ask", "arguments": {}})
    await until(lambda: (timeline.state.operations[op.id].task or {}).get("polls", 0) >= 3, "a few polls")
    record = timeline.state.operations[op.id]
    assert record.status == "awaiting_input" and list(record.pending) == ["name"]
    assert await driver.answer(op, "name", {"action": "accept", "content": {"name": "Ada"}})
    assert not await driver.answer(op, "name", {"action": "accept", "content": {"name": "Bob"}})
    await until(lambda: timeline.state.operations[op.id].status == "complete", "the task to complete")
    [update] = runner.sent("tasks/update")
    assert update["params"]["taskId"] == "t1"
    assert update["params"]["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Ada"}}}


async def test_a_restart_keeps_a_task_not_ended_running_and_resumes_polling_it(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(task_server(polls_needed=1_000_000))
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "slow", "arguments": {}})
    await until(lambda: (timeline.state.operations[op.id].task or {}).get("polls", 0) >= 1, "a poll")
    await runner.background.cancel_all()  # the console stops

    stored = list(timeline.stored().events(timeline.session_id))
    restored = fold(timeline.session_id, [*stored, TimelineEvent(timeline.session_id, stored[-1].seq + 1,
                                                                   Restored(note="restarted"))])
    kept = restored.operations[op.id]
    assert kept.status == "running" and kept.task is not None and kept.task["task_id"] == "t1"

    driver.tasks.clear()
    assert driver.following() == [op.id]
    polls = len(runner.sent("tasks/get"))
    assert driver.resume_tasks() == [op.id]
    await until(lambda: len(runner.sent("tasks/get")) > polls, "polling again")
    assert await driver.cancel(driver.ops[op.id], "owner")
    assert timeline.state.operations[op.id].status == "cancelled"
    assert runner.sent("tasks/cancel")[0]["params"]["taskId"] == "t1"
    assert not runner.sent("notifications/cancelled")


async def test_a_poll_the_wire_failed_is_sent_again_and_only_the_servers_own_error_would_end_the_task(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(task_server(polls_needed=2))
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "slow", "arguments": {}})
    follower = driver.tasks[op.id]
    runner.transport.refuse = True  # the connection is down for a poll
    await until(lambda: follower.misses >= 1, "a poll to fail on the wire")
    runner.transport.refuse = False
    await until(lambda: timeline.state.operations[op.id].status == "complete", "the task to complete")
    assert timeline.state.operations[op.id].task["ended"] == "completed"  # type: ignore[index]


async def test_an_answer_given_before_a_restart_goes_with_tasks_update_when_polling_resumes_never_as_a_retry(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(task_server(asks=True))
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "ask", "arguments": {}})
    await until(lambda: timeline.state.operations[op.id].status == "awaiting_input", "the question")
    await runner.background.cancel_all()  # the console stops right after the answer was recorded, before sending it
    answer = {"action": "accept", "content": {"name": "Ada"}}
    timeline.append(OpAnswered(key=op.key, op=op.id, round=1, input="name", at=0.0, value=answer))
    driver.tasks.clear()

    assert driver.answered_in_full() == []  # not an MRTR round: no retry of the tools/call
    assert driver.resume_tasks() == [op.id]
    await until(lambda: timeline.state.operations[op.id].status == "complete", "the task to complete")
    [update] = runner.sent("tasks/update")
    assert update["params"]["inputResponses"] == {"name": answer}
    assert len(runner.sent("tools/call")) == 1


async def test_a_cancel_refused_because_the_task_had_completed_ends_the_operation_with_the_tasks_result(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    done = {"polled": False}
    fields = {"taskId": "t1", "createdAt": "2026-12-07T00:00:00Z", "lastUpdatedAt": "2026-12-07T00:00:00Z",
              "ttlMs": 60_000, "pollIntervalMs": 60_000}  # no poll before the cancel

    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        if message["method"] == "tools/call":
            yield result(message, {"resultType": "task", "status": "working", **fields})
        elif message["method"] == "tasks/cancel":  # it completed a moment before
            yield error(message, -32602, "Cannot cancel task in terminal status: completed")
        elif message["method"] == "tasks/get":
            done["polled"] = True
            yield result(message, {"resultType": "complete", "status": "completed", **fields,
                                   "result": {"content": [{"type": "text", "text": "done"}]}})

    runner = make_runner(server)
    runner.set_capabilities(declaring({}))
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "slow", "arguments": {}})
    await until(lambda: op.id in driver.tasks, "the task to be followed")
    assert await driver.cancel(op, "owner")
    await until(lambda: timeline.state.operations[op.id].status != "running", "the operation to end")
    record = timeline.state.operations[op.id]
    assert record.status == "complete" and record.task is not None and record.task["ended"] == "completed"
    assert record.final is not None and record.final.data["result"]["content"][0]["text"] == "done"
    assert [x["method"] for x in record.task["exchanges"]][-2:] == ["tasks/cancel", "tasks/get"]
    assert done["polled"] and len(runner.sent("tasks/cancel")) == 1
