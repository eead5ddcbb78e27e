"""Who owns a session's target connection, when several console processes share one store and one hub.

A session's MCP connection (an HTTP client or a stdio process) lives in exactly one process, its owner.
`Ownership` is what the routing and replica code needs from the cluster: the owner of a session (None when
nobody holds it or the holder's heartbeat expired), an atomic claim, a release. The Redis implementation
lives with the cluster's process directory (`app/console/cluster.py`); `MemoryOwnership` here is the same
contract in one Python process, for tests that run two managers side by side.

A console with no ownership configured (`SessionManager.ownership is None`) is a single process: it owns
every session and nothing here is consulted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from app.console.cluster import ProcessInfo  # one record of a process, whichever implementation answers

__all__ = ["MemoryDirectory", "MemoryOwnership", "Ownership", "ProcessInfo"]


class Ownership(Protocol):
    process_id: str
    url: str

    async def owner_of(self, session_id: str) -> ProcessInfo | None: ...

    async def claim(self, session_id: str) -> bool:
        """Take the session when nobody holds it or its holder is dead; False when a live process holds it."""
        ...

    async def release(self, session_id: str) -> None: ...

    async def release_all(self) -> None:
        """Graceful shutdown: give up every lease at once, so another process can take over on the next action."""
        ...

    def owned_by_me(self, session_id: str) -> bool:
        """Without waiting: whether this process holds the session's lease (the fast path of every action)."""
        ...


@dataclass
class MemoryDirectory:
    """The shared part: which processes are alive and who holds each session (one per test)."""

    processes: dict[str, ProcessInfo] = field(default_factory=dict)
    alive: set[str] = field(default_factory=set)
    leases: dict[str, str] = field(default_factory=dict)  # session id → process id

    def join(self, process_id: str, url: str) -> MemoryOwnership:
        self.processes[process_id] = ProcessInfo(process_id, url)
        self.alive.add(process_id)
        return MemoryOwnership(self, process_id, url)

    def die(self, process_id: str) -> None:
        """What a missed heartbeat looks like: the process's leases stop counting (they are not released)."""
        self.alive.discard(process_id)


class MemoryOwnership:
    def __init__(self, directory: MemoryDirectory, process_id: str, url: str) -> None:
        self.directory = directory
        self.process_id = process_id
        self.url = url

    async def owner_of(self, session_id: str) -> ProcessInfo | None:
        holder = self.directory.leases.get(session_id)
        if holder is None or holder not in self.directory.alive:
            return None
        return self.directory.processes[holder]

    async def claim(self, session_id: str) -> bool:
        # One event loop runs both managers in a test: no await between the check and the write makes it atomic.
        holder = self.directory.leases.get(session_id)
        if holder is not None and holder != self.process_id and holder in self.directory.alive:
            return False
        self.directory.leases[session_id] = self.process_id
        return True

    async def release(self, session_id: str) -> None:
        if self.directory.leases.get(session_id) == self.process_id:
            del self.directory.leases[session_id]

    async def release_all(self) -> None:
        for session_id in [s for s, p in self.directory.leases.items() if p == self.process_id]:
            del self.directory.leases[session_id]

    def owned_by_me(self, session_id: str) -> bool:
        return (self.directory.leases.get(session_id) == self.process_id
                and self.process_id in self.directory.alive)
