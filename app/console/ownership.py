"""Who owns a session's target connection, when several console processes share one store and one hub.

A session's MCP connection (an HTTP client or a stdio process) lives in exactly one process, its owner.
`Ownership` is what the routing and replica code needs from the cluster: the owner of a session (None when
nobody holds it or the holder's heartbeat expired), an atomic claim, a release. Both implementations are the
cluster's process directory (`app/console/cluster.py`): `RedisCluster` (in `cluster_redis.py`), and
`MemoryCluster`, whose shared `MemoryDirectory` (with an injectable clock, and `lapse` for a process that died)
lets tests run several managers side by side.

A console with no ownership configured (`SessionManager.ownership is None`) is a single process: it owns
every session and nothing here is consulted.
"""

from __future__ import annotations

from typing import Protocol

from app.console.cluster import ProcessInfo  # one record of a process, whichever implementation answers

__all__ = ["Ownership", "ProcessInfo"]


class Ownership(Protocol):
    process_id: str
    url: str

    async def owner_of(self, session_id: str) -> ProcessInfo | None: ...

    async def claim(self, session_id: str) -> bool:
        """Take the session when nobody holds it or its holder is dead; False when a live process holds it."""
        ...

    async def seize(self, session_id: str, dead_process_id: str) -> bool:
        """Take the session from a process proven dead (its advertised address refused a connection), without
        waiting for its lease to lapse: only while the ownership record still names that process."""
        ...

    async def release(self, session_id: str) -> None: ...

    async def release_all(self) -> None:
        """Graceful shutdown: give up every lease at once, so another process can take over on the next action."""
        ...

    def owned_by_me(self, session_id: str) -> bool:
        """Without waiting: whether this process holds the session's lease (the fast path of every action)."""
        ...
