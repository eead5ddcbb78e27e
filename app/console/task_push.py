"""Push for a task (2026-07-28, the `io.modelcontextprotocol/tasks` extension, optional): `subscriptions/listen` with
`params.notifications.taskIds`, after which the server sends `notifications/tasks` (a DetailedTask) as the task moves.

Off by default: polling alone follows every task, and a server need not push. Turned on in a task's view, the listen
is an ordinary subscription (app/console/listen.py: on the timeline, in the subscriptions panel, acknowledged or not),
its pushes fold into the task's view as a poll's result would (TaskFollower.notified); polling goes on beside it,
since a push may never come. It stops when the task ends, or when the person turns it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.console.listen import Listeners, Subscription
    from app.console.live_records import SubscriptionRecord
    from app.console.operations import OperationDriver
    from app.console.task_follow import TaskFollower
    from app.console.tasks import TaskGroup

LIVE = frozenset({"opening", "active", "reconnecting"})


def push_listen(subscriptions: dict[str, SubscriptionRecord], task_id: str) -> SubscriptionRecord | None:
    """The live listen the fold shows asking for this task's pushes, if any (what the task view's toggle shows)."""
    for record in subscriptions.values():
        ids = record.requested.get("taskIds") if isinstance(record.requested, dict) else None
        if isinstance(ids, list) and task_id in ids and record.state in LIVE:
            return record
    return None


async def set_push(operations: OperationDriver, listeners: Listeners, background: TaskGroup, op_id: str,
                   on: bool) -> str | None:
    """Turn push on or off for the task an operation became; what stood in the way, or None."""
    follower = operations.tasks.get(op_id)
    if follower is None:
        return f"Operation {op_id} is not following a task now: there is nothing to push."
    if follower.machine.wire != "2026-07-28":
        return ("Push is the 2026-07-28 tasks extension's (subscriptions/listen with taskIds); a 2025-11-25 server "
                "may send notifications/tasks/status on its own, which the task's view shows.")
    task_id = follower.machine.task_id
    record = push_listen(listeners.timeline.state.subscriptions, task_id)
    if on and record is None:
        sub = listeners.start({"taskIds": [task_id]})
        background.spawn(f"push-end-{op_id}-{sub.id}", _stop_at_end(listeners, follower, sub))
    elif not on and record is not None:
        live = listeners.subs.get(record.id)
        if live is not None:
            await listeners.stop(live)
    return None


async def _stop_at_end(listeners: Listeners, follower: TaskFollower, sub: Subscription) -> None:
    """A task that ended has nothing more to push: its listen is stopped (the server may keep it open forever)."""
    await follower.finished.wait()
    if not sub.stopping and sub.state in LIVE:
        await listeners.stop(sub, "console")
