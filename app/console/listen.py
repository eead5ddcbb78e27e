"""subscriptions/listen: long-lived streams of change notifications, kept apart by subscriptionId.

Each subscription remembers what was asked and what the server acknowledged, flags protocol
slips (no acknowledgement, a notification before it, a wrong subscriptionId), and listens again
with backoff after an unexpected drop. The server keeps no state across reconnects, so a
reconnect is simply a new listen request with a new id.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from app.console.events import SubscriptionChanged
from app.mcp.client import Reply
from app.mcp.jsonrpc import Frame
from app.mcp.stdio import SUBSCRIPTION_KEY

if TYPE_CHECKING:
    from app.console.runner import RequestRunner
    from app.console.timeline import Timeline

SubState = Literal["opening", "active", "closed_by_server", "connection_lost", "reconnecting", "stopped"]
ACK_DEADLINE_S = 5.0
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 5.0
# Told of every change notification a listener takes (a list changed, a resource was updated).
OnChange = Callable[[Frame], None]
# The list-change flag a 2025-11-25 notification answers to (resource updates go by subscribed URI).
LEGACY_FLAGS = {"notifications/tools/list_changed": "toolsListChanged",
                "notifications/prompts/list_changed": "promptsListChanged",
                "notifications/resources/list_changed": "resourcesListChanged"}


def _never() -> bool:
    return False


def _ignore(_frame: Frame) -> None:
    return None


@dataclass(eq=False)
class Subscription:
    id: str
    requested: dict[str, Any]
    state: SubState = "opening"
    acknowledged: dict[str, Any] | None = None
    subscription_id: Any = None
    exchange_key: str | None = None
    opened_at: float = 0.0
    ack_ms: float | None = None
    reconnects: int = 0
    problems: list[str] = field(default_factory=list)
    notifications: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=200))
    total: int = 0
    stopping: bool = False
    ended_by_server: bool = False
    legacy: bool = False  # a 2025-11-25 session: resources/subscribe per URI, no listen stream

    def dropped(self) -> dict[str, Any]:
        """What was asked for but not granted."""
        ack = self.acknowledged or {}
        out: dict[str, Any] = {}
        for key, value in self.requested.items():
            if key == "resourceSubscriptions":
                missing = [u for u in value if u not in (ack.get(key) or [])]
                if missing:
                    out[key] = missing
            elif value and not ack.get(key):
                out[key] = value
        return out

    def snapshot(self, added: list[dict[str, Any]] | None = None) -> SubscriptionChanged:
        """The subscription as it is now, and the notifications this change adds (the fold keeps the history)."""
        return SubscriptionChanged(
            sub=self.id, requested=self.requested, acknowledged=self.acknowledged,
            dropped=self.dropped() if self.acknowledged is not None else None, state=self.state,
            subscription_id=self.subscription_id, ack_ms=self.ack_ms, reconnects=self.reconnects,
            problems=list(self.problems), total=self.total, exchange=self.exchange_key, notifications=added or [])


class Listeners:
    """A session's subscriptions: each a task that listens through the runner and records on the timeline.

    What a change notification means for the rest of the session (refresh a list, re-read a
    resource) is `on_change`'s business, not the listener's. The backoff between re-listens and
    the acknowledgement deadline are parameters so tests (and a future setting) can shorten them.
    """

    def __init__(self, runner: RequestRunner, timeline: Timeline, on_change: OnChange = _ignore, *,
                 ack_deadline_s: float = ACK_DEADLINE_S, first_backoff_s: float = FIRST_BACKOFF_S,
                 max_backoff_s: float = MAX_BACKOFF_S, legacy: Callable[[], bool] = _never) -> None:
        self.runner = runner
        self.legacy = legacy  # asked at each start: the era is settled only once the session connects
        self.timeline = timeline
        self.on_change = on_change
        self.ack_deadline_s = ack_deadline_s
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self.subs: dict[str, Subscription] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def _record(self, sub: Subscription, added: list[dict[str, Any]] | None = None) -> None:
        self.timeline.append(sub.snapshot(added))

    def _new_id(self) -> str:
        """L1, L2, …: unique within the session, also after a restart (past the ids the fold knows)."""
        known = [k[1:] for k in [*self.timeline.state.subscriptions, *self.subs] if k[1:].isdigit()]
        return f"L{max([0, *map(int, known)]) + 1}"

    def resume(self) -> list[Subscription]:
        """After a restart: listen again, under the same ids, to what was live when the console went down."""
        resumed = []
        for rec in list(self.timeline.state.subscriptions.values()):
            if rec.resume and rec.id not in self.subs:
                resumed.append(self.start(rec.requested, sub_id=rec.id, reconnects=rec.reconnects + 1,
                                          total=rec.total))
        return resumed

    def start(self, requested: dict[str, Any], sub_id: str | None = None, reconnects: int = 0,
              total: int = 0) -> Subscription:
        sub = Subscription(id=sub_id or self._new_id(), requested=requested,
                           reconnects=reconnects, total=total)
        self.subs[sub.id] = sub
        name = f"listen-{self.timeline.session_id}-{sub.id}"
        task = asyncio.get_running_loop().create_task(self._run(sub), name=name)
        self._tasks[sub.id] = task

        def forget(_task: asyncio.Task[None], sid: str = sub.id) -> None:
            self._tasks.pop(sid, None)

        task.add_done_callback(forget)
        self._record(sub)
        return sub

    async def stop(self, sub: Subscription, who: str = "owner") -> None:
        sub.stopping = True
        if sub.legacy and sub.state == "active":
            for uri in (sub.acknowledged or {}).get("resourceSubscriptions") or []:
                await self.runner.run("resources/unsubscribe", {"uri": uri})
        if sub.exchange_key:
            await self.runner.cancel(sub.exchange_key, who)
        task = self._tasks.get(sub.id)
        if task is not None and sub.state == "reconnecting":
            task.cancel()
        sub.state = "stopped"
        self._record(sub)

    async def stop_all(self) -> None:
        for sub in list(self.subs.values()):
            if sub.state not in ("stopped", "closed_by_server"):
                sub.stopping = True
        for task in list(self._tasks.values()):
            task.cancel()

    async def _run(self, sub: Subscription) -> None:
        if self.legacy():
            await self._subscribe_legacy(sub)
            return
        backoff = self.first_backoff_s
        while not sub.stopping:
            sub.state = "opening" if sub.reconnects == 0 else "reconnecting"
            sub.ended_by_server = False
            sub.acknowledged, sub.ack_ms = None, None
            reply = await self._listen_once(sub)
            if sub.stopping:
                sub.state = "stopped"
            elif reply.error is None or sub.ended_by_server:
                # A graceful end: the server answered the listen request, or (stdio) sent
                # notifications/cancelled for it. Either way it is not to be re-opened.
                sub.state = "closed_by_server"
            else:
                sub.state = "connection_lost"
                sub.problems.append(f"stream dropped: {reply.error}")
            del sub.problems[:-20]
            self._record(sub)
            if sub.state != "connection_lost":
                return
            status = self.runner.status
            if status not in ("connected", "unreachable"):  # unreachable may come back: keep trying
                sub.problems.append(f"not listening again: the session is {status} "
                                    f"({self.runner.status_message or 'no target'})")
                self._record(sub)
                return
            if sub.ack_ms is not None and time.monotonic() - sub.opened_at >= self.max_backoff_s:
                # It worked for a while: start the backoff over. An acknowledgement alone is not that: a server
                # that acknowledges and drops every stream at once was listened to again every first_backoff_s.
                backoff = self.first_backoff_s
            await asyncio.sleep(backoff)  # backoff between reconnects, not a wait for an event
            backoff = min(backoff * 2, self.max_backoff_s)
            if self.runner.status == "unreachable" and not self.runner.target_alive:
                # A stdio server whose process ended answers nothing until a reconnect starts it again: each listen
                # tried every few seconds was an exchange and a subscription event more, for as long as the session
                # sat unreachable (days). Wait for the reconnect instead, asking nothing.
                sub.problems.append("the server process is gone: listening again once the session reconnects")
                self._record(sub)
                while not sub.stopping and self.runner.status == "unreachable" and not self.runner.target_alive:
                    await asyncio.sleep(self.first_backoff_s)  # a look at the status, no request
            sub.reconnects += 1

    async def _subscribe_legacy(self, sub: Subscription) -> None:
        """2025-11-25 has no listen stream: a server announces list changes to every session that its capabilities
        promise them to, and resource updates after resources/subscribe, all outside any request (`deliver`).
        What the server granted is what it answered without error."""
        sub.legacy = True
        sub.opened_at = time.monotonic()
        granted: list[str] = []
        for uri in sub.requested.get("resourceSubscriptions") or []:
            reply = await self.runner.run("resources/subscribe", {"uri": uri})
            if reply.error is None:
                granted.append(uri)
            else:
                sub.problems.append(f"resources/subscribe {uri}: {reply.error}")
        ack: dict[str, Any] = {k: v for k, v in sub.requested.items() if k != "resourceSubscriptions" and v}
        if granted:
            ack["resourceSubscriptions"] = granted
        sub.acknowledged, sub.ack_ms = ack, (time.monotonic() - sub.opened_at) * 1000
        sub.state = "stopped" if sub.stopping else "active"
        self._record(sub)

    def deliver(self, frame: Frame) -> None:
        """A notification from outside any request (a legacy session's): into each active legacy subscription
        that asked for it, then once to on_change, since a list change refreshes whether or not anyone listens."""
        for sub in self.subs.values():
            if not (sub.legacy and sub.state == "active" and _legacy_wants(sub, frame)):
                continue
            sub.total += 1
            note = {"method": frame.method, "params": frame.params, "at": time.time()}
            sub.notifications.append(note)
            self._record(sub, [note])
        self.on_change(frame)

    async def _listen_once(self, sub: Subscription) -> Reply:
        sub.opened_at = time.monotonic()
        watchdog = asyncio.get_running_loop().call_later(self.ack_deadline_s, self._no_ack, sub)

        def started(key: str, request_id: Any) -> Callable[[], None]:
            sub.exchange_key, sub.subscription_id = key, request_id
            return functools.partial(self._record, sub)

        try:
            return await self.runner.run("subscriptions/listen", {"notifications": sub.requested},
                                          on_notification=lambda f: self._on_frame(sub, f), on_start=started,
                                          stream=True)
        finally:
            watchdog.cancel()

    def _no_ack(self, sub: Subscription) -> None:
        if sub.acknowledged is None and not sub.stopping:
            sub.problems.append(f"no notifications/subscriptions/acknowledged within {self.ack_deadline_s:g} s")
            self._record(sub)

    def _on_frame(self, sub: Subscription, frame: Frame) -> None:
        meta = frame.params.get("_meta")
        sid = meta.get(SUBSCRIPTION_KEY) if isinstance(meta, dict) else None
        if sid != sub.subscription_id:
            sub.problems.append(f"{frame.method}: subscriptionId {sid!r}, expected {sub.subscription_id!r}")
        if frame.method == "notifications/cancelled":
            sub.ended_by_server = True
            sub.problems.append(f"the server ended the stream: {frame.params.get('reason') or 'no reason given'}")
        elif frame.method == "notifications/subscriptions/acknowledged":
            granted = frame.params.get("notifications")
            sub.acknowledged = granted if isinstance(granted, dict) else {}
            sub.ack_ms = (time.monotonic() - sub.opened_at) * 1000
            sub.state = "active"
        else:
            if sub.acknowledged is None:
                sub.problems.append(f"{frame.method} arrived before the acknowledgement")
            sub.total += 1
            note = {"method": frame.method, "params": frame.params, "at": time.time()}
            sub.notifications.append(note)
            self.on_change(frame)
            self._record(sub, [note])
            return
        self._record(sub)


def _legacy_wants(sub: Subscription, frame: Frame) -> bool:
    ack = sub.acknowledged or {}
    if frame.method == "notifications/resources/updated":
        return frame.params.get("uri") in (ack.get("resourceSubscriptions") or [])
    flag = LEGACY_FLAGS.get(frame.method or "")
    return flag is not None and bool(ack.get(flag))
