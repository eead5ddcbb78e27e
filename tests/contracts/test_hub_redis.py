"""The Redis hub between processes: two RedisHub instances ("processes") on one real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from app.console.events import Notice, TimelineEvent
from app.console.hub import Renderer, Serialized, Subscriber
from app.console.hub_redis import RedisHub
from tests.services_redis import TEAM_KEY, RedisServer

WAIT_S = 10.0


def ev(seq: int, session: str = "s1") -> TimelineEvent:
    return TimelineEvent(session_id=session, seq=seq, record=Notice(message=f"n{seq}"), at=float(seq))


def render(event: TimelineEvent) -> str:
    return f"<p>{event.seq}</p>"


async def until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


async def take(sub: Subscriber, count: int) -> list[int]:
    return [(await asyncio.wait_for(sub.queue.get(), WAIT_S))[0] for _ in range(count)]


MakeHub = Callable[..., RedisHub]


@pytest.fixture
async def make(redis_url: str, redis_prefix: str) -> AsyncIterator[MakeHub]:
    made: list[RedisHub] = []

    def factory(renderer: Renderer = render, url: str = redis_url, **kw: Any) -> RedisHub:
        hub = RedisHub(renderer, url=url, prefix=redis_prefix, key=TEAM_KEY, **kw)
        made.append(hub)
        return hub
    yield factory
    for hub in made:
        await hub.stop(flush_s=0.5)


async def test_events_published_on_one_process_reach_a_subscriber_on_another_in_exact_order(make: MakeHub) -> None:
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    for seq in range(1, 1001):
        a.publish(ev(seq))
    assert await take(sub, 1000) == list(range(1, 1001))
    assert b.stats["received"] == 1000 and a.stats["received"] == 0  # a process skips its own messages


async def test_on_remote_runs_before_the_receiving_process_renders_the_event(make: MakeHub) -> None:
    folded: list[int] = []
    seen_by_renderer: list[list[int]] = []

    def on_remote(session_id: str, seq: int, message: Serialized) -> None:
        assert session_id == "s1" and TimelineEvent.from_json(message).seq == seq
        folded.append(seq)

    def b_render(event: TimelineEvent) -> str:
        seen_by_renderer.append(list(folded))
        return render(event)

    a, b = make(), make(b_render, on_remote=on_remote)
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
    assert seen_by_renderer == [[1], [1, 2]]


async def test_a_process_that_started_after_the_events_catches_a_reconnecting_tab_up_from_the_stream(
        make: MakeHub) -> None:
    a = make()
    await a.start()
    for seq in range(1, 6):
        a.publish(ev(seq))
    await until(lambda: a.stats["sent"] >= 5)
    b = make()
    await b.start()
    assert b.subscribe("s1", last_seq=2, current_seq=5)[1] is False  # its own ring knows nothing of them
    sub, whole = await b.subscribe_async("s1", last_seq=2, current_seq=5, masked=True)
    assert whole is True
    a.publish(ev(6))
    assert await take(sub, 4) == [3, 4, 5, 6]
    b.unsubscribe(sub)
    a.publish(ev(7))
    await until(lambda: b.stats["received"] >= 2)
    again, whole = await b.subscribe_async("s1", last_seq=4, current_seq=7)  # the tab reconnects on B
    assert whole is True
    assert await take(again, 3) == [5, 6, 7]


async def test_a_gap_older_than_the_stream_keeps_means_reload(make: MakeHub) -> None:
    a = make(ring_size=3)
    await a.start()
    for seq in range(1, 21):
        a.publish(ev(seq))
    await until(lambda: a.stats["sent"] >= 20)
    b = make(ring_size=3)
    await b.start()
    _, whole = await b.subscribe_async("s1", last_seq=5, current_seq=20)
    assert whole is False
    sub, whole = await b.subscribe_async("s1", last_seq=17, current_seq=20)
    assert whole is True
    assert await take(sub, 3) == [18, 19, 20]


async def test_close_link_and_close_session_reach_sockets_on_every_process(make: MakeHub) -> None:
    a, b = make(), make()
    await a.start()
    await b.start()
    linked, _ = b.subscribe("s1", None, 0, link_id="L1", masked=True)
    owner, _ = b.subscribe("s1", None, 0)
    other, _ = b.subscribe("s2", None, 0)
    a.close_link("L1", "this share link was revoked")
    await asyncio.wait_for(linked.closed.wait(), WAIT_S)
    assert linked.close_reason == "this share link was revoked"
    assert not owner.closed.is_set()
    a.close_session("s1", "session deleted")
    await asyncio.wait_for(owner.closed.wait(), WAIT_S)
    assert owner.close_reason == "session deleted" and not other.closed.is_set()


async def test_a_hub_whose_redis_is_stopped_keeps_delivering_locally_and_catches_up_after(make: MakeHub) -> None:
    server = RedisServer().start()
    try:
        a, b = make(url=server.url), make(url=server.url)
        await a.start()
        await b.start()
        local, _ = a.subscribe("s1", None, 0)
        remote, _ = b.subscribe("s1", None, 0)
        a.publish(ev(1))
        assert await take(remote, 1) == [1]
        server.stop()
        for seq in range(2, 5):
            a.publish(ev(seq))  # never raises, never waits
        assert await take(local, 4) == [1, 2, 3, 4]
        await until(lambda: a.stats["send_failures"] >= 1)
        server.start()  # same port, empty: what was pending is sent after reconnecting
        assert await take(remote, 3) == [2, 3, 4]
        assert not remote.overflow.is_set()
    finally:
        server.close()


async def test_events_dropped_while_redis_was_away_reset_the_tabs_on_other_processes(make: MakeHub) -> None:
    server = RedisServer().start()
    try:
        a, b = make(url=server.url, max_pending=2), make(url=server.url)
        await a.start()
        await b.start()
        remote, _ = b.subscribe("s1", None, 0)
        a.publish(ev(1))
        assert await take(remote, 1) == [1]
        await until(lambda: a.stats["sent"] == 1)  # B can have it before A has read Redis's reply
        server.stop()
        for seq in range(2, 7):
            a.publish(ev(seq))
        assert a.stats["dropped"] == 3
        server.start()
        await asyncio.wait_for(remote.overflow.wait(), WAIT_S)  # 2..4 never arrive: the tab reloads
    finally:
        server.close()


async def test_forgetting_a_session_deletes_its_stream_for_every_process(make: MakeHub) -> None:
    a, b = make(), make()
    await a.start()
    await b.start()
    for seq in range(1, 4):
        a.publish(ev(seq))
    await until(lambda: b.stats["received"] == 3)
    a.forget_session("s1")
    await until(lambda: "s1" not in b._rings)
    _, whole = await b.subscribe_async("s1", last_seq=1, current_seq=3)
    assert whole is False  # neither B's ring nor the (deleted) stream holds it


async def test_hostile_text_crosses_processes_unchanged(make: MakeHub) -> None:
    texts: list[str] = []
    a, b = make(), make(lambda e: texts.append(e.record.message) or "x")
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    hostile = "\x00<script>alert(1)</script>\u202e\ud800\u200b" + "é" * 200_000
    a.publish(TimelineEvent(session_id="s1", seq=1, record=Notice(message=hostile), at=1.0))
    assert await take(sub, 1) == [1]
    assert texts == [hostile]


async def test_messages_another_client_adds_to_the_bus_unsigned_are_dropped_and_later_events_still_arrive(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """Another client of the same Redis (a stdio server that reached it, a script, an old console) writes to the
    bus without the team secret. A forged event used to be folded into the replica and pushed to the tabs (a
    made-up dialog); with a huge `q` it set the session's last-seen seq, and every real event after it was dropped
    as a duplicate. Now none of them is believed, whatever it holds."""
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    intruder = aioredis.Redis.from_url(redis_url, decode_responses=True)
    forged = ({"o": "x", "t": "ev", "s": "s1", "q": "1", "p": "0", "m": ev(1).to_json()},  # well-formed, unsigned
              {"o": "x", "t": "ev", "s": "s1", "q": str(10**12), "p": "0", "m": ev(10**12).to_json()},
              {"o": "x", "t": "ev", "s": "s1", "q": "2", "p": "1", "m": ev(2).to_json(), "h": "0" * 64},
              {"o": "x", "t": "close_session", "s": "s1", "q": "0", "p": "0", "m": "forged close"},
              {"o": "x", "t": "ev"}, {"o": "x"}, {"junk": "\x00" * 10})
    try:
        for fields in forged:
            await intruder.xadd(f"{redis_prefix}bus", fields)  # type: ignore[arg-type]
    finally:
        await intruder.aclose()
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
    assert [slot[0] for slot in b._rings["s1"]] == [1, 2], "nothing of the forged messages is kept"
    assert b.stats["forged"] == len(forged) and b.stats["received"] == 2
    assert not sub.closed.is_set(), "a forged close_session closed nothing"


async def test_signed_messages_that_are_no_event_of_their_session_are_dropped(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """A message signed with the team key but not an event of that session at that seq (a bug, never an attacker
    without the secret) changes nothing either."""
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    writer = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        for seq, text in ((999999, "not json"), (999998, ev(999998, "s2").to_json()), (999997, ev(3).to_json())):
            await writer.xadd(f"{redis_prefix}bus", a.bus_fields("ev", "s1", seq, 0, text))
    finally:
        await writer.aclose()
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
    assert b.stats["rejected"] == 3 and b.stats["forged"] == 0


async def test_a_signed_event_far_beyond_what_the_store_holds_costs_one_store_read_never_a_frozen_session(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """Sequence numbers are checked against the store before they are believed: an event whose `p` jumps ahead
    makes the receiver read the session again (`on_gap` answers the store's highest seq), and an event the store
    does not hold is dropped. Taken as seen, a seq of 10**12 would have made every later real event a
    'duplicate'."""
    store_holds = [2]
    reads: list[str] = []

    async def on_gap(session_id: str) -> int | None:
        reads.append(session_id)
        return store_holds[0]

    a, b = make(), make(on_gap=on_gap)
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
    wild = 10**12
    writer = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await writer.xadd(f"{redis_prefix}bus", a.bus_fields("ev", "s1", wild, wild - 1, ev(wild).to_json()))
    finally:
        await writer.aclose()
    await until(lambda: b.stats["beyond_store"] == 1)
    assert reads == ["s1"]
    store_holds[0] = 4
    a.publish(ev(3))
    a.publish(ev(4))
    await until(lambda: [slot[0] for slot in b._rings["s1"]][-2:] == [3, 4])
    assert wild not in [slot[0] for slot in b._rings["s1"]]


async def test_a_stream_entry_without_the_team_signature_is_never_replayed_to_a_tab(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """A reconnecting tab on a process that lacks what it missed is caught up from the session's stream: an entry
    written there by anything else makes the tab reload (from the store) rather than show it."""
    a = make()
    await a.start()
    for seq in (1, 2, 3):
        a.publish(ev(seq))
    await until(lambda: a.stats["sent"] >= 3)
    writer = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await writer.xadd(f"{redis_prefix}ev:s1", {"m": ev(4).to_json(), "p": 3}, id="4-0")
    finally:
        await writer.aclose()
    late = make()
    await late.start()
    _, whole = await late.subscribe_async("s1", last_seq=1, current_seq=4)
    assert not whole, "a stream holding a forged entry is no catch-up"
    assert late.stats["forged"] == 1


async def test_a_burst_of_big_events_goes_out_in_round_trips_of_bounded_size_and_all_arrive(make: MakeHub) -> None:
    """A hostile target answering many calls with results near the message cap: the sender used to put up to
    500 events in one pipeline whatever their size, one round trip of gigabytes that no timeout lets finish;
    retried whole for ever, it stalled the bus for every session of the process."""
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    sizes: list[int] = []
    send = a._send

    async def measured(batch: list[Any]) -> list[Any]:
        sizes.append(sum(len(item.text) for item in batch))
        return await send(batch)

    a._send = measured  # type: ignore[method-assign]
    big = "x" * (1 << 20)
    for seq in range(1, 13):
        a.publish(TimelineEvent(session_id="s1", seq=seq, record=Notice(message=big), at=float(seq)))
    assert await take(sub, 12) == list(range(1, 13))
    assert len(sizes) > 1 and max(sizes) <= 6 << 20, sizes  # a few megabytes a round trip, not all twelve


async def test_a_bus_message_of_any_bytes_is_dropped_and_the_reader_goes_on(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """Bytes that are not UTF-8, or a signature that is not ASCII, made the reader task raise and end: every process
    stopped hearing of the others' events until it restarted, from one XADD."""
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    raw = aioredis.Redis.from_url(redis_url)  # bytes in, bytes out
    try:
        await raw.xadd(f"{redis_prefix}bus".encode(), {b"o": b"\xff", b"t": b"ev"})
        await raw.xadd(f"{redis_prefix}bus".encode(), {b"o": b"x", b"t": b"ev", b"s": b"s1", b"q": b"1", b"p": b"0",
                                                       b"m": b"{}", b"h": "é".encode()})
        await raw.xadd(f"{redis_prefix}bus".encode(), {b"o": b"x", b"t": b"ev", b"s": b"s1", b"q": b"1", b"p": b"0",
                                                       b"m": b"\xc3\x28", b"h": b"\xe9"})
    finally:
        await raw.aclose()
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
    assert b.stats["forged"] == 3


async def test_a_bus_deleted_after_an_entry_from_the_future_is_read_again_from_its_start(
        make: MakeHub, redis_url: str, redis_prefix: str) -> None:
    """One XADD with an id far in the future, then DEL of the bus: every reader waited past ids the new bus would take
    years to reach, and nothing crossed between processes again (a revoked link kept opening elsewhere)."""
    a, b = make(), make()
    await a.start()
    await b.start()
    sub, _ = b.subscribe("s1", None, 0)
    intruder = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await intruder.xadd(f"{redis_prefix}bus", {"o": "evil", "t": "ev"}, id="9999999999999-0")
        await until(lambda: b.stats["forged"] >= 1)
        await intruder.delete(f"{redis_prefix}bus")
    finally:
        await intruder.aclose()
    await until(lambda: b.stats["bus_resets"] >= 1)
    a.publish(ev(1))
    a.publish(ev(2))
    assert await take(sub, 2) == [1, 2]
