"""subscriptions/listen: long-lived streams of change notifications, kept apart by subscriptionId.

Each subscription remembers what was asked and what the server acknowledged, flags protocol
slips (no acknowledgement, a notification before it, a wrong subscriptionId), and listens again
with backoff after an unexpected drop. The server keeps no state across reconnects, so a
reconnect is simply a new listen request with a new id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from app.console.live_events import SubAcknowledged, SubEnded, SubListening, SubNotified, SubProblem, SubStarted
from app.mcp.client import Reply
from app.mcp.jsonrpc import Frame
from app.mcp.stdio import SUBSCRIPTION_KEY

if TYPE_CHECKING:
    from app.console.live_records import SubscriptionRecord
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
    """A subscription's driver: what it asked for and what only the task listening for it knows (that it is being
    stopped, that the server ended it, when its listen went out). Where it stands is the fold's (`record`)."""

    id: str
    requested: dict[str, Any]
    timeline: Timeline
    stopping: bool = False
    ended_by_server: bool = False
    legacy: bool = False  # a 2025-11-25 session: resources/subscribe per URI, no listen stream
    opened_at: float = 0.0  # monotonic: when its last listen (or subscribe) went out

    @property
    def record(self) -> SubscriptionRecord | None:
        return self.timeline.state.subscriptions.get(self.id)

    @property
    def state(self) -> str:
        record = self.record
        return record.state if record is not None else "stopped"

    @property
    def acknowledged(self) -> dict[str, Any] | None:
        record = self.record
        return record.acknowledged if record is not None else None

    @property
    def exchange_key(self) -> str | None:
        record = self.record
        return record.exchange_key if record is not None else None


