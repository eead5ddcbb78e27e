"""`mcp-console call` follows a task (2026-07-28, the io.modelcontextprotocol/tasks extension) with the task machine
(app/mcp/task.py), against the hostile target's tasks module (tests/hostile/tools_tasks.py): a server written from
the extension's text, since no SDK ships one yet. Real processes over real HTTP."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.everything.fixtures import everything_url, needs_everything, ttl_tasks_argv
from tests.integration.conftest import mcp_console

pytestmark = pytest.mark.processes
__all__ = ["everything_url"]


def har_entries(path: Path) -> list[dict[str, object]]:
    return json.loads(path.read_text(encoding="utf-8"))["log"]["entries"]


def header(entry: dict[str, object], name: str) -> str | None:
    request = entry["request"]
    assert isinstance(request, dict)
    return next((h["value"] for h in request["headers"] if h["name"].lower() == name.lower()), None)


def test_a_tool_answered_with_a_task_is_polled_until_it_completes_each_poll_naming_the_task(
        hostile_http: Callable[..., str], tmp_path: Path) -> None:
    url = hostile_http("tasks")
    har = tmp_path / "task.har"
    done = mcp_console("call", url, "slow_task", "--arg", "polls=3", "--har", str(har))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["result"]["content"][0]["text"] == "done after 3 polls"
    assert "answered with task 'task-" in done.stderr and "ended completed after 3 poll(s)" in done.stderr
    polls = [e for e in har_entries(har) if json.loads(e["request"]["postData"]["text"])["method"] == "tasks/get"]
    assert len(polls) == 3
    task_id = json.loads(polls[0]["request"]["postData"]["text"])["params"]["taskId"]
    assert all(header(e, "Mcp-Name") == task_id and header(e, "Mcp-Method") == "tasks/get" for e in polls)
    call = next(e for e in har_entries(har) if json.loads(e["request"]["postData"]["text"])["method"] == "tools/call")
    meta = json.loads(call["request"]["postData"]["text"])["params"]["_meta"]
    assert "io.modelcontextprotocol/tasks" in meta["io.modelcontextprotocol/clientCapabilities"]["extensions"]


def test_a_tasks_input_request_is_answered_once_with_tasks_update(hostile_http: Callable[..., str],
                                                                   tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"name": {"action": "accept", "content": {"name": "Grace"}}}), encoding="utf-8")
    har = tmp_path / "ask.har"
    done = mcp_console("call", hostile_http("tasks"), "ask_task", "--elicit", str(answers), "--har", str(har))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "hello Grace"
    methods = [json.loads(e["request"]["postData"]["text"])["method"] for e in har_entries(har)]
    assert methods.count("tasks/update") == 1 and "asks for input ('name')" in done.stderr


def test_a_failed_task_is_the_calls_error_and_exits_non_zero(hostile_http: Callable[..., str]) -> None:
    done = mcp_console("call", hostile_http("tasks"), "failing_task")
    assert done.returncode == 1, done.stderr
    assert "failed: the task broke" in json.loads(done.stdout)["error"]["message"]


def test_a_task_that_outlives_max_time_is_cancelled_with_tasks_cancel(hostile_http: Callable[..., str],
                                                                     tmp_path: Path) -> None:
    har = tmp_path / "forever.har"
    done = mcp_console("call", hostile_http("tasks"), "forever_task", "--max-time", "1", "--har", str(har))
    assert done.returncode == 1, done.stderr
    methods = [json.loads(e["request"]["postData"]["text"])["method"] for e in har_entries(har)]
    assert methods[-1] == "tasks/cancel" and "notifications/cancelled" not in methods
    assert "cancelled" in json.loads(done.stdout)["error"]["message"]


def test_check_takes_a_declared_task_result_as_valid(hostile_http: Callable[..., str]) -> None:
    done = mcp_console("check", hostile_http("tasks"), "--call-tools", "all", "--json", "--max-time", "2")
    found = {f["rule"] for f in json.loads(done.stdout)["findings"]}
    assert "result.type-unknown" not in found, done.stdout[-2000:]


# --- 2025-11-25 tasks against the official TypeScript SDK (server-everything's simulate-research-query, made with
# registerToolTask, execution.taskSupport "required") --------------------------------------------------------------

@needs_everything
@pytest.mark.slow
def test_a_2025_tool_that_requires_a_task_is_called_as_one_polled_and_its_result_fetched(everything_url: str,
                                                                                          tmp_path: Path) -> None:
    har = tmp_path / "legacy-task.har"
    done = mcp_console("call", everything_url, "simulate-research-query", "--arg", "topic=cats", "--har", str(har))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)["result"]
    assert "Research Report: cats" in result["content"][0]["text"]
    assert "io.modelcontextprotocol/related-task" in result["_meta"]
    sent = [json.loads(e["request"]["postData"]["text"]) for e in har_entries(har)]
    call = next(m for m in sent if m.get("method") == "tools/call")
    assert call["params"]["task"] == {"ttl": 300_000}
    methods = [m.get("method") for m in sent]
    assert "tasks/get" in methods and methods.index("tasks/result") > methods.index("tasks/get")


@needs_everything
@pytest.mark.slow
def test_a_2025_tasks_question_comes_on_the_tasks_result_stream_and_is_answered(everything_url: str) -> None:
    done = mcp_console("call", everything_url, "simulate-research-query", "--arg", "topic=cats", "--arg",
                       "ambiguous=true")
    assert done.returncode == 0, done.stderr[-3000:]
    # the server's elicitation/create came on the tasks/result stream: answered (declined: no default given)
    assert "declined the server's elicitation" in done.stderr and "ended completed" in done.stderr
    assert "User declined" in json.loads(done.stdout)["result"]["content"][0]["text"]


@needs_everything
@pytest.mark.slow
def test_a_2025_task_that_outlives_max_time_is_cancelled_with_tasks_cancel_and_the_server_answers_it_cancelled(
        everything_url: str, tmp_path: Path) -> None:
    har = tmp_path / "legacy-cancel.har"  # the research takes four stages of 1 s; --max-time 1 ends it first
    done = mcp_console("call", everything_url, "simulate-research-query", "--arg", "topic=cats", "--max-time", "1",
                       "--har", str(har))
    assert done.returncode == 1, done.stderr[-3000:]
    assert "cancelled" in json.loads(done.stdout)["error"]["message"]
    posted = [e for e in har_entries(har) if "postData" in e["request"]]  # type: ignore[operator]
    methods = [json.loads(e["request"]["postData"]["text"]).get("method") for e in posted]  # type: ignore[index]
    assert methods[-1] == "tasks/cancel" and "notifications/cancelled" not in methods, methods
    assert "tasks/result" not in methods, methods
    answer = posted[-1]["response"]["content"]["text"]  # type: ignore[index]
    assert '"status":"cancelled"' in answer.replace(" ", ""), answer


@needs_everything
@pytest.mark.slow
def test_a_2025_task_asked_for_a_short_ttl_keeps_the_ttl_the_server_chose_and_completes(everything_url: str,
                                                                                       tmp_path: Path) -> None:
    har = tmp_path / "legacy-ttl.har"
    done = mcp_console("call", everything_url, "simulate-research-query", "--arg", "topic=cats", "--task-ttl", "500",
                       "--har", str(har))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Research Report: cats" in json.loads(done.stdout)["result"]["content"][0]["text"]
    assert "ended completed" in done.stderr
    sent = [json.loads(e["request"]["postData"]["text"]) for e in har_entries(har)
            if "postData" in e["request"]]  # type: ignore[operator, index]
    call = next(m for m in sent if m.get("method") == "tools/call")
    assert call["params"]["task"] == {"ttl": 500}
    created = next(e for e in har_entries(har) if "postData" in e["request"]  # type: ignore[operator]
                   and '"tools/call"' in e["request"]["postData"]["text"])  # type: ignore[index]
    assert '"ttl":300000' in created["response"]["content"]["text"].replace(" ", "")  # type: ignore[index]


@needs_everything
@pytest.mark.slow
def test_a_2025_task_whose_ttl_passes_ends_expired_without_being_fetched() -> None:
    # tests/everything/ttl_tasks.mjs: registerToolTask on the SDK server-everything is built on, keeping the ttl
    done = mcp_console("call", "--stdio", shlex.join(ttl_tasks_argv()), "slow-task", "--arg", "seconds=60",
                       "--task-ttl", "1000")
    assert done.returncode == 1, done.stderr[-3000:]
    message = json.loads(done.stdout)["error"]["message"]
    # expired on the command line's own clock; a poll landing just after the server deleted it finds it gone
    assert "expired: its ttl of 1000 ms passed" in message or ("gone" in message and "not found" in message), message
    assert "ended expired after" in done.stderr or "ended gone after" in done.stderr, done.stderr[-3000:]


# --- 2025-11-25 --task and list tasks, against the hostile target's tasks2025 module ------------------------------

def _sent(har: Path) -> list[dict[str, object]]:
    return [json.loads(e["request"]["postData"]["text"]) for e in har_entries(har)]  # type: ignore[index]


def _params(message: dict[str, object]) -> dict[str, object]:
    params = message["params"]
    assert isinstance(params, dict)
    return params


def test_call_task_runs_an_optional_tool_as_a_task_with_the_ttl_asked(hostile_http: Callable[..., str],
                                                                     tmp_path: Path) -> None:
    url = hostile_http("tasks2025")
    plain = mcp_console("call", url, "optional_task")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["result"]["content"][0]["text"] == "done at once (a plain call)"
    har = tmp_path / "optional.har"
    done = mcp_console("call", url, "optional_task", "--task", "--task-ttl", "4000", "--har", str(har))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"].startswith("done as a task after 2 polls")
    call = next(m for m in _sent(har) if m.get("method") == "tools/call")
    assert _params(call)["task"] == {"ttl": 4000}
    assert [m.get("method") for m in _sent(har)].count("tasks/result") == 1


def test_call_task_on_a_tool_without_task_support_says_so_and_sends_a_plain_call(
        hostile_http: Callable[..., str]) -> None:
    done = mcp_console("call", hostile_http("tasks2025"), "plain_tool", "--task")
    assert done.returncode == 0, done.stderr
    assert "declares execution.taskSupport nothing: sent as a plain call" in done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "plain result (params.task sent: False)"


def test_a_task_ttl_that_is_no_whole_number_is_a_usage_error(hostile_http: Callable[..., str]) -> None:
    done = mcp_console("call", hostile_http("tasks2025"), "optional_task", "--task-ttl", "soon")
    assert done.returncode == 2 and "whole number of milliseconds" in done.stderr, done.stderr


def test_list_tasks_lists_every_page_of_tasks_list(hostile_http: Callable[..., str], tmp_path: Path) -> None:
    url = hostile_http("tasks2025")
    for _ in range(3):
        assert mcp_console("call", url, "required_task").returncode == 0
    table = mcp_console("list", "tasks", url)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["TASK", "ID", "STATUS"] and len(lines) == 4, table.stdout
    assert all("completed" in line and "300000 ms" in line for line in lines[1:])
    har = tmp_path / "list.har"
    listed = mcp_console("list", "tasks", url, "--json", "--har", str(har))
    assert len(json.loads(listed.stdout)["tasks"]) == 3
    pages = [_params(m).get("cursor") for m in _sent(har) if m.get("method") == "tasks/list"]
    assert pages == [None, "c2"], pages


def test_list_tasks_on_a_server_without_tasks_list_asks_nothing(hostile_http: Callable[..., str],
                                                                tmp_path: Path) -> None:
    har = tmp_path / "none.har"
    done = mcp_console("list", "tasks", hostile_http("tasks"), "--har", str(har))
    assert done.returncode == 0 and "declares no tasks.list capability" in done.stderr, done.stderr
    assert "tasks/list" not in [m.get("method") for m in _sent(har)]
