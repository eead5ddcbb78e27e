"""The console follows a task (2026-07-28, the io.modelcontextprotocol/tasks extension) with the task machine
(app/mcp/task.py) the command line drives too, against the hostile target's tasks module (tests/hostile/tools_tasks.py):
a server written from the extension's text. The console in-process, the target a real process over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.everything.fixtures import everything_url, needs_everything
from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console, ConsoleRestarts, eventually

pytestmark = pytest.mark.processes
__all__ = ["everything_url"]


async def _call(console: Console, sid: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                       data={"tool": tool, "mode": "json", "json": json.dumps(arguments)})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


async def _operation(console: Console, sid: str, op: str) -> dict[str, Any]:
    response = await console.http.get(f"/sessions/{sid}/operations/{op}.json")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def _until(console: Console, sid: str, op: str, wanted: Callable[[dict[str, Any]], bool],
                 what: str, timeout: float = 15.0) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        data = await _operation(console, sid, op)
        return data if wanted(data) else None

    found: dict[str, Any] = await eventually(check, timeout, what)
    return found


def _ended(data: dict[str, Any]) -> bool:
    return data["status"] not in ("running", "awaiting_input")


def _header(entry: dict[str, Any], name: str) -> str | None:
    """A request header of the exchange, as its outgoing frame's wire record kept it."""
    for frame in entry["wire"]:
        if frame.get("direction") == "out" and frame.get("headers"):
            return next((v for k, v in frame["headers"] if k.lower() == name.lower()), None)
    return None


async def test_a_tool_answered_with_a_task_is_polled_until_it_completes_each_poll_naming_the_task(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    reply = await _call(console, sid, "slow_task", {"polls": 3})
    op = reply["operation"]["op"]
    assert reply["operation"]["task"]["task_id"].startswith("task-"), reply["operation"]
    done = await _until(console, sid, op, _ended, "the task to end")
    assert done["status"] == "complete", done
    assert done["final"]["result"]["content"][0]["text"] == "done after 3 polls"
    # The final reply is the call's: its id and a duration from the call to the task's end (never negative).
    assert done["final"]["method"] == "tools/call" and done["final"]["id"] == done["rounds"][0]["request_id"]
    assert 0 <= done["final"]["duration_ms"] < 60_000, done["final"]["duration_ms"]
    task = done["task"]
    assert task["status"] == "completed" and task["polls"] == 3 and task["ended"] == "completed", task
    polls = [x for x in task["exchanges"] if x["method"] == "tasks/get"]
    assert len(polls) == 3, task["exchanges"]
    for poll in polls:
        entry = await console.entry(sid, poll["key"])
        assert _header(entry, "Mcp-Name") == task["task_id"], entry["wire"]
        assert _header(entry, "Mcp-Method") == "tasks/get"
    call = await console.entry(sid, done["rounds"][0]["key"])
    sent = json.loads(next(f["raw"] for f in call["wire"] if f.get("direction") == "out"))
    declared = sent["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
    assert "io.modelcontextprotocol/tasks" in declared, declared


async def test_a_tasks_input_request_is_a_dialog_and_its_answer_goes_back_with_tasks_update(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "ask_task", {}))["operation"]["op"]
    asking = await _until(console, sid, op, lambda d: d["status"] == "awaiting_input", "the task to ask")
    assert list(asking["pending_requests"]) == ["name"], asking
    page = (await console.http.get(f"/sessions/{sid}")).text
    assert f"inbox-op-{op}" in page  # the same "Awaiting your input" place as an MRTR round's questions
    # Polling goes on while the question waits; the key is asked once however many polls repeat it.
    await _until(console, sid, op, lambda d: d["task"]["polls"] >= 3, "more polls while asking")
    assert list((await _operation(console, sid, op))["pending_requests"]) == ["name"]
    form = {"key": "name", "key_json": '"name"', "action": "accept", "arg.name": "Grace", "round": "1"}
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/answer", headers=JSON, data=form)
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end")
    assert done["status"] == "complete", done
    assert done["final"]["result"]["content"][0]["text"] == "hello Grace"
    updates = [x for x in done["task"]["exchanges"] if x["method"] == "tasks/update"]
    assert len(updates) == 1, done["task"]["exchanges"]
    entry = await console.entry(sid, updates[0]["key"])
    sent = json.loads(next(f["raw"] for f in entry["wire"] if f.get("direction") == "out"))
    assert sent["params"]["inputResponses"]["name"]["content"] == {"name": "Grace"}, sent


async def test_cancel_on_a_task_sends_tasks_cancel_and_ends_the_operation_cancelled(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    # Not forever_task: its ttl of 1.5 s could end it first on a loaded machine.
    op = (await _call(console, sid, "slow_task", {"polls": 100_000}))["operation"]["op"]
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end")
    assert done["status"] == "cancelled", done
    methods = [x["method"] for x in done["task"]["exchanges"]]
    assert "tasks/cancel" in methods, methods
    timeline = (await console.session(sid))["timeline"]
    assert not any(e.get("method") == "notifications/cancelled" for e in timeline)


async def test_a_task_past_its_ttl_ends_expired(console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "forever_task", {}))["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task to expire")
    assert done["status"] == "error" and done["task"]["ended"] == "expired", done
    assert "expired" in done["message"], done["message"]
    # The console's word, not dressed as a JSON-RPC error the server never sent.
    assert "code" not in done["final"]["error"] and "the server sent no error" in done["final"]["error"]["message"]


async def test_a_failed_task_ends_the_operation_with_the_tasks_error(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "failing_task", {}))["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task to end")
    assert done["status"] == "error" and done["task"]["ended"] == "failed", done
    assert "the task broke" in json.dumps(done["final"]["error"]), done["final"]


