"""The process directory and session ownership leases, for both implementations (memory, real Redis)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis.asyncio as aioredis

from app.console.cluster import Cluster, MemoryCluster, MemoryDirectory, ProcessInfo
from app.console.cluster_redis import RedisCluster
from tests.services_redis import TEAM_KEY

SHORT_TTL_S = 0.3


@dataclass
class Env:
    make: Callable[..., Cluster]
    advance: Callable[[float], None]  # lets the memory clock run; real time does for Redis


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    made: list[Cluster] = []
    now = [1000.0]
    directory = MemoryDirectory(clock=lambda: now[0])

    def make(process_id: str, **kw: Any) -> Cluster:
        url = f"http://127.0.0.1:9/{process_id}"
        cluster: Cluster
        if request.param == "memory":
            cluster = MemoryCluster(process_id, url, directory, **kw)
        else:
            cluster = RedisCluster(process_id, url, request.getfixturevalue("redis_url"), key=TEAM_KEY,
                                   prefix=request.getfixturevalue("redis_prefix"), **kw)
        made.append(cluster)
        return cluster

    def advance(seconds: float) -> None:
        now[0] += seconds

    yield Env(make, advance)
    for cluster in made:
        await cluster.stop()


async def eventually_none(cluster: Cluster, session_id: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while await cluster.owner_of(session_id) is not None:
        assert time.monotonic() < deadline, "the owner never expired"
        await asyncio.sleep(0.02)


async def test_each_process_registers_its_internal_url(env: Env) -> None:
    a, b = env.make("A"), env.make("B")
    await a.start()
    await b.start()
    assert await a.processes() == [ProcessInfo("A", "http://127.0.0.1:9/A"), ProcessInfo("B", "http://127.0.0.1:9/B")]
    await b.stop()
    assert await a.processes() == [ProcessInfo("A", "http://127.0.0.1:9/A")]  # a clean stop deregisters at once


async def test_claim_is_exclusive_between_two_live_processes(env: Env) -> None:
    a, b = env.make("A"), env.make("B")
    await a.start()
    await b.start()
    assert await a.owner_of("s1") is None
    assert await a.claim("s1") is True
    assert await b.claim("s1") is False
    assert await a.claim("s1") is True  # claiming what is already mine is fine
    assert await b.owner_of("s1") == ProcessInfo("A", "http://127.0.0.1:9/A")
    assert a.owned_by_me("s1") and not b.owned_by_me("s1")


async def test_a_process_proven_dead_is_seized_from_at_once_and_only_while_it_still_owns(env: Env) -> None:
    """Seize: the owner's address refused a connection, so its lease need not run out; but a second process that
    saw the same refusal a moment later must not take the session from the first one that seized it."""
    a, b, c = env.make("A"), env.make("B"), env.make("C")
    for cluster in (a, b, c):
        await cluster.start()
    assert await a.claim("s1")
    assert await b.seize("s1", "A") is True
    assert await c.seize("s1", "A") is False, "it names B now"
    owner = await c.owner_of("s1")
    assert owner is not None and owner.process_id == "B" and b.owned_by_me("s1")


async def test_two_processes_claiming_at_once_get_exactly_one_owner(env: Env) -> None:
    clusters = [env.make(f"P{i}") for i in range(5)]
    for cluster in clusters:
        await cluster.start()
    results = await asyncio.gather(*(cluster.claim("s1") for cluster in clusters))
    assert sorted(results) == [False] * 4 + [True]


async def test_a_dead_owners_sessions_can_be_claimed_after_its_ttl(env: Env) -> None:
    dead = env.make("A", ttl_s=SHORT_TTL_S, heartbeat_s=3600.0)  # registers once, then never beats again
    b = env.make("B")
    await dead.start()
    await b.start()
    assert await dead.claim("s1") is True
    assert await b.claim("s1") is False
    env.advance(SHORT_TTL_S + 0.1)
    await eventually_none(b, "s1")  # the owner's registration expired: unowned
    assert await b.claim("s1") is True
    assert (await b.owner_of("s1")) == ProcessInfo("B", "http://127.0.0.1:9/B")


async def test_a_live_heartbeat_keeps_the_lease_past_its_ttl(env: Env) -> None:
    a = env.make("A", ttl_s=1.0, heartbeat_s=0.1)
    await a.start()
    assert await a.claim("s1")
    for _ in range(25):  # 2.5 s, more than twice the TTL (the memory clock moves as fast): time is the subject
        env.advance(0.1)
        await asyncio.sleep(0.1)
        assert a.owned_by_me("s1")


async def test_release_lets_another_process_claim_and_only_the_owner_can_release(env: Env) -> None:
    a, b = env.make("A"), env.make("B")
    await a.start()
    await b.start()
    assert await a.claim("s1")
    await b.release("s1")  # not b's to release
    assert a.owned_by_me("s1")
    await a.release("s1")
    assert await a.owner_of("s1") is None
    assert await b.claim("s1")


async def test_a_process_whose_registration_lapsed_cannot_claim(env: Env) -> None:
    a = env.make("A", ttl_s=SHORT_TTL_S, heartbeat_s=3600.0)
    await a.start()
    env.advance(SHORT_TTL_S + 0.1)
    deadline = time.monotonic() + 5.0
    while await a.processes():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert await a.claim("s1") is False


async def test_a_redis_that_lost_its_keys_gives_a_live_owners_sessions_back_to_it_not_to_the_next_claimer(
        redis_url: str, redis_prefix: str) -> None:
    """Redis restarted without its data (no persistence, a failover to an empty replica): the registrations come
    back with the next heartbeats, the ownership records did not. The owner still held its sessions (its target
    connected, its fast path saying "mine"), yet the next process to see an action claimed them too: two owners
    of one session, both writing its timeline."""
    a = RedisCluster("A", "http://127.0.0.1:9/A", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0)
    b = RedisCluster("B", "http://127.0.0.1:9/B", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0)
    try:
        await a.start()
        await b.start()
        assert await a.claim("s1")
        wipe = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            await wipe.delete(*[key async for key in wipe.scan_iter(match=redis_prefix + "*")])
        finally:
            await wipe.aclose()
        await a.register()  # each process's next heartbeat
        await b.register()
        assert await b.claim("s1") is False
        assert await b.owner_of("s1") == ProcessInfo("A", "http://127.0.0.1:9/A")
        assert a.owned_by_me("s1")
    finally:
        await a.stop()
        await b.stop()


async def test_a_registration_written_without_the_team_secret_is_no_process_and_owns_nothing(
        redis_url: str, redis_prefix: str) -> None:
    """Anything that reaches Redis could write `proc:evil` = {"url": "http://its-own-server"} and `owner:<sid>` =
    evil: the next action on that session was forwarded there, with the owner token. A registration must be
    signed with the team key to count: the forged one is listed nowhere and owns nothing; nobody claims over it
    (the id it names may be a live process's), and the real owner writes its record back at its next heartbeat."""
    a = RedisCluster("A", "http://127.0.0.1:9/A", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0)
    b = RedisCluster("B", "http://127.0.0.1:9/B", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0)
    intruder = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await a.start()
        await b.start()
        for sid in ("s1", "s2", "s3"):
            assert await a.claim(sid)
        await intruder.set(f"{redis_prefix}proc:evil", json.dumps({"url": "http://127.0.0.1:18003"}))
        await intruder.set(f"{redis_prefix}proc:evil2", json.dumps({"url": "http://127.0.0.1:18003",
                                                                    "sig": "0" * 64}))
        # A real registration copied under another id is no registration of that id either.
        await intruder.set(f"{redis_prefix}proc:copy", str(await intruder.get(f"{redis_prefix}proc:A")))
        for sid, fake in (("s1", "evil"), ("s2", "evil2"), ("s3", "copy")):
            await intruder.set(f"{redis_prefix}owner:{sid}", fake)
        assert [p.process_id for p in await b.processes()] == ["A", "B"]
        for sid in ("s1", "s2", "s3"):
            assert await b.owner_of(sid) is None
            assert not await b.claim(sid), "a forged registration is never claimed over"
        await a.register()  # A's next heartbeat
        for sid in ("s1", "s2", "s3"):
            owner = await b.owner_of(sid)
            assert owner is not None and owner.process_id == "A"
        assert b.forged_seen >= 3
    finally:
        await intruder.aclose()
        await a.stop()
        await b.stop()


async def test_a_value_of_any_bytes_in_the_directory_stops_no_heartbeat_and_no_lookup(
        redis_url: str, redis_prefix: str) -> None:
    """A registration or ownership record of bytes that are not UTF-8 made the heartbeat raise and end: the lease
    lapsed for good while the process went on acting as owner, and another process claimed its sessions."""
    a = RedisCluster("A", "http://127.0.0.1:9/A", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await a.start()
        assert await a.claim("s1")
        await raw.set(f"{redis_prefix}proc:A".encode(), b"\xff\xfe")
        await raw.set(f"{redis_prefix}owner:s1".encode(), b"\xff")
        assert await a.owner_of("s1") is None
        await a.register()  # the next heartbeat: its registration and its record of s1 are written back
        owner = await a.owner_of("s1")
        assert owner is not None and owner.process_id == "A"
    finally:
        await raw.aclose()
        await a.stop()


async def test_an_old_registration_replayed_is_no_process_whatever_ttl_its_key_has(
        redis_url: str, redis_prefix: str) -> None:
    """A copy of a departed process's signed registration, written back with a long TTL, named an address that whoever
    took it next would answer at: the registration's own signed time makes it worthless after a lease."""
    c = RedisCluster("C", "http://127.0.0.1:9/C", redis_url, key=TEAM_KEY, prefix=redis_prefix, heartbeat_s=60.0,
                     ttl_s=1.0, skew_s=0.5)
    reader = RedisCluster("R", "http://127.0.0.1:9/R", redis_url, key=TEAM_KEY, prefix=redis_prefix,
                          heartbeat_s=60.0, ttl_s=1.0, skew_s=0.5)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await c.start()
        assert await c.claim("s1")
        saved = await raw.get(f"{redis_prefix}proc:C".encode())
        record = await raw.get(f"{redis_prefix}owner:s1".encode())
        assert saved is not None and record is not None
        await c.stop()  # deregisters
        await raw.set(f"{redis_prefix}proc:C".encode(), saved, px=600_000)
        await raw.set(f"{redis_prefix}owner:s1".encode(), record)
        owner = await reader.owner_of("s1")
        assert owner is not None and owner.process_id == "C", "believed while a lease could still be running"
        deadline = time.monotonic() + 5.0
        while await reader.owner_of("s1") is not None:  # believed only while a lease could still be running
            assert time.monotonic() < deadline, "the replayed registration is still believed"
            await asyncio.sleep(0.05)
        assert [p.process_id for p in await reader.processes()] == []
    finally:
        await raw.aclose()
        await reader.stop()


async def test_an_ownership_record_not_signed_for_its_session_is_claimed_over_only_once_no_owner_wrote_its_own(
        redis_url: str, redis_prefix: str) -> None:
    """A record naming a process it was not written by (a copy from another session, `evil`, a huge or deeply nested
    value) names nobody. Its real owner, alive, writes its own back at its next heartbeat; only a record that stood
    longer than that is claimed over: a session whose owner died is not stuck for ever, one whose owner lives never
    gets a second owner."""
    a = short_lease("A", redis_url, redis_prefix)
    b = short_lease("B", redis_url, redis_prefix)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await a.start()
        await b.start()
        assert await a.claim("s1") and await a.claim("s2")
        copied = await raw.get(f"{redis_prefix}owner:s2".encode())
        await raw.set(f"{redis_prefix}owner:s1".encode(), copied)  # A's own record, of another session
        assert await b.owner_of("s1") is None and not await b.claim("s1")
        await raw.set(f"{redis_prefix}proc:deep".encode(), b"[" * 200_000)
        await raw.set(f"{redis_prefix}owner:s2".encode(), b"deep")
        assert await b.owner_of("s2") is None and not await b.claim("s2")
        await a.register()  # A, alive, writes both back
        for sid in ("s1", "s2"):
            owner = await b.owner_of(sid)
            assert owner is not None and owner.process_id == "A"
        await raw.set(f"{redis_prefix}owner:s3".encode(), b"evil")  # a session whose owner is gone
        assert not await b.claim("s3")
        deadline = time.monotonic() + 5.0
        while not await b.claim("s3"):  # claimed over once it stood past a lease and the skew
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
            await b.register()  # B's heartbeat (its lease is short here)
        owner = await a.owner_of("s3")
        assert owner is not None and owner.process_id == "B"
    finally:
        await raw.aclose()
        await a.stop()
        await b.stop()


async def test_a_dead_owners_sessions_are_claimed_once_a_registration_forged_under_its_id_has_stood_a_lease(
        redis_url: str, redis_prefix: str) -> None:
    """A registration written under a dead process's id, with no TTL, used to keep its sessions from ever being taken
    over. A live owner writes its own registration over such a value at every heartbeat; one that stands a lease and
    the skew has nobody behind it."""
    a = short_lease("A", redis_url, redis_prefix)
    b = short_lease("B", redis_url, redis_prefix)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await a.start()
        await b.start()
        assert await a.claim("s1")
        await a.stop()  # gone; its record of s1 stays
        await raw.set(f"{redis_prefix}proc:A".encode(), b'{"url": "http://127.0.0.1:18003"}')
        assert not await b.claim("s1"), "not at once: a live A would write its own back within a lease"
        deadline = time.monotonic() + 5.0
        while not await b.claim("s1"):
            assert time.monotonic() < deadline, "a forged registration kept the session from being taken over"
            await asyncio.sleep(0.1)
            await b.register()
        owner = await b.owner_of("s1")
        assert owner is not None and owner.process_id == "B"
    finally:
        await raw.aclose()
        await b.stop()


def short_lease(process_id: str, redis_url: str, redis_prefix: str) -> RedisCluster:
    """A process whose lease (0.5 s, 0.2 s of skew) lapses within a test; its heartbeat runs only when called."""
    return RedisCluster(process_id, f"http://127.0.0.1:9/{process_id}", redis_url, key=TEAM_KEY, prefix=redis_prefix,
                        heartbeat_s=60.0, ttl_s=0.5, skew_s=0.2)
