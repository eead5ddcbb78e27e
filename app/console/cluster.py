"""Which console processes are alive, where they answer, and which one owns each session.

A target connection lives in exactly one process: the session's owner. Routing an action to the owner
(built on top of this) asks `owner_of(session_id)` and sends it to that process's `url`.

The rule both implementations keep:
- a process is alive while its registration (process id -> internal base URL) is younger than the lease
  TTL; a heartbeat renews it every `heartbeat_s`;
- an ownership record names a process id and has no TTL of its own: it counts only while that process is
  alive. So a crashed process's sessions become claimable once its registration expires (at most one TTL),
  and a clean `stop()` deregisters at once;
- `claim` is atomic: it succeeds when the session is unowned, already mine, or its owner is dead — and only
  while I am registered myself (a process whose heartbeat lapsed must not take sessions).

`RedisCluster` (`app/console/cluster_redis.py`) keeps this in Redis (one Lua script per decision); `MemoryCluster`
keeps it in a `MemoryDirectory` that several instances may share (one process, or tests standing in for several).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from redis.exceptions import RedisError

from app.console.tasks import TaskGroup

log = logging.getLogger("mcp_console.cluster")
FAILURES = (RedisError, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    process_id: str
    url: str  # internal base URL another process reaches this one at (setting advertise_url)


class Cluster(Protocol):
    process_id: str
    url: str

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def processes(self) -> list[ProcessInfo]: ...
    async def owner_of(self, session_id: str) -> ProcessInfo | None: ...
    async def claim(self, session_id: str) -> bool: ...
    async def seize(self, session_id: str, dead_process_id: str) -> bool: ...
    async def release(self, session_id: str) -> None: ...
    async def release_all(self) -> None: ...
    def owned_by_me(self, session_id: str) -> bool: ...


@dataclass
class MemoryDirectory:
    """The shared state of memory clusters: registrations with their expiry, and owners."""

    clock: Callable[[], float] = time.monotonic
    registered: dict[str, tuple[str, float]] = field(default_factory=dict)  # process id -> (url, expires)
    owners: dict[str, str] = field(default_factory=dict)  # session id -> process id

    def lapse(self, process_id: str) -> None:
        """What a dead process looks like once its TTL passed: its registration has expired; its ownership
        records stay (they count only while it is alive), so its sessions are claimable. Stop its heartbeat
        first (or never start it), or the next beat registers it again."""
        entry = self.registered.get(process_id)
        if entry is not None:
            self.registered[process_id] = (entry[0], self.clock())

    def alive(self, process_id: str) -> ProcessInfo | None:
        entry = self.registered.get(process_id)
        if entry is None or entry[1] <= self.clock():
            return None
        return ProcessInfo(process_id, entry[0])


class Heartbeat:
    """Registers at start, renews every `heartbeat_s`, deregisters at stop."""

    def __init__(self, heartbeat_s: float) -> None:
        self.heartbeat_s = heartbeat_s
        self._tasks = TaskGroup()
        self._closing = False  # redis-py may turn a cancel mid-reply into a ConnectionError: the flag ends the loop
        # Sessions this process claimed and has not released: the routing's fast path asks this without a round
        # trip. (No fencing: a process whose heartbeat lapsed while it kept running still believes it owns them.)
        self.mine: set[str] = set()

    def owned_by_me(self, session_id: str) -> bool:
        return session_id in self.mine

    async def release(self, session_id: str) -> None:
        raise NotImplementedError

    async def release_all(self) -> None:
        for session_id in list(self.mine):
            with contextlib.suppress(*FAILURES):
                await self.release(session_id)

    async def register(self) -> None:
        raise NotImplementedError

    async def deregister(self) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        try:
            await self.register()
        except FAILURES as exc:
            log.warning("cluster: registering failed (%s); the heartbeat retries", exc)
        self._tasks.spawn("cluster-heartbeat", self._beat())

    async def stop(self) -> None:
        self._closing = True
        await self._tasks.cancel_all()
        with contextlib.suppress(*FAILURES):
            await self.deregister()

    async def _beat(self) -> None:
        while not self._closing:
            await asyncio.sleep(self.heartbeat_s)  # the heartbeat period itself
            try:
                await self.register()
            except FAILURES as exc:
                log.warning("cluster: heartbeat failed (%s); this process's leases lapse after the TTL", exc)
            except Exception:  # whatever a value in Redis holds, the heartbeat goes on: lapsed, its sessions had
                # two owners (this one, on its fast path, and whoever claimed them)
                log.exception("cluster: heartbeat failed; it goes on")


class MemoryCluster(Heartbeat):
    def __init__(self, process_id: str, url: str, directory: MemoryDirectory | None = None,
                 ttl_s: float = 5.0, heartbeat_s: float = 1.0) -> None:
        super().__init__(heartbeat_s)
        self.process_id, self.url, self.ttl_s = process_id, url, ttl_s
        self.directory = directory or MemoryDirectory()

    async def register(self) -> None:
        self.directory.registered[self.process_id] = (self.url, self.directory.clock() + self.ttl_s)

    async def deregister(self) -> None:
        self.directory.registered.pop(self.process_id, None)

    async def processes(self) -> list[ProcessInfo]:
        return [info for pid in sorted(self.directory.registered) if (info := self.directory.alive(pid))]

    async def owner_of(self, session_id: str) -> ProcessInfo | None:
        owner = self.directory.owners.get(session_id)
        return self.directory.alive(owner) if owner is not None else None

    async def claim(self, session_id: str) -> bool:
        if self.directory.alive(self.process_id) is None:
            return False
        owner = self.directory.owners.get(session_id)
        if owner not in (None, self.process_id) and self.directory.alive(owner) is not None:
            return False
        self.directory.owners[session_id] = self.process_id
        self.mine.add(session_id)
        return True

    async def seize(self, session_id: str, dead_process_id: str) -> bool:
        if self.directory.alive(self.process_id) is None or self.directory.owners.get(session_id) != dead_process_id:
            return False
        self.directory.owners[session_id] = self.process_id
        self.mine.add(session_id)
        return True

    async def release(self, session_id: str) -> None:
        self.mine.discard(session_id)
        if self.directory.owners.get(session_id) == self.process_id:
            del self.directory.owners[session_id]