async def test_the_poll_interval_set_by_the_person_is_kept_with_the_task(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "ask_task", {}))["operation"]["op"]
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/poll-interval", headers=JSON,
                                       data={"ms": "250"})
    assert response.status_code == 200, response.text
    data = await _until(console, sid, op, lambda d: d["task"]["poll_override_ms"] == 250
                        and d["status"] == "awaiting_input", "the interval, and the task asking")
    assert data["task"]["poll_ms"] == 100  # the server's stays shown beside it
    card = (await console.http.get(f"/sessions/{sid}/operations/{op}")).text
    assert "Polls so far" in card and data["task"]["task_id"] in card and 'value="250"' in card, card
    assert "Set poll interval" in card and "Cancel the task (tasks/cancel)" in card


async def test_a_task_not_ended_when_the_console_restarts_is_polled_again_from_its_id_until_it_completes(
        restarts: ConsoleRestarts, hostile_http: Callable[..., HostileUrl]) -> None:
    console = restarts.first()
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "slow_task", {"polls": 8}))["operation"]["op"]
    before = await _until(console, sid, op, lambda d: d["task"]["polls"] >= 2, "a few polls")
    assert before["status"] == "running"

    again = await restarts.restart(console)
    kept = await _operation(again, sid, op)
    assert kept["status"] == "running" and kept["task"]["task_id"] == before["task"]["task_id"], kept
    response = await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    assert response.status_code in (200, 303), response.text
    done = await _until(again, sid, op, _ended, "the resumed task to end")
    assert done["status"] == "complete", done
    assert done["final"]["result"]["content"][0]["text"] == "done after 8 polls"
    assert done["task"]["polls"] >= 8 - before["task"]["polls"], done["task"]


# --- 2025-11-25 tasks against the official TypeScript SDK (server-everything's simulate-research-query, made with
# registerToolTask, execution.taskSupport "required") --------------------------------------------------------------

@needs_everything
@pytest.mark.slow
async def test_a_2025_tool_that_requires_a_task_goes_as_one_is_polled_and_its_result_fetched(
        console: Console, everything_url: str) -> None:
    sid = await console.connected_http(everything_url)
    op = (await _call(console, sid, "simulate-research-query", {"topic": "cats"}))["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task to end", timeout=60.0)
    assert done["status"] == "complete", done
    assert "Research Report: cats" in done["final"]["result"]["content"][0]["text"]
    task = done["task"]
    assert task["wire"] == "2025-11-25" and task["ended"] == "completed", task
    methods = [x["method"] for x in task["exchanges"]]
    assert "tasks/get" in methods and methods[-1] == "tasks/result", methods
    call = await console.entry(sid, done["rounds"][0]["key"])
    sent = json.loads(next(f["raw"] for f in call["wire"] if f.get("direction") == "out"))
    assert sent["params"]["task"] == {"ttl": 300_000}, sent["params"]


