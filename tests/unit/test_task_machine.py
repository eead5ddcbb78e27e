"""The task machine (app/mcp/task.py) step by step, without sockets: both wires, input, cancel, expiry, a restart."""

from __future__ import annotations

from typing import Any

from app.mcp.task import (
    LEGACY_TTL_MS,
    AskInput,
    Ended,
    FetchResult,
    Poll,
    SendCancel,
    SendUpdate,
    TaskChoice,
    TaskMachine,
    as_task,
    lists_tasks,
)


def created_2026(**extra: Any) -> dict[str, Any]:
    return {"resultType": "task", "taskId": "t1", "status": "working", "createdAt": "2026-12-07T00:00:00Z",
            "lastUpdatedAt": "2026-12-07T00:00:00Z", "ttlMs": 60_000, "pollIntervalMs": 250, **extra}


def test_a_2026_task_is_polled_at_the_servers_interval_until_it_completes_with_its_result() -> None:
    m = TaskMachine("2026-07-28")
    assert m.created(created_2026()) == Poll("t1", 250)
    assert m.polled({"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": 500}) == \
        Poll("t1", 500)
    ended = m.polled({"taskId": "t1", "status": "completed", "result": {"content": [], "isError": True}})
    # 2026-07-28: a tool error is a completed task; its result says isError
    assert isinstance(ended, Ended) and ended.status == "completed" and ended.result == {"content": [],
                                                                                          "isError": True}
    assert m.findings == []


def test_input_requests_are_asked_once_across_polls_and_answered_together_with_tasks_update() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    requests = {"a": {"method": "elicitation/create", "params": {}}, "b": {"method": "roots/list", "params": {}}}
    asked = m.polled({"taskId": "t1", "status": "input_required", "inputRequests": requests})
    assert isinstance(asked, AskInput) and set(asked.requests) == {"a", "b"}
    # the same keys on the next poll are not asked again
    assert m.polled({"taskId": "t1", "status": "input_required", "inputRequests": requests}) == Poll("t1", 250)
    assert m.answer("a", {"action": "accept", "content": {}}) is None
    assert m.answer("zzz", {}) is None  # not asked: ignored
    update = m.answer("b", {"roots": []})
    assert update == SendUpdate("t1", {"a": {"action": "accept", "content": {}}, "b": {"roots": []}})
    assert m.updated() == Poll("t1", 0)
    more = m.polled({"taskId": "t1", "status": "input_required",
                     "inputRequests": {**requests, "c": {"method": "elicitation/create", "params": {}}}})
    assert isinstance(more, AskInput) and list(more.requests) == ["c"]


def test_a_failed_task_ends_with_its_json_rpc_error_and_a_cancel_uses_tasks_cancel() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    ended = m.polled({"taskId": "t1", "status": "failed", "error": {"code": -32603, "message": "boom"}})
    assert isinstance(ended, Ended) and ended.status == "failed" and ended.error == {"code": -32603,
                                                                                     "message": "boom"}
    other = TaskMachine("2026-07-28")
    other.created(created_2026())
    assert other.cancel() == SendCancel("t1")
    assert other.cancel() is None  # once
    ended = other.cancel_answered()
    assert isinstance(ended, Ended) and ended.status == "cancelled"


def test_a_status_outside_the_graph_and_a_terminal_status_that_changes_are_findings() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    m.polled({"taskId": "t1", "status": "sleeping"})
    assert [f.rule for f in m.findings] == ["tasks.wire-fields"]
    m2 = TaskMachine("2026-07-28")
    m2.created(created_2026(status="completed"))  # created already completed: polled once to get its result
    m2.polled({"taskId": "t1", "status": "working"})
    assert "tasks.terminal-changed" in [f.rule for f in m2.findings]


def test_the_other_revisions_field_names_are_said() -> None:
    m = TaskMachine("2026-07-28")
    m.created({"resultType": "task", "taskId": "t1", "status": "working", "ttl": 1000})
    assert [f.rule for f in m.findings] == ["tasks.wire-fields"]


def test_a_task_without_an_id_ends_at_once() -> None:
    ended = TaskMachine("2026-07-28").created({"resultType": "task", "status": "working"})
    assert isinstance(ended, Ended) and ended.status == "gone"


def test_an_unknown_or_expired_task_is_gone_and_a_ttl_that_passed_lets_the_client_give_up() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026(ttlMs=1000))
    assert m.expired(now_ms=m.started_wall * 1000 + 500) is None
    ended = m.expired(now_ms=m.started_wall * 1000 + 1500)
    assert ended is not None and ended.status == "expired"
    m2 = TaskMachine("2026-07-28")
    m2.created(created_2026())
    gone = m2.polled(None, {"code": -32602, "message": "unknown task"})
    assert isinstance(gone, Ended) and gone.status == "gone"


def test_a_2025_task_is_created_nested_and_its_result_fetched_with_tasks_result() -> None:
    m = TaskMachine("2025-11-25")
    first = m.created({"task": {"taskId": "t9", "status": "working", "ttl": 30_000, "pollInterval": 100}})
    assert first == Poll("t9", 100)
    assert m.polled({"taskId": "t9", "status": "input_required"}) == FetchResult("t9")
    assert m.polled({"taskId": "t9", "status": "completed"}) == FetchResult("t9")
    ended = m.fetched({"content": [{"type": "text", "text": "ok"}], "isError": True})
    # 2025-11-25: a tool error is a failed task
    assert isinstance(ended, Ended) and ended.status == "failed"


