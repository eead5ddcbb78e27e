"""All sessions of one console process, the shared HTTP client, the store and the hub."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import httpx

from app.console.events import TimelineEvent
from app.console.hub import Hub, Renderer
from app.console.session import ConsoleSession, Target, new_session_id
from app.console.sharing import LinkRegistry
from app.console.store import SqliteStore, Store
from app.console.tasks import TaskGroup
from app.settings import Settings


def target_from(raw: Any) -> Target:
    """A Target from stored or imported data, taking only the fields it knows."""
    raw = raw if isinstance(raw, dict) else {}
    known = {f.name for f in fields(Target)}
    data = {k: v for k, v in raw.items() if k in known}
    if data.get("kind") not in ("http", "stdio"):
        data["kind"] = "http"
    return Target(**data)


RESTORE_KINDS = ("exchange", "notice", "operation", "progress", "log", "stderr")


class SessionManager:
    def __init__(self, settings: Settings, render: Renderer, store: Store | None = None) -> None:
        self.settings = settings
        self.store: Store = store or SqliteStore(settings.db_path)
        self.hub = Hub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size)
        self.tasks = TaskGroup()
        self.sessions: dict[str, ConsoleSession] = {}
        self.links = LinkRegistry(self.store, self.hub)
        # One client for every HTTP target: connection pooling, and one place to set limits.
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False,
                                      limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))

    def create(self, target: Target) -> ConsoleSession:
        session = ConsoleSession(new_session_id(), target, self.settings, self.store, self.hub.publish, self.http)
        self.sessions[session.id] = session
        session.touch()
        return session

    def restore(self) -> int:
        """Bring back every stored session, disconnected, with its recent timeline."""
        count = 0
        for row in self.store.list_sessions():
            meta = row["meta"]
            target = target_from(meta.get("target"))
            session = ConsoleSession(row["id"], target, self.settings, self.store, self.hub.publish, self.http,
                                     created=row["created"])
            session.last_activity = row["updated"]
            last = self.store.count(row["id"])
            events = self.store.events(row["id"], kinds=RESTORE_KINDS, before_seq=last + 1,
                                       limit=self.settings.timeline_window * 20)
            note = "imported: read-only" if meta.get("read_only") else \
                "The console restarted. Reconnect to send requests; the timeline is as it was."
            session.restore(meta, events, note, last_seq=last)
            session.timeline.set_total(self.store.entry_count(row["id"]))
            self.sessions[session.id] = session
            count += 1
        return count

    def import_session(self, meta: dict[str, Any], created: float, events: list[TimelineEvent]) -> ConsoleSession:
        """A session from a file: read-only, no target connected, looking as it did."""
        target = target_from(meta.get("target"))
        session = ConsoleSession(new_session_id(), target, self.settings, self.store, self.hub.publish, self.http,
                                 created=created)
        moved = [TimelineEvent(session.id, e.seq, e.kind, e.data, e.at) for e in events]
        for event in moved:
            self.store.append(event)
        meta = {**meta, "read_only": True}
        session.restore(meta, moved[-self.settings.timeline_window * 20:], "Imported from a session file: read-only.")
        session.timeline.set_total(self.store.entry_count(session.id))
        self.sessions[session.id] = session
        self.store.save_session(session.id, session.meta(), created, session.last_activity)
        return session

    def start(self, session: ConsoleSession) -> None:
        self.tasks.spawn(f"connect-{session.id}", session.connect())

    def get(self, session_id: str) -> ConsoleSession | None:
        return self.sessions.get(session_id)

    async def delete(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.close()
        self.hub.close_session(session_id, "session deleted")
        self.links.forget_session(session_id)
        self.store.delete_session(session_id)

    def listing(self) -> list[dict[str, Any]]:
        return [{"id": s.id, "target": s.target.describe(), "transport": s.target.kind, "status": s.status,
                 "created": s.created, "last_activity": s.last_activity, "entries": s.timeline.entry_count}
                for s in sorted(self.sessions.values(), key=lambda s: -s.last_activity)]

    async def shutdown(self) -> None:
        await self.tasks.cancel_all()
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception:  # one broken session must not keep the others' processes alive
                continue
        await self.http.aclose()
        self.store.close()


