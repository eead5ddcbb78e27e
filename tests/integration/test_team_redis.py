"""Two console apps on one real Redis: the hub carries a session's events to the other process, and the
process directory knows both. (Routing actions to a session's owner, and replicas, come later.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.console.cluster import ProcessInfo
from app.console.cluster_redis import RedisCluster
from app.console.hub import Hub, Serialized
from app.console.hub_redis import RedisHub
from tests.integration.conftest import Console

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


