"""2025-11-25 tasks in the console beyond a required tool: the "Run as a task" choice of an optional tool, tasks/list,
and notifications/tasks/status. Against the hostile target's 2025-11-25 tasks module (tests/hostile/tools_tasks2025.py)
as a real process (HTTP, and stdio where a notification must come outside any request), and server-everything's
tasks/list (the official TypeScript SDK's). The console in-process."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from tests.everything.fixtures import everything_url, needs_everything
from tests.hostile.fixtures import HostileUrl, hostile_argv
from tests.integration.conftest import JSON, REPO_ROOT, Console, ConsoleRestarts, eventually
from tests.integration.test_tasks_console import _ended, _operation, _until

pytestmark = pytest.mark.processes
__all__ = ["everything_url"]


async def _call(console: Console, sid: str, tool: str, **form: str) -> dict[str, Any]:
    data = {"tool": tool, "mode": "json", "json": "{}", **form}
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data=data)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


async def _sent_params(console: Console, sid: str, key: str) -> dict[str, Any]:
    entry = await console.entry(sid, key)
    sent = json.loads(next(f["raw"] for f in entry["wire"] if f.get("direction") == "out"))
    params: dict[str, Any] = sent["params"]
    return params


async def _legacy(console: Console, url: str) -> str:
    sid = await console.connected_http(url)
    assert "2025-11-25" in json.dumps((await console.session(sid))["era"])
    return sid


async def test_an_optional_tool_goes_as_a_task_only_when_chosen_with_the_ttl_given(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))
    plain = await _call(console, sid, "optional_task")
    assert plain["status"] == "complete" and plain["operation"].get("task") is None, plain
    assert plain["result"]["content"][0]["text"] == "done at once (a plain call)"
    assert "task" not in await _sent_params(console, sid, plain["operation"]["rounds"][0]["key"])

    chosen = await _call(console, sid, "optional_task", as_task="1", task_ttl="5000")
    op = chosen["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the chosen task to end")
    assert done["status"] == "complete" and done["task"]["wire"] == "2025-11-25", done
    assert (await _sent_params(console, sid, done["rounds"][0]["key"]))["task"] == {"ttl": 5000}
    assert done["task"]["ttl_ms"] == 5000 and done["task"]["ended"] == "completed"

    no_ttl = (await _call(console, sid, "optional_task", as_task="1"))["operation"]
    assert (await _sent_params(console, sid, no_ttl["rounds"][0]["key"]))["task"] == {}  # the server's ttl


async def test_a_required_tool_is_always_a_task_and_a_tool_without_task_support_never_is(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))
    required = (await _call(console, sid, "required_task"))["operation"]
    assert (await _sent_params(console, sid, required["rounds"][0]["key"]))["task"] == {"ttl": 300_000}
    assert (await _until(console, sid, required["op"], _ended, "the task to end"))["status"] == "complete"
    plain = await _call(console, sid, "plain_tool", as_task="1")  # chosen, but the tool says nothing: never sent
    assert plain["result"]["content"][0]["text"] == "plain result (params.task sent: False)", plain


async def test_the_call_form_offers_the_choice_only_where_the_tool_allows_a_task(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))

    async def form(tool: str) -> str:
        response = await console.http.get(f"/sessions/{sid}/tools/form", params={"name": tool})
        assert response.status_code == 200, response.text
        return response.text

    optional = await form("optional_task")
    assert 'name="as_task" value="1"' in optional and 'type="checkbox" name="as_task"' in optional
    assert "Run as a task" in optional and 'name="task_ttl"' in optional
    assert '<input type="checkbox" name="as_task" value="1">' in optional  # never kept checked from a past call
    required = await form("required_task")
    assert "Always runs as a task" in required and 'type="hidden" name="as_task"' in required
    assert "task-choice" not in await form("plain_tool")


async def test_a_ttl_that_is_no_whole_number_is_refused_before_anything_is_sent(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))
    refused = await _call(console, sid, "optional_task", as_task="1", task_ttl="1.5")
    assert refused["sent"] is False and "task_ttl" in refused["errors"], refused


async def test_tasks_list_pages_the_servers_tasks_by_next_cursor_each_page_a_timeline_request(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))
    ops = [(await _call(console, sid, "required_task"))["operation"]["op"] for _ in range(3)]
    for op in ops:
        await _until(console, sid, op, _ended, "each task to end")
    page = (await console.http.get(f"/sessions/{sid}")).text
    assert "List the server’s tasks (tasks/list)" in page

    first = (await console.http.post(f"/sessions/{sid}/tasks/list", headers=JSON)).json()
    assert [t["status"] for t in first["tasks"]] == ["completed", "completed"] and first["nextCursor"] == "c2", first
    html = (await console.http.post(f"/sessions/{sid}/tasks/list", data={"cursor": first["nextCursor"]})).text
    assert "Next page" not in html and 'aria-label="The server\'s tasks"' in html
    assert "300000 ms" in html and "legacy-task-" in html
    timeline = (await console.session(sid))["timeline"]
    listed = [e for e in timeline if e.get("method") == "tasks/list"]
    assert len(listed) == 2, listed
    second = await console.entry(sid, listed[0]["key"])  # newest first
    assert json.loads(next(f["raw"] for f in second["wire"] if f.get("direction") == "out"))["params"]["cursor"] == "c2"


async def test_a_server_without_tasks_list_gets_no_panel_and_no_request(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("tasks"))  # 2026-07-28: no tasks/list at all
    assert "List the server’s tasks" not in (await console.http.get(f"/sessions/{sid}")).text
    response = await console.http.post(f"/sessions/{sid}/tasks/list", headers=JSON)
    assert response.status_code == 409, response.text


async def test_a_status_notification_folds_into_the_task_view_and_polling_goes_on(console: Console) -> None:
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("tasks2025")), cwd=str(REPO_ROOT))
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    op = (await _call(console, sid, "status_task"))["operation"]["op"]
    told = await _until(console, sid, op, lambda d: d["task"]["notified"] >= 1, "the status notification")
    assert told["task"]["status_message"] == "halfway (said by notifications/tasks/status)", told["task"]
    assert told["status"] == "running" and told["task"]["polls"] == 0  # the notification decided nothing
    card = (await console.http.get(f"/sessions/{sid}/operations/{op}")).text
    assert "halfway (said by notifications/tasks/status)" in card and "Told by the server" in card
    done = await _until(console, sid, op, _ended, "the task to end by polling")
    assert done["status"] == "complete" and done["task"]["polls"] >= 1, done
    timeline = (await console.session(sid))["timeline"]
    assert any("notifications/tasks/status" in json.dumps(e) for e in timeline), "not on the timeline"


async def test_a_terminal_status_that_a_status_notification_changes_is_a_lint_finding(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _legacy(console, hostile_http("tasks2025"))
    op = (await _call(console, sid, "flip_task"))["operation"]["op"]
    done = await _until(console, sid, op, _ended, "the task to end")
    assert done["status"] == "complete", done  # what tasks/result answered decides, not the notification
    assert [f["rule"] for f in done["task"]["findings"]] == ["tasks.terminal-changed"], done["task"]
    assert "completed, then failed" in done["task"]["findings"][0]["message"]

    async def found() -> int | None:
        return (await console.session(sid))["findings"].get("tasks.terminal-changed")

    assert await eventually(found, 10.0, "the finding in the session's lint") == 1


async def test_a_2025_task_not_ended_when_the_console_restarts_is_polled_again_from_its_id_and_its_result_fetched(
        restarts: ConsoleRestarts, hostile_http: Callable[..., HostileUrl]) -> None:
    # The hostile target keeps its tasks beyond the Mcp-Session-Id that made them (server-everything does not: see
    # tests/integration/test_tasks_everything.py), so the new session after the restart can still reach the task.
    console = restarts.first()
    sid = await _legacy(console, hostile_http("tasks2025"))
    op = (await _call(console, sid, "required_task", json=json.dumps({"polls": 12})))["operation"]["op"]
    before = await _until(console, sid, op, lambda d: d["task"]["polls"] >= 2, "a few polls")
    assert before["status"] == "running" and before["task"]["status"] == "working", before
    task_id = before["task"]["task_id"]

    again = await restarts.restart(console)
    kept = await _operation(again, sid, op)
    assert kept["status"] == "running" and kept["task"]["task_id"] == task_id, kept
    response = await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    assert response.status_code in (200, 303), response.text
    done = await _until(again, sid, op, _ended, "the resumed task to end")
    assert done["status"] == "complete" and done["task"]["ended"] == "completed", done
    assert done["final"]["result"]["content"][0]["text"].startswith("done as a task after 12 polls"), done["final"]
    methods = [x["method"] for x in done["task"]["exchanges"]]
    assert methods[-1] == "tasks/result" and methods.count("tasks/result") == 1, methods
    fetched = await _sent_params(again, sid, done["task"]["exchanges"][-1]["key"])
    assert fetched["taskId"] == task_id, fetched


@needs_everything
@pytest.mark.slow
async def test_tasks_list_on_server_everything_lists_the_task_a_call_became(console: Console,
                                                                         everything_url: str) -> None:
    sid = await console.connected_http(everything_url)
    op = (await _call(console, sid, "simulate-research-query", json=json.dumps({"topic": "cats"})))["operation"]["op"]
    task_id = (await _operation(console, sid, op))["task"]["task_id"]
    listed = (await console.http.post(f"/sessions/{sid}/tasks/list", headers=JSON)).json()
    assert listed["ok"] and task_id in [t["taskId"] for t in listed["tasks"]], listed
    await _until(console, sid, op, _ended, "the task to end", timeout=60.0)
