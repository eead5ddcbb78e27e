"""2025-11-25 tasks in the console against the official TypeScript SDK 1.x (`registerToolTask`, pinned): the real
`@modelcontextprotocol/server-everything` and its `simulate-research-query` (execution.taskSupport "required").

What that tool does (dist/tools/simulate-research-query.js, on @modelcontextprotocol/sdk 1.32.2): it creates its task
with `ttl: 300000, pollInterval: 1000` whatever `params.task.ttl` asked (the SDK's InMemoryTaskStore deletes a task
that long after it is created, or after it ends), then works four stages of 1 s each; with `ambiguous: true` it asks
an `elicitation/create` at the third stage, queued for the `tasks/result` stream, and waits for the answer. tasks/cancel
is the SDK's own handler: the task becomes `cancelled` at once (the work notices on its next stage and stops). Over
Streamable HTTP each Mcp-Session-Id has its own server and task store, which the session's DELETE throws away; over
stdio the process holds them.

Here: a task cancelled with tasks/cancel, a short ttl asked for (the server keeps its own), and a restart of the
console mid-task (the task belonged to the session the restart closed). tests/everything/ttl_tasks.mjs is a task
tool made as simulate-research-query is, on the same SDK, that keeps the ttl asked for and, over the SDK's stateless
HTTP, its tasks beyond a client's initialize: there a ttl passes, and a restart resumes the task to its result. The
console in-process, the servers real processes.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from tests.everything.fixtures import (
    ROOT,
    everything_argv,
    everything_url,
    needs_everything,
    ttl_tasks_argv,
    ttl_tasks_url,
)
from tests.integration.conftest import JSON, Console, ConsoleRestarts, eventually
from tests.integration.test_tasks_console import _call, _ended, _operation, _until

pytestmark = [pytest.mark.processes, needs_everything, pytest.mark.slow]
__all__ = ["everything_url", "ttl_tasks_url"]
STARTUP_S = 60.0  # node starting on a busy 2-core machine
TOOL = "simulate-research-query"


@pytest.fixture(params=["stdio", "http"])
async def everything(request: pytest.FixtureRequest, console: Console) -> str:
    """A connected 2025-11-25 session on server-everything, over stdio or Streamable HTTP; its id."""
    if request.param == "stdio":
        form = {"kind": "stdio", "command": shlex.join(everything_argv("stdio")), "cwd": str(ROOT)}
    else:
        form = {"kind": "http", "url": request.getfixturevalue("everything_url"), "headers": ""}
    s = await console.connect(timeout=STARTUP_S, **form)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return str(s["id"])


def _exchanges(task: dict[str, Any], method: str) -> list[dict[str, Any]]:
    return [x for x in task["exchanges"] if x["method"] == method]


async def _frames(console: Console, sid: str, key: str, direction: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of one exchange that went that way (`out` sent, `in` received)."""
    entry = await console.entry(sid, key)
    return [json.loads(f["raw"]) for f in entry["wire"] if f.get("direction") == direction and f.get("raw")]


async def _server_task(console: Console, sid: str, task_id: str) -> dict[str, Any] | None:
    """The task as the server's tasks/list has it now (one page is enough: these sessions hold a task or two)."""
    listed = (await console.http.post(f"/sessions/{sid}/tasks/list", headers=JSON)).json()
    assert listed["ok"], listed
    return next((t for t in listed["tasks"] if t["taskId"] == task_id), None)


def _no_cancelled_notification(session: dict[str, Any]) -> None:
    assert not any(e.get("method") == "notifications/cancelled" for e in session["timeline"]), \
        [e.get("method") for e in session["timeline"]]


async def test_a_running_2025_task_cancelled_with_tasks_cancel_ends_cancelled_and_the_server_lists_it_cancelled(
        console: Console, everything: str) -> None:
    sid = everything
    op = (await _call(console, sid, TOOL, {"topic": "cats"}))["operation"]["op"]  # four stages of 1 s
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end", timeout=30.0)
    assert done["status"] == "cancelled" and done["task"]["ended"] == "cancelled", done
    assert done["message"] == "The task cancelled: cancelled by you (tasks/cancel)", done["message"]
    [cancel] = _exchanges(done["task"], "tasks/cancel")
    assert not _exchanges(done["task"], "tasks/result"), done["task"]["exchanges"]
    [sent] = await _frames(console, sid, cancel["key"], "out")
    assert sent["params"]["taskId"] == done["task"]["task_id"], sent
    answered = [m for m in await _frames(console, sid, cancel["key"], "in") if "result" in m]
    assert answered and answered[0]["result"]["status"] == "cancelled", answered
    assert answered[0]["result"]["statusMessage"] == "Client cancelled task execution."
    server_side = await _server_task(console, sid, done["task"]["task_id"])
    assert server_side is not None and server_side["status"] == "cancelled", server_side
    _no_cancelled_notification(await console.session(sid))


