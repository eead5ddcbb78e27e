"""Two console apps on one real Redis: the hub carries a session's events to the other process, and the
process directory knows both. (Routing actions to a session's owner, and replicas, come later.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio as aioredis

from app.console import replica
from app.console.cluster import ProcessInfo
from app.console.cluster_redis import RedisCluster
from app.console.hub import Hub, Serialized
from app.console.hub_redis import RedisHub
from app.console.manager import SessionManager
from tests.integration.conftest import JSON, Console, create_link, eventually, link_token
from tests.tcp_gate import TcpGate

WAIT_S = 15.0


def team(make_console: Callable[..., Console], redis_url: str, redis_prefix: str, name: str) -> Console:
    return make_console(redis_url=redis_url, redis_prefix=redis_prefix, advertise_url=f"http://127.0.0.1:1/{name}")


async def test_an_empty_redis_url_keeps_the_in_process_hub(make_console: Callable[..., Console]) -> None:
    console = make_console()
    assert type(console.manager.hub) is Hub
    await console.manager.start_services()
    assert await console.manager.cluster.claim("s1")  # alone: it owns what it claims


async def test_the_app_lifespan_registers_the_process_and_shutdown_deregisters_it(
        make_console: Callable[..., Console], redis_url: str, redis_prefix: str) -> None:
    a, b = (team(make_console, redis_url, redis_prefix, name) for name in ("a", "b"))
    assert isinstance(a.manager.hub, RedisHub) and isinstance(a.manager.cluster, RedisCluster)
    await b.manager.start_services()
    async with a.app.router.lifespan_context(a.app):
        listed = await b.manager.cluster.processes()
        assert ProcessInfo(a.manager.process_id, "http://127.0.0.1:1/a") in listed
        assert await a.manager.cluster.claim("s1") and not await b.manager.cluster.claim("s1")
    assert [p.process_id for p in await b.manager.cluster.processes()] == [b.manager.process_id]
    assert await b.manager.cluster.claim("s1")  # the owner went away cleanly: claimable at once


async def test_a_sessions_events_on_one_console_reach_the_other_consoles_hub_through_on_remote_first(
        make_console: Callable[..., Console], redis_url: str, redis_prefix: str, demo_url: str) -> None:
    a, b = (team(make_console, redis_url, redis_prefix, name) for name in ("a", "b"))
    for console in (a, b):
        await console.manager.start_services()
    hub_b: RedisHub = b.manager.hub
    assert hub_b.on_remote == b.manager.on_remote  # the seam replicas will fill
    arrived: list[tuple[str, int]] = []
    got = asyncio.Event()

    def on_remote(session_id: str, seq: int, message: Serialized) -> None:
        b.manager.on_remote(session_id, seq, message)
        arrived.append((session_id, seq))
        got.set()

    hub_b.on_remote = on_remote
    watcher, _ = hub_b.subscribe("pending", None, 0)  # B's renderer has no replica: nothing is pushed, no crash
    s = await a.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    await asyncio.wait_for(got.wait(), WAIT_S)
    mine = [seq for sid, seq in arrived if sid == s["id"]]
    assert mine == sorted(mine) and mine[0] >= 1
    tab, _ = hub_b.subscribe(s["id"], None, 0)
    await a.manager.delete(s["id"])  # close_session crosses to B's sockets
    await asyncio.wait_for(tab.closed.wait(), WAIT_S)
    assert tab.close_reason == "session deleted" and not watcher.closed.is_set()


# -- On real Redis and PostgreSQL (two console apps in this process): events the bus never carried.
#
# The owner's outgoing buffer overflowed while Redis was away (or Redis lost the bus, or trimmed it past where
# a reader was): the chain of `p` tells the other process's hub of the hole, and its tabs reload. But they reloaded
# from that process's replica, which had folded only what arrived: the entries in the hole were missing there for
# good (until a restart), though the store held them.

SILENT_S = 8.0  # how long the gate keeps B's store silent before it opens by itself (bounds the failing case)
PROMPT_S = 1.0  # what "answers promptly" means for a page that reads nothing from the store


@pytest.fixture
def pg_gate(pg_database: str) -> Iterator[TcpGate]:
    """A gate between one console and PostgreSQL: shut, that console's store reads wait, the other's do not."""
    gate = TcpGate("127.0.0.1", urlsplit(pg_database).port or 5432)
    yield gate
    gate.close()


def _through(gate: TcpGate, database: str) -> str:
    parts = urlsplit(database)
    return parts._replace(netloc=f"{parts.username}:{parts.password}@127.0.0.1:{gate.port}").geturl()


def _member(make_console: Callable[..., Console], redis_url: str, redis_prefix: str, database: str,
            name: str) -> Console:
    return make_console(redis_url=redis_url, redis_prefix=redis_prefix, database_url=database,
                        advertise_url=f"http://127.0.0.1:1/{name}")


async def _pair_with_b_gated(make_console: Callable[..., Console], redis_url: str, redis_prefix: str, database: str,
                             gate: TcpGate) -> tuple[Console, Console]:
    """Two members of one team, A and B, started; B reaches PostgreSQL through the gate."""
    a = _member(make_console, redis_url, redis_prefix, database, "a")
    b = _member(make_console, redis_url, redis_prefix, _through(gate, database), "b")
    for console in (a, b):
        await console.manager.start_services()
    return a, b


async def _answers_promptly_while_its_store_is_silent(console: Console, gate: TcpGate) -> None:
    """A page that reads nothing from the store answers at once, and the gate says no store read waited on it."""
    started = time.monotonic()
    listing = await console.http.get("/sessions.json")
    took = time.monotonic() - started
    assert listing.status_code == 200, listing.text
    assert gate.is_shut and not gate.gave_up, "the console's event loop waited for its store read"
    assert took < PROMPT_S, f"a page took {took:.2f} s while its store was silent"


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
    # Every event of the first call on the bus first: with some still pending (in flight), each new one pushed
    # out an older one that was being sent anyway, and the "lost" call reached the bus whole (no hole to see).
    await eventually(lambda: asyncio.sleep(0, _settled(a, sid) and hub_a._idle.is_set() and not hub_a._pending),
                     what="A's outgoing buffer empty")
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


async def test_a_gap_read_again_from_a_silent_store_keeps_the_process_answering_and_loses_no_entry(
        pg_gate: TcpGate, make_console: Callable[..., Console], redis_url: str, redis_prefix: str,
        pg_database: str, demo_url: str) -> None:
    # B read its replica again after a gap on the event loop: with PostgreSQL silent (the gate holds B's bytes; a
    # database that is down makes the pool wait up to 30 s) every page and websocket of B waited with it.
    a, b = await _pair_with_b_gated(make_console, redis_url, redis_prefix, pg_database, pg_gate)
    hub_a, hub_b = a.manager.hub, b.manager.hub
    assert isinstance(hub_a, RedisHub) and isinstance(hub_b, RedisHub)
    sid = await a.connected_http(demo_url)
    await a.call_tool(sid, "echo", text="before")
    await eventually(lambda: asyncio.sleep(0, len(_calls(b, sid)) == 1), what="B's replica of the first call")
    # A's outgoing buffer empty first, as in the test above: an event of the first call still in flight would
    # absorb the drop and let the "lost" call reach the bus whole.
    await eventually(lambda: asyncio.sleep(0, _settled(a, sid) and hub_a._idle.is_set() and not hub_a._pending),
                     what="A's outgoing buffer empty")
    hub_a._max_pending = 0  # what A publishes now never reaches the bus
    await a.call_tool(sid, "echo", text="lost on the bus")
    await eventually(lambda: asyncio.sleep(0, _settled(a, sid)), what="every event of the call recorded on A")
    hub_a._max_pending = 50_000
    pg_gate.shut(SILENT_S)
    try:
        await a.call_tool(sid, "echo", text="after the hole")
        await eventually(lambda: asyncio.sleep(0, hub_b.stats["gaps"] == 1), what="B to see the hole")
        # Published while B's read waits: delivered after it, in order, once.
        await a.call_tool(sid, "echo", text="while B reads")
        await eventually(lambda: asyncio.sleep(0, _settled(a, sid) and hub_a._idle.is_set()),
                         what="A to have sent every event")
        bus = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            tail = (await bus.xrevrange(f"{redis_prefix}bus", count=1))[0][0]
        finally:
            await bus.aclose()
        await eventually(lambda: asyncio.sleep(0, hub_b._last_id == tail), what="B's reader to pass A's last event")
        await _answers_promptly_while_its_store_is_silent(b, pg_gate)
        assert hub_b.stats["held"] > 0, "events came for the session while it was read again"
    finally:
        pg_gate.open()
    await eventually(lambda: asyncio.sleep(0, len(_calls(b, sid)) == 4 and _settled(b, sid)),
                     what="every call on B")
    session_a, session_b = a.manager.get(sid), b.manager.get(sid)
    assert list(session_b.timeline.entries) == list(session_a.timeline.entries), "each entry once, in order"
    assert [e.get("status") for e in session_b.timeline.entries.values()] == \
        [e.get("status") for e in session_a.timeline.entries.values()]
    assert session_b.timeline.seq == session_a.timeline.seq
    ring = [slot[0] for slot in hub_b._rings.get(sid, ())]
    assert ring == sorted(set(ring)), "B's ring holds each event once, in seq order"


async def test_a_link_made_or_revoked_on_another_process_reaches_it_off_its_event_loop_while_its_store_is_silent(
        pg_gate: TcpGate, make_console: Callable[..., Console], redis_url: str, redis_prefix: str,
        pg_database: str, demo_url: str) -> None:
    # B read every share link again from its store, on the event loop, when A made or revoked one: with
    # PostgreSQL silent every page and websocket of B waited with it, and a revoke waited for the store to count.
    a, b = await _pair_with_b_gated(make_console, redis_url, redis_prefix, pg_database, pg_gate)
    sid = await a.connected_http(demo_url)
    first = await create_link(a, sid)
    first_token = link_token(first)
    await eventually(lambda: asyncio.sleep(0, b.manager.links.find(first_token) is not None),
                     what="B to learn of the first link")
    pg_gate.shut(SILENT_S)
    try:
        second = await create_link(a, sid)
        revoked = await a.http.post(f"/sessions/{sid}/links/{first['id']}/revoke", headers=JSON)
        assert revoked.status_code == 200, revoked.text
        # The revoke counts on B from the event itself: its store is not asked.
        await eventually(lambda: asyncio.sleep(0, b.manager.links.find(first_token) is None),
                         what="B to refuse the revoked link")
        await _answers_promptly_while_its_store_is_silent(b, pg_gate)
    finally:
        pg_gate.open()
    await eventually(lambda: asyncio.sleep(0, b.manager.links.find(link_token(second)) is not None),
                     what="B to learn of the second link once its store answers")
    assert b.manager.links.find(first_token) is None, "a row read before the revoke must not open the link again"
