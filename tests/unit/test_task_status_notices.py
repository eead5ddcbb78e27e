"""The timeline's notices of status notifications that came outside any request (app/console/task_follow.py)."""

from __future__ import annotations

from app.console.task_follow import MAX_STATUS_NOTICES, StatusNotices


def test_a_status_notification_is_said_once_until_its_task_changes() -> None:
    notices = StatusNotices()
    said = notices.notice({"taskId": "t1", "status": "working", "statusMessage": "halfway"})
    assert said == "notifications/tasks/status: task 't1' is working: halfway"
    assert notices.notice({"taskId": "t1", "status": "working", "statusMessage": "halfway"}) is None
    changed = notices.notice({"taskId": "t1", "status": "completed"})
    assert changed == "notifications/tasks/status: task 't1' is completed"


def test_a_flood_of_status_notifications_is_said_up_to_a_bound_then_once_more() -> None:
    notices = StatusNotices()
    said = [notices.notice({"taskId": "t1", "status": "working", "statusMessage": str(n)})
            for n in range(MAX_STATUS_NOTICES + 50)]
    kept = [s for s in said if s is not None]
    assert len(kept) == MAX_STATUS_NOTICES + 1 and "the rest are not listed" in kept[-1]


def test_the_servers_strings_are_cut_short_in_a_notice() -> None:
    said = StatusNotices().notice({"taskId": "x" * 1000, "status": "working", "statusMessage": "m" * 10_000})
    assert said is not None and len(said) < 500