def dropped(requested: dict[str, Any], acknowledged: dict[str, Any]) -> dict[str, Any]:
    """What was asked for but not granted."""
    out: dict[str, Any] = {}
    for key, value in requested.items():
        if key == "resourceSubscriptions":
            missing = [u for u in value if u not in (acknowledged.get(key) or [])]
            if missing:
                out[key] = missing
        elif value and not acknowledged.get(key):
            out[key] = value
    return out


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

    def _problem(self, sub: Subscription, problem: str) -> None:
        self.timeline.append(SubProblem(sub=sub.id, problem=problem))

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
        sub = Subscription(id=sub_id or self._new_id(), requested=requested, timeline=self.timeline)
        self.subs[sub.id] = sub
        self.timeline.append(SubStarted(sub=sub.id, requested=requested, reconnects=reconnects, total=total))
        name = f"listen-{self.timeline.session_id}-{sub.id}"
        task = asyncio.get_running_loop().create_task(self._run(sub, reconnects), name=name)
        self._tasks[sub.id] = task

        def forget(_task: asyncio.Task[None], sid: str = sub.id) -> None:
            self._tasks.pop(sid, None)

        task.add_done_callback(forget)
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
        self.timeline.append(SubEnded(sub=sub.id, state="stopped"))

    async def stop_all(self) -> None:
        for sub in list(self.subs.values()):
            if sub.state not in ("stopped", "closed_by_server"):
                sub.stopping = True
        for task in list(self._tasks.values()):
            task.cancel()

    async def _run(self, sub: Subscription, reconnects: int) -> None:
        if self.legacy():
            await self._subscribe_legacy(sub)
            return
        backoff = self.first_backoff_s
        while not sub.stopping:
            sub.ended_by_server = False
            reply = await self._listen_once(sub, reconnects)
            record = sub.record
            acknowledged = record is not None and record.ack_ms is not None
            if sub.stopping:
                ended: SubState = "stopped"
            elif reply.error is None or sub.ended_by_server:
                # A graceful end: the server answered the listen request, or (stdio) sent
                # notifications/cancelled for it. Either way it is not to be re-opened.
                ended = "closed_by_server"
            else:
                ended = "connection_lost"
                self._problem(sub, f"stream dropped: {reply.error}")
            self.timeline.append(SubEnded(sub=sub.id, state=ended))
            if ended != "connection_lost":
                return
            status = self.runner.status
            if status not in ("connected", "unreachable"):  # unreachable may come back: keep trying
                self._problem(sub, f"not listening again: the session is {status} "
                                   f"({self.runner.status_message or 'no target'})")
                return
            if acknowledged and time.monotonic() - sub.opened_at >= self.max_backoff_s:
                # It worked for a while: start the backoff over. An acknowledgement alone is not that: a server
                # that acknowledges and drops every stream at once was listened to again every first_backoff_s.
                backoff = self.first_backoff_s
            await asyncio.sleep(backoff)  # backoff between reconnects, not a wait for an event
            backoff = min(backoff * 2, self.max_backoff_s)
            if self.runner.status == "unreachable" and not self.runner.target_alive:
                # A stdio server whose process ended answers nothing until a reconnect starts it again: each listen
                # tried every few seconds was an exchange and a subscription event more, for as long as the session
                # sat unreachable (days). Wait for the reconnect instead, asking nothing.
                self._problem(sub, "the server process is gone: listening again once the session reconnects")
                while not sub.stopping and self.runner.status == "unreachable" and not self.runner.target_alive:
                    await asyncio.sleep(self.first_backoff_s)  # a look at the status, no request
            reconnects += 1

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
                self._problem(sub, f"resources/subscribe {uri}: {reply.error}")
        ack: dict[str, Any] = {k: v for k, v in sub.requested.items() if k != "resourceSubscriptions" and v}
        if granted:
            ack["resourceSubscriptions"] = granted
        self.timeline.append(SubAcknowledged(sub=sub.id, acknowledged=ack, dropped=dropped(sub.requested, ack),
                                             ack_ms=(time.monotonic() - sub.opened_at) * 1000,
                                             state="stopped" if sub.stopping else "active"))

    def deliver(self, frame: Frame) -> None:
        """A notification from outside any request (a legacy session's): into each active legacy subscription
        that asked for it, then once to on_change, since a list change refreshes whether or not anyone listens."""
        for sub in self.subs.values():
            if not (sub.legacy and sub.state == "active" and _legacy_wants(sub.acknowledged or {}, frame)):
                continue
            note = {"method": frame.method, "params": frame.params, "at": time.time()}
            self.timeline.append(SubNotified(sub=sub.id, notification=note))
        self.on_change(frame)

    async def _listen_once(self, sub: Subscription, reconnects: int) -> Reply:
        sub.opened_at = time.monotonic()
        watchdog = asyncio.get_running_loop().call_later(self.ack_deadline_s, self._no_ack, sub)
        state = "opening" if reconnects == 0 else "reconnecting"

        def started(key: str, request_id: Any) -> Callable[[], None]:
            def listening() -> None:  # recorded with the listen request's start, after its exchange's
                self.timeline.append(SubListening(sub=sub.id, state=state, exchange=key, subscription_id=request_id,
                                                  reconnects=reconnects))
            return listening

        try:
            return await self.runner.run("subscriptions/listen", {"notifications": sub.requested},
                                          on_notification=lambda f: self._on_frame(sub, f), on_start=started,
                                          stream=True)
        finally:
            watchdog.cancel()

    def _no_ack(self, sub: Subscription) -> None:
        if sub.acknowledged is None and not sub.stopping:
            self._problem(sub, f"no notifications/subscriptions/acknowledged within {self.ack_deadline_s:g} s")

    def _on_frame(self, sub: Subscription, frame: Frame) -> None:
        record = sub.record
        listening = record.subscription_id if record is not None else None
        meta = frame.params.get("_meta")
        sid = meta.get(SUBSCRIPTION_KEY) if isinstance(meta, dict) else None
        if sid != listening:
            self._problem(sub, f"{frame.method}: subscriptionId {sid!r}, expected {listening!r}")
        if frame.method == "notifications/cancelled":
            sub.ended_by_server = True
            self._problem(sub, f"the server ended the stream: {frame.params.get('reason') or 'no reason given'}")
        elif frame.method == "notifications/subscriptions/acknowledged":
            granted = frame.params.get("notifications")
            ack = granted if isinstance(granted, dict) else {}
            self.timeline.append(SubAcknowledged(sub=sub.id, acknowledged=ack, dropped=dropped(sub.requested, ack),
                                                 ack_ms=(time.monotonic() - sub.opened_at) * 1000))
        else:
            if sub.acknowledged is None:
                self._problem(sub, f"{frame.method} arrived before the acknowledgement")
            note = {"method": frame.method, "params": frame.params, "at": time.time()}
            self.timeline.append(SubNotified(sub=sub.id, notification=note))
            self.on_change(frame)


def _legacy_wants(acknowledged: dict[str, Any], frame: Frame) -> bool:
    if frame.method == "notifications/resources/updated":
        return frame.params.get("uri") in (acknowledged.get("resourceSubscriptions") or [])
    flag = LEGACY_FLAGS.get(frame.method or "")
    return flag is not None and bool(acknowledged.get(flag))