def test_a_cancel_refused_with_32602_polls_once_more_so_a_task_that_had_ended_ends_with_its_result() -> None:
    # 2025-11-25 answers tasks/cancel on a terminal task with -32602, as it does an unknown one
    m = TaskMachine("2025-11-25")
    m.created({"task": {"taskId": "t9", "status": "working", "ttl": 30_000, "pollInterval": 100}})
    assert m.cancel() == SendCancel("t9")
    refused = {"code": -32602, "message": "Cannot cancel task in terminal status: completed"}
    assert m.cancel_answered(refused) == Poll("t9", 0) and not m.ended
    assert m.cancel() is None  # the one cancel is still the one asked for
    assert m.polled({"taskId": "t9", "status": "completed"}) == FetchResult("t9")
    ended = m.fetched({"content": [{"type": "text", "text": "ok"}]})
    assert isinstance(ended, Ended) and ended.status == "completed" and ended.result is not None
    unknown = TaskMachine("2026-07-28")
    unknown.created(created_2026())
    unknown.cancel()
    assert unknown.cancel_answered({"code": -32602, "message": "unknown task"}) == Poll("t1", 0)
    gone = unknown.polled(None, {"code": -32602, "message": "unknown task"})
    assert isinstance(gone, Ended) and gone.status == "gone"


def test_the_person_may_poll_at_another_interval_within_bounds() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    m.set_poll_interval(5)
    assert m.polled({"taskId": "t1", "status": "working"}) == Poll("t1", 100)
    m.set_poll_interval(None)
    assert m.polled({"taskId": "t1", "status": "working"}) == Poll("t1", 250)


def test_a_task_survives_a_restart_as_plain_data_and_polling_resumes() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    m.polled({"taskId": "t1", "status": "input_required", "inputRequests": {"a": {"method": "roots/list"}}})
    again = TaskMachine.from_data(m.to_data())
    assert again.resume() == Poll("t1", 0)
    assert again.pending == ["a"] and again.asked == ["a"]
    assert again.answer("a", {"roots": []}) == SendUpdate("t1", {"a": {"roots": []}})
    done = TaskMachine.from_data({**m.to_data(), "ended": "completed"})
    assert done.resume() is None


def test_every_request_about_a_task_carries_its_id_as_mcp_name_over_http() -> None:
    from app.mcp.era import ModernEra

    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        headers = ModernEra().headers(method, {"taskId": "t-42"}, None)
        assert headers["Mcp-Name"] == "t-42" and headers["Mcp-Method"] == method


# --- 2025-11-25: the person's choice, tasks/list, status notifications; 2026-07-28: pushes -------------------------

RUNS_TASKS = {"tasks": {"list": {}, "requests": {"tools": {"call": {}}}}}


def test_an_optional_tool_goes_as_a_task_only_when_chosen_and_with_the_ttl_chosen() -> None:
    params = {"name": "t", "arguments": {}}
    assert as_task(params, RUNS_TASKS, "optional") is params
    assert as_task(params, RUNS_TASKS, "optional", TaskChoice())["task"] == {}
    assert as_task(params, RUNS_TASKS, "optional", TaskChoice(5000))["task"] == {"ttl": 5000}


def test_a_required_tool_always_goes_as_a_task_and_a_forbidden_or_silent_one_never() -> None:
    params = {"name": "t"}
    assert as_task(params, RUNS_TASKS, "required")["task"] == {"ttl": LEGACY_TTL_MS}
    assert as_task(params, RUNS_TASKS, "required", TaskChoice(9))["task"] == {"ttl": 9}
    assert as_task(params, RUNS_TASKS, "forbidden", TaskChoice()) is params
    assert as_task(params, RUNS_TASKS, None, TaskChoice()) is params
    assert as_task(params, {"tasks": {"list": {}}}, "required", TaskChoice()) is params  # runs no tool call as one


def test_tasks_list_is_asked_only_of_a_server_that_declares_it() -> None:
    assert lists_tasks(RUNS_TASKS) and not lists_tasks({"tasks": {"cancel": {}}}) and not lists_tasks(None)


def test_a_status_notification_is_taken_and_checked_but_decides_nothing() -> None:
    m = TaskMachine("2025-11-25")
    m.created({"task": {"taskId": "t9", "status": "working", "ttl": 30_000, "pollInterval": 100}})
    assert m.status_notified({"taskId": "other", "status": "failed"}) is False
    assert m.status_notified({"taskId": "t9", "status": "working", "statusMessage": "halfway"}) is True
    assert (m.status, m.status_message, m.notified, m.polls) == ("working", "halfway", 1, 0)
    assert m.polled({"taskId": "t9", "status": "completed"}) == FetchResult("t9")
    m.status_notified({"taskId": "t9", "status": "failed"})
    assert [f.rule for f in m.findings] == ["tasks.terminal-changed"] and m.status == "completed"
    assert TaskMachine.from_data(m.to_data()).notified == 2


def test_a_pushed_detailed_task_is_folded_as_a_poll_without_counting_one() -> None:
    m = TaskMachine("2026-07-28")
    m.created(created_2026())
    asked = m.pushed({"taskId": "t1", "status": "input_required",
                      "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}})
    assert isinstance(asked, AskInput) and list(asked.requests) == ["a"]
    assert m.pushed({"taskId": "t2", "status": "completed"}) is None  # another task's
    ended = m.pushed({"taskId": "t1", "status": "completed", "result": {"content": []}})
    assert isinstance(ended, Ended) and ended.status == "completed" and (m.polls, m.notified) == (0, 2)
    assert m.pushed({"taskId": "t1", "status": "working"}) is None  # over: nothing more is taken
