"""Attack, on real Redis and PostgreSQL (two console apps in this process): events the bus never carried.

The owner's outgoing buffer overflowed while Redis was away (or Redis lost the bus, or trimmed it past where
a reader was): the chain of `p` tells the other process's hub of the hole, and its tabs reload. But they reloaded
from that process's replica, which had folded only what arrived: the entries in the hole were missing there for
good (until a restart), though the store held them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from app.console import replica
from app.console.hub_redis import RedisHub
from app.console.manager import SessionManager
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


async def test_a_replica_new_to_a_process_is_read_from_the_store_off_its_event_loop(
        make_console: Callable[..., Console], redis_url: str, redis_prefix: str, pg_database: str,
        demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # With PostgreSQL down each store read waits up to its pool's timeout (30 s). B read a session new to it on
    # the event loop, for the remote event that told of it and for a request routed for it: every page and
    # websocket of B waited with it. The read is stood in for here by one that records its thread.
    a, b = (_member(make_console, redis_url, redis_prefix, pg_database, name) for name in ("a", "b"))
    for console in (a, b):
        await console.manager.start_services()
    threads: list[bool] = []
    real_read = replica.read

    def recorded_read(manager: SessionManager, session_id: str) -> replica.Loaded | None:
        threads.append(threading.current_thread() is threading.main_thread())
        return real_read(manager, session_id)

    monkeypatch.setattr(replica, "read", recorded_read)
    s = await a.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    await eventually(lambda: asyncio.sleep(0, b.manager.get(s["id"]) is not None), what="B's replica")
    assert threads and not any(threads), "B's replica was read on the event loop's thread"
    threads.clear()
    b.manager.replicas.forget(s["id"])  # as if B had never seen it, for the routed request below
    b.manager.replicas.deleted.discard(s["id"])
    assert await b.manager.replicas.load_off_loop(s["id"]) is not None
    assert threads == [False]