async def test_a_2025_task_asking_on_the_tasks_result_stream_can_be_cancelled_and_its_question_is_no_longer_asked(
        console: Console, everything_url: str) -> None:
    sid = await console.connected_http(everything_url)
    op = (await _call(console, sid, TOOL, {"topic": "cats", "ambiguous": True}))["operation"]["op"]

    async def asked() -> dict[str, Any] | None:
        waiting = [r for r in (await console.session(sid))["server_requests"] if r["status"] == "awaiting"]
        return waiting[0] if waiting else None

    await eventually(asked, 30.0, "the task's elicitation on the tasks/result stream")  # at the third stage
    running = await _operation(console, sid, op)
    assert running["task"]["status"] == "input_required", running["task"]
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end", timeout=30.0)
    assert done["status"] == "cancelled" and done["task"]["ended"] == "cancelled", done
    server_side = await _server_task(console, sid, done["task"]["task_id"])
    assert server_side is not None and server_side["status"] == "cancelled", server_side

    async def let_go() -> list[dict[str, Any]] | None:
        requests = (await console.session(sid))["server_requests"]
        return requests if not any(r["status"] == "awaiting" for r in requests) else None

    requests = await eventually(let_go, 15.0, "the cancelled task's question no longer awaiting an answer")
    # The tasks/result stream that carried it ended (the server answered it once the task was cancelled).
    [question] = [r for r in requests if r["method"] == "elicitation/create"]
    assert question["status"] == "gone", question
    assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
        "taskId": done["task"]["task_id"]}, question
    _no_cancelled_notification(await console.session(sid))


async def test_a_2025_task_asked_for_a_short_ttl_keeps_the_ttl_the_server_chose_and_completes(
        console: Console, everything_url: str) -> None:
    sid = await console.connected_http(everything_url)
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": TOOL, "mode": "json", "json": json.dumps({"topic": "cats"}), "as_task": "1", "task_ttl": "500"})
    assert response.status_code == 200, response.text
    op = response.json()["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task to end", timeout=60.0)
    [call] = await _frames(console, sid, done["rounds"][0]["key"], "out")
    assert call["params"]["task"] == {"ttl": 500}, call["params"]
    # A receiver may override the ttl; the console counts the one the server gave (the 500 ms asked for passed
    # long before the four stages did), so the task is neither expired nor given up.
    assert done["status"] == "complete" and done["task"]["ended"] == "completed", done
    assert done["task"]["ttl_ms"] == 300_000, done["task"]
    assert "Research Report: cats" in done["final"]["result"]["content"][0]["text"]
    card = (await console.http.get(f"/sessions/{sid}/operations/{op}")).text
    assert "<dt>TTL</dt>" in card and "counted from when the console saw it created" in card, card


async def test_a_2025_task_polled_again_by_its_persisted_id_after_a_restart_is_gone_with_the_session_that_held_it(
        restarts: ConsoleRestarts, everything_url: str) -> None:
    console = restarts.first()
    sid = await console.connected_http(everything_url)
    op = (await _call(console, sid, TOOL, {"topic": "cats"}))["operation"]["op"]
    before = await _until(console, sid, op, lambda d: d["task"]["polls"] >= 1, "a first poll", timeout=30.0)
    assert before["status"] == "running" and before["task"]["status"] == "working", before
    task_id = before["task"]["task_id"]

    again = await restarts.restart(console)  # shutting down ends the Mcp-Session-Id with a DELETE
    kept = await _operation(again, sid, op)
    assert kept["status"] == "running" and kept["task"]["task_id"] == task_id, kept
    response = await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    assert response.status_code in (200, 303), response.text
    done = await _until(again, sid, op, _ended, "the resumed task to end", timeout=30.0)
    # server-everything keeps tasks per session (a server and task store per Mcp-Session-Id, dropped with it), and
    # the console starts a new session: the persisted id is asked for and the server no longer knows it.
    assert done["status"] == "error" and done["task"]["ended"] == "gone", done
    assert "no longer knows the task" in done["message"] and "Task not found" in done["message"], done["message"]
    last_poll = _exchanges(done["task"], "tasks/get")[-1]
    [sent] = await _frames(again, sid, last_poll["key"], "out")
    assert sent["params"]["taskId"] == task_id, sent
    answered = [m for m in await _frames(again, sid, last_poll["key"], "in") if "error" in m]
    assert answered and answered[0]["error"]["code"] == -32602, answered
    assert done["final"]["error"]["code"] == -32602, done["final"]


