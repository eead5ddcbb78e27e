"""Attack, on real Redis and PostgreSQL (two console apps in this process): events the bus never carried.

The owner's outgoing buffer overflowed while Redis was away (or Redis lost the bus, or trimmed it past where
a reader was): the chain of `p` tells the other process's hub of the hole, and its tabs reload. But they reloaded
from that process's replica, which had folded only what arrived: the entries in the hole were missing there for
good (until a restart), though the store held them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.console.hub_redis import RedisHub
from tests.integration.conftest import Console, eventually


def _member(make_console: Callable[..., Console], redis_url: str, redis_prefix: str, database: str,
            name: str) -> Console:
    return make_console(redis_url=redis_url, redis_prefix=redis_prefix, database_url=database,
                        advertise_url=f"http://127.0.0.1:1/{name}")


def _calls(console: Console, session_id: str) -> list[str]:
    session = console.manager.get(session_id)
    if session is None:
        return []
    return [key for key, entry in session.timeline.entries.items() if entry.get("method") == "tools/call"]


def _settled(console: Console, session_id: str) -> bool:
    session = console.manager.get(session_id)
    return session is not None and all(entry.get("status") not in ("pending", "running")
                                       for entry in session.timeline.entries.values())


async def test_entries_the_bus_lost_are_on_the_other_processs_replica_once_the_hole_is_seen(
        make_console: Callable[..., Console], redis_url: str, redis_prefix: str, pg_database: str,
        demo_url: str) -> None:
    a, b = (_member(make_console, redis_url, redis_prefix, pg_database, name) for name in ("a", "b"))
    for console in (a, b):
        await console.manager.start_services()
    hub_a = a.manager.hub
    assert isinstance(hub_a, RedisHub)
    s = await a.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    await a.call_tool(sid, "echo", text="before")
    await eventually(lambda: asyncio.sleep(0, len(_calls(b, sid)) == 1), what="B's replica of the first call")
    hub_a._max_pending = 0  # the buffer overflows: what A publishes now never reaches the bus
    await a.call_tool(sid, "echo", text="lost on the bus")
    await eventually(lambda: asyncio.sleep(0, _settled(a, sid)), what="every event of the call recorded on A")
    hub_a._max_pending = 50_000
    await a.call_tool(sid, "echo", text="after")
    last = _calls(a, sid)[-1]
    await eventually(lambda: asyncio.sleep(0, last in _calls(b, sid)), what="the last call on B")
    assert b.manager.hub.stats["gaps"] == 1
    assert len(_calls(a, sid)) == 3
    assert _calls(b, sid) == _calls(a, sid), "the call the bus lost is on B too"