@needs_everything
@pytest.mark.slow
async def test_a_2025_tasks_question_on_the_tasks_result_stream_is_a_dialog_and_its_answer_completes_the_task(
        console: Console, everything_url: str) -> None:
    sid = await console.connected_http(everything_url)
    op = (await _call(console, sid, "simulate-research-query", {"topic": "cats", "ambiguous": True}))["operation"]["op"]

    async def asked() -> dict[str, Any] | None:
        waiting = [r for r in (await console.session(sid))["server_requests"] if r["status"] == "awaiting"]
        return waiting[0] if waiting else None

    question: dict[str, Any] = await eventually(asked, 30.0, "the task's elicitation on the tasks/result stream")
    response = await console.http.post(f"/sessions/{sid}/server-requests/{question['id']}/answer", headers=JSON,
                                       data={"action": "decline"})
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the task to end", timeout=60.0)
    assert done["status"] == "complete", done
    assert "User declined" in done["final"]["result"]["content"][0]["text"]
    assert done["task"]["wire"] == "2025-11-25"


# --- push (2026-07-28, optional): subscriptions/listen with notifications.taskIds, then notifications/tasks ---------

def _push_listen(session: dict[str, Any], task_id: str) -> dict[str, Any] | None:
    return next((sub for sub in session["subscriptions"]
                 if task_id in (sub["requested"] or {}).get("taskIds", [])), None)


async def test_push_is_off_by_default_and_the_task_view_offers_it(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "slow_task", {"polls": 100_000}))["operation"]["op"]
    card = (await console.http.get(f"/sessions/{sid}/operations/{op}")).text
    assert "Push: listen for this task" in card and 'aria-pressed="false"' in card, card
    assert (await console.session(sid))["subscriptions"] == []
    on = await console.http.post(f"/sessions/{sid}/operations/{op}/task-push", data={"on": "1"})
    assert on.status_code == 200 and "Stop push" in on.text, on.text
    task_id = (await _operation(console, sid, op))["task"]["task_id"]

    async def acknowledged() -> dict[str, Any] | None:
        sub = _push_listen(await console.session(sid), task_id)
        return sub if sub is not None and sub["state"] == "active" else None

    sub = await eventually(acknowledged, 10.0, "the listen for the task acknowledged")
    assert sub["acknowledged"] == {"taskIds": [task_id]}, sub
    off = await console.http.post(f"/sessions/{sid}/operations/{op}/task-push", data={"on": "0"})
    assert off.status_code == 200 and "Push: listen for this task" in off.text
    assert (_push_listen(await console.session(sid), task_id) or {}).get("state") == "stopped"
    await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)


async def test_a_pushed_notifications_tasks_ends_the_task_before_any_poll_and_the_listen_stops(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    op = (await _call(console, sid, "push_task", {}))["operation"]["op"]  # polled every 5 s
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/task-push", headers=JSON, data={"on": "1"})
    assert response.status_code == 200, response.text
    done = await _until(console, sid, op, _ended, "the pushed end", timeout=4.0)
    assert done["status"] == "complete", done
    assert done["final"]["result"]["content"][0]["text"] == "done, and pushed"
    assert done["task"]["polls"] == 0 and done["task"]["notified"] >= 1, done["task"]
    task_id = done["task"]["task_id"]

    async def stopped() -> dict[str, Any] | None:
        sub = _push_listen(await console.session(sid), task_id)
        return sub if sub is not None and sub["state"] == "stopped" else None

    sub = await eventually(stopped, 10.0, "the task's listen stopped at its end")
    listen = await console.entry(sid, sub["exchange"])
    sent = json.loads(next(f["raw"] for f in listen["wire"] if f.get("direction") == "out"))
    assert sent["params"]["notifications"] == {"taskIds": [task_id]}, sent
    assert "io.modelcontextprotocol/tasks" in sent["params"]["_meta"][
        "io.modelcontextprotocol/clientCapabilities"]["extensions"]


async def test_push_on_a_2025_task_is_refused_with_what_that_revision_has_instead(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks2025"))
    op = (await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "optional_task", "mode": "json", "json": '{"polls": 100000}', "as_task": "1"})).json()
    response = await console.http.post(f"/sessions/{sid}/operations/{op['operation']['op']}/task-push",
                                       headers=JSON, data={"on": "1"})
    assert response.status_code == 409 and "notifications/tasks/status" in response.text, response.text


async def test_an_ended_tasks_entry_shows_its_task_view_and_its_result_after_a_reload(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))
    reply = await _call(console, sid, "slow_task", {"polls": 2})
    op = reply["operation"]["op"]
    await _until(console, sid, op, _ended, "the task to end")
    body = await console.http.get(f"/sessions/{sid}/entries/op-{op}/body")
    assert body.status_code == 200, body.text
    assert 'class="task-view"' in body.text and "done after 2 polls" in body.text
