"""Workspaces: the owner's named sets of sessions, shown side by side with one combined timeline.

A workspace holds no server of its own: each of its servers is a session (its target, settings, timeline and
secrets as any session keeps them), so a workspace is a name and an ordered list of session ids, saved in the store
(SQLite by default, PostgreSQL in a team). A session deleted elsewhere leaves the workspace; opening a workspace
connects nothing: each pane is the session's own page, which connects as the session does (a stdio server only on
the owner's click).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

MAX_NAME = 120
MAX_SERVERS = 12  # panes in one workspace


@dataclass
class Workspace:
    id: str
    name: str
    sessions: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "servers": [{"session": s} for s in self.sessions],
                "created": self.created}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Workspace:
        found = data.get("servers")
        servers: list[Any] = found if isinstance(found, list) else []
        sessions = [str(s["session"]) for s in servers if isinstance(s, dict) and isinstance(s.get("session"), str)]
        return cls(str(data.get("id")), str(data.get("name") or "")[:MAX_NAME], sessions[:MAX_SERVERS],
                   float(data.get("created") or 0.0))


class WorkspaceBook:
    """The workspaces of a console, read from and written to its store (every process of a team sees them)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def all(self) -> list[Workspace]:
        return [Workspace.from_data(d) for d in self.store.workspaces() if isinstance(d, dict)]

    def get(self, workspace_id: str) -> Workspace | None:
        return next((w for w in self.all() if w.id == workspace_id), None)

    def create(self, name: str, sessions: list[str]) -> Workspace:
        workspace = Workspace(secrets.token_urlsafe(8), _name(name), _unique(sessions))
        self.store.save_workspace(workspace.to_data())
        return workspace

    def save(self, workspace: Workspace) -> None:
        workspace.name = _name(workspace.name)
        workspace.sessions = _unique(workspace.sessions)
        self.store.save_workspace(workspace.to_data())

    def delete(self, workspace_id: str) -> None:
        self.store.delete_workspace(workspace_id)

    def replace_session(self, old: str, new: str) -> None:
        """A session made from `old` (its target edited, a retry) stands where `old` stood; `old` stays a session."""
        if not old or old == new:
            return
        for workspace in self.all():
            if old in workspace.sessions and new not in workspace.sessions:
                workspace.sessions[workspace.sessions.index(old)] = new
                self.save(workspace)

    def forget_session(self, session_id: str) -> None:
        """A deleted session leaves every workspace that showed it."""
        for workspace in self.all():
            if session_id in workspace.sessions:
                workspace.sessions.remove(session_id)
                self.save(workspace)


def _name(name: str) -> str:
    cleaned = "".join(ch for ch in name if ch.isprintable()).strip()[:MAX_NAME]
    return cleaned or "Workspace"


def _unique(sessions: list[str]) -> list[str]:
    seen: list[str] = []
    for sid in sessions:
        if sid and sid not in seen:
            seen.append(sid)
    return seen[:MAX_SERVERS]
