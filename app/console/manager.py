"""All sessions of one console process, the shared HTTP client, the store and the hub."""

from __future__ import annotations

from typing import Any

import httpx

from app.console.hub import Hub, Renderer
from app.console.session import ConsoleSession, Target, new_session_id
from app.console.store import SqliteStore, Store
from app.console.tasks import TaskGroup
from app.settings import Settings


class SessionManager:
    def __init__(self, settings: Settings, render: Renderer, store: Store | None = None) -> None:
        self.settings = settings
        self.store: Store = store or SqliteStore(settings.db_path)
        self.hub = Hub(render, queue_size=settings.ws_queue_size, ring_size=settings.ws_queue_size)
        self.tasks = TaskGroup()
        self.sessions: dict[str, ConsoleSession] = {}
        # One client for every HTTP target: connection pooling, and one place to set limits.
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), follow_redirects=False,
                                      limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))

    def create(self, target: Target) -> ConsoleSession:
        session = ConsoleSession(new_session_id(), target, self.settings, self.store, self.hub.publish, self.http)
        self.sessions[session.id] = session
        session.touch()
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
        self.store.delete_session(session_id)

    def listing(self) -> list[dict[str, Any]]:
        return [{"id": s.id, "target": s.target.describe(), "transport": s.target.kind, "status": s.status,
                 "created": s.created, "last_activity": s.last_activity, "entries": len(s.timeline.entries)}
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