async def test_a_2025_task_whose_ttl_passes_ends_expired_in_the_task_view_and_the_server_deletes_it(
        console: Console) -> None:
    s = await console.connect(timeout=STARTUP_S, kind="stdio", command=shlex.join(ttl_tasks_argv()), cwd=str(ROOT))
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    sid = str(s["id"])
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "slow-task", "mode": "json", "json": json.dumps({"seconds": 60}), "as_task": "1", "task_ttl": "1000"})
    assert response.status_code == 200, response.text
    op = response.json()["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task's ttl to pass", timeout=30.0)
    task = done["task"]
    assert task["ttl_ms"] == 1000 and task["poll_ms"] == 400, task
    # The console gives the task up once its ttl has passed on its own clock (started when it saw the task made, a
    # little after the server's): "expired", asking nothing more. A poll that lands in between finds it deleted.
    assert done["status"] == "error" and task["ended"] in ("expired", "gone"), done
    if task["ended"] == "expired":
        assert done["message"] == "The task expired: its ttl of 1000 ms passed", done["message"]
    else:
        assert done["final"]["error"]["code"] == -32602, done["final"]
    assert not _exchanges(task, "tasks/result") and not _exchanges(task, "tasks/cancel"), task["exchanges"]
    card = (await console.http.get(f"/sessions/{sid}/operations/{op}")).text
    assert f"The task {task['ended']}" in card and task["task_id"] in card, card
    assert await _server_task(console, sid, task["task_id"]) is None  # the SDK's store deleted it at its ttl


async def test_a_2025_task_not_ended_at_a_console_restart_is_polled_again_from_its_id_and_fetched_with_tasks_result(
        restarts: ConsoleRestarts, ttl_tasks_url: str) -> None:
    console = restarts.first()
    sid = await console.connected_http(ttl_tasks_url)
    op = (await _call(console, sid, "slow-task", {"seconds": 4}))["operation"]["op"]
    before = await _until(console, sid, op, lambda d: d["task"]["polls"] >= 1, "a first poll", timeout=30.0)
    assert before["status"] == "running" and before["task"]["status"] == "working", before
    task_id = before["task"]["task_id"]

    again = await restarts.restart(console)
    kept = await _operation(again, sid, op)
    assert kept["status"] == "running" and kept["task"]["task_id"] == task_id, kept
    response = await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    assert response.status_code in (200, 303), response.text
    done = await _until(again, sid, op, _ended, "the resumed task to end", timeout=30.0)
    assert done["status"] == "complete" and done["task"]["ended"] == "completed", done
    result = done["final"]["result"]
    assert result["content"][0]["text"] == "done after 4 s", result
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}, result
    polls = _exchanges(done["task"], "tasks/get")
    assert len(polls) > before["task"]["polls"], done["task"]["exchanges"]  # polled again after the restart
    [fetched] = _exchanges(done["task"], "tasks/result")
    assert done["task"]["exchanges"][-1] == fetched, done["task"]["exchanges"]
    for exchange in (polls[-1], fetched):
        [sent] = await _frames(again, sid, exchange["key"], "out")
        assert sent["params"]["taskId"] == task_id, sent


async def test_a_2025_task_that_completed_before_its_cancel_arrived_ends_with_its_result_not_gone(
        console: Console, ttl_tasks_url: str) -> None:
    sid = await console.connected_http(ttl_tasks_url)
    op = (await _call(console, sid, "slow-task", {"seconds": 1}))["operation"]["op"]
    # The person slows polling right down, so the console has not seen the task end when the cancel goes.
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/poll-interval", headers=JSON,
                                       data={"ms": "60000"})
    assert response.status_code == 200, response.text
    task_id = (await _operation(console, sid, op))["task"]["task_id"]

    async def completed() -> dict[str, Any] | None:
        task = await _server_task(console, sid, task_id)
        return task if task is not None and task["status"] == "completed" else None

    await eventually(completed, 15.0, "the server to complete the task")
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end", timeout=15.0)
    # tasks/cancel on a terminal task is -32602 (as on an unknown one): one more tasks/get tells them apart
    [cancel] = _exchanges(done["task"], "tasks/cancel")
    refused = [m for m in await _frames(console, sid, cancel["key"], "in") if "error" in m]
    assert refused and refused[0]["error"]["code"] == -32602, refused
    assert done["status"] == "complete" and done["task"]["ended"] == "completed", done["message"]
    assert done["final"]["result"]["content"][0]["text"] == "done after 1 s", done["final"]
    assert done["task"]["exchanges"][-1]["method"] == "tasks/result", done["task"]["exchanges"]
