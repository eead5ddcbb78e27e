"""The Hub contract: render once per event, fan the same string out, bound every queue, replay what a tab
missed, and carry only text (a serialized event or a rendered fragment), never a live object.

Parameterised over implementations by `make_hub`: the in-process hub, and the Redis hub against a real
redis-server (tests/services_redis.py; each test has its own key prefix). Its cross-process behaviour is in
test_hub_redis.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from app.console.events import Notice, StatusChanged, Stderr, TimelineEvent, Wire
from app.console.hub import Hub, Renderer, Subscriber
from app.console.hub_redis import RedisHub
from tests.services_redis import TEAM_KEY

MakeHub = Callable[..., Hub]


def _memory(_request: pytest.FixtureRequest, _made: list[Hub]) -> MakeHub:
    return Hub


def _redis(request: pytest.FixtureRequest, made: list[Hub]) -> MakeHub:
    url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")

    def make(render: Renderer, **kw: Any) -> Hub:
        hub = RedisHub(render, url=url, prefix=prefix, key=TEAM_KEY, **kw)
        hub.launch()
        made.append(hub)
        return hub
    return make


# Each builds the factory the tests call as `make_hub(render, queue_size=..., ring_size=...)`.
IMPLEMENTATIONS: dict[str, Callable[[pytest.FixtureRequest, list[Hub]], MakeHub]] = {
    "memory": _memory, "redis": _redis}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
async def make_hub(request: pytest.FixtureRequest) -> AsyncIterator[MakeHub]:
    made: list[Hub] = []
    yield IMPLEMENTATIONS[request.param](request, made)
    for hub in made:
        await hub.stop()


class CountingRenderer:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, event: TimelineEvent) -> str | None:
        self.calls.append(event.seq)
        return f"<div id='e{event.seq}'>{event.kind}</div>"


def ev(seq: int, kind: str = "notice", session: str = "s1") -> TimelineEvent:
    record: Any = {"notice": Notice(message=f"n{seq}"), "status": StatusChanged(), "wire": Wire(),
                   "stderr": Stderr(lines=[f"l{seq}"])}[kind]
    return TimelineEvent(session_id=session, seq=seq, record=record, at=float(seq))


def drain(sub: Subscriber) -> list[tuple[int, str]]:
    items = []
    while not sub.queue.empty():
        items.append(sub.queue.get_nowait())
    return items


async def test_publish_renders_once_per_event_and_every_subscriber_gets_the_same_string(make_hub: MakeHub) -> None:
    render = CountingRenderer()
    hub = make_hub(render)
    subs = [hub.subscribe("s1", None, 0)[0] for _ in range(3)]
    for seq in (1, 2):
        hub.publish(ev(seq))
    assert render.calls == [1, 2]
    assert hub.rendered == 2
    got = [drain(sub) for sub in subs]
    assert got[0] == [(1, "<div id='e1'>notice</div>"), (2, "<div id='e2'>notice</div>")]
    assert got[1] == got[0] and got[2] == got[0]
    assert got[1][0][1] is got[0][0][1]  # the very same string object, not three renders


async def test_publish_only_reaches_subscribers_of_the_same_session(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    mine, _ = hub.subscribe("s1", None, 0)
    other, _ = hub.subscribe("s2", None, 0)
    hub.publish(ev(1, session="s1"))
    assert [seq for seq, _ in drain(mine)] == [1]
    assert drain(other) == []


async def test_a_subscriber_with_a_full_queue_gets_overflow_while_the_others_keep_receiving(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), queue_size=2)
    slow, _ = hub.subscribe("s1", None, 0)
    fast, _ = hub.subscribe("s1", None, 0)
    received: list[int] = []
    for seq in range(1, 6):
        hub.publish(ev(seq))
        received.extend(seq for seq, _ in drain(fast))
    assert slow.overflow.is_set()
    assert not fast.overflow.is_set()
    assert received == [1, 2, 3, 4, 5]
    assert [seq for seq, _ in drain(slow)] == [1, 2]  # nothing more is queued once it has overflowed


async def test_an_overflowed_subscriber_stays_overflowed_even_after_its_queue_drains(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), queue_size=1)
    sub, _ = hub.subscribe("s1", None, 0)
    hub.publish(ev(1))
    hub.publish(ev(2))
    drain(sub)
    hub.publish(ev(3))
    assert sub.overflow.is_set()
    assert drain(sub) == []


async def test_a_socket_sender_is_woken_by_a_message_an_overflow_or_a_close_and_by_nothing_else(
        make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), queue_size=1)
    sub, _ = hub.subscribe("s1", None, 0)
    other, _ = hub.subscribe("s2", None, 0)
    assert not sub.wake.is_set()
    hub.publish(ev(1))
    assert sub.wake.is_set() and not other.wake.is_set()
    sub.wake.clear()
    hub.publish(ev(2))  # the queue is full: the sender is woken to send the reset
    assert sub.overflow.is_set() and sub.wake.is_set()
    other.close("gone")
    assert other.wake.is_set()


async def test_subscribe_with_last_seq_replays_exactly_the_missed_events_in_order(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    for seq in range(1, 8):
        hub.publish(ev(seq))
    sub, whole = hub.subscribe("s1", last_seq=4, current_seq=7)
    assert whole is True
    hub.publish(ev(8))
    assert [seq for seq, _ in drain(sub)] == [5, 6, 7, 8]


async def test_subscribe_when_already_up_to_date_replays_nothing(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    for seq in range(1, 4):
        hub.publish(ev(seq))
    sub, whole = hub.subscribe("s1", last_seq=3, current_seq=3)
    assert whole is True
    assert drain(sub) == []


async def test_replay_skips_events_that_render_to_nothing(make_hub: MakeHub) -> None:
    hub = make_hub(lambda e: None if e.kind == "status" else f"<p>{e.seq}</p>")
    hub.publish(ev(1))
    hub.publish(ev(2, kind="status"))
    hub.publish(ev(3))
    sub, whole = hub.subscribe("s1", last_seq=0, current_seq=3)
    assert whole is True
    assert drain(sub) == [(1, "<p>1</p>"), (3, "<p>3</p>")]


async def test_nothing_is_rendered_while_nobody_listens(make_hub: MakeHub) -> None:
    render = CountingRenderer()
    hub = make_hub(render)
    hub.publish(ev(1, kind="wire"))
    hub.publish(ev(2))
    assert render.calls == []
    hub.subscribe("s1", None, 2)
    hub.publish(ev(3))
    assert render.calls == [3]


async def test_events_published_while_nobody_listened_are_rendered_for_a_tab_that_catches_up(make_hub: MakeHub) -> None:
    render = CountingRenderer()
    hub = make_hub(render)
    for seq in (1, 2, 3):
        hub.publish(ev(seq))
    sub, whole = hub.subscribe("s1", last_seq=1, current_seq=3)
    assert whole is True
    assert [seq for seq, _ in drain(sub)] == [2, 3]
    assert render.calls == [2, 3]


async def test_a_gap_older_than_the_ring_is_not_whole(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), ring_size=3)
    for seq in range(1, 11):
        hub.publish(ev(seq))
    sub, whole = hub.subscribe("s1", last_seq=5, current_seq=10)
    assert whole is False
    assert drain(sub) == []


async def test_a_gap_that_just_fits_the_ring_is_whole(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), ring_size=3)
    for seq in range(1, 11):
        hub.publish(ev(seq))
    sub, whole = hub.subscribe("s1", last_seq=7, current_seq=10)
    assert whole is True
    assert [seq for seq, _ in drain(sub)] == [8, 9, 10]


async def test_a_gap_with_no_ring_at_all_is_not_whole(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    _, whole = hub.subscribe("s1", last_seq=3, current_seq=9)
    assert whole is False


async def test_unsubscribe_stops_delivery_and_close_session_signals_every_subscriber(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    a, _ = hub.subscribe("s1", None, 0)
    b, _ = hub.subscribe("s1", None, 0)
    assert hub.subscribers("s1") == 2
    hub.unsubscribe(a)
    hub.publish(ev(1))
    assert drain(a) == []
    assert len(drain(b)) == 1
    hub.close_session("s1", "session deleted")
    await asyncio.wait_for(b.closed.wait(), 1.0)
    assert b.close_reason == "session deleted"
    assert not a.closed.is_set()


async def test_a_flood_of_wire_events_does_not_push_what_a_tab_missed_out_of_the_ring(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer(), ring_size=3)
    hub.publish(ev(1))
    for seq in range(2, 500):
        hub.publish(ev(seq, kind="wire"))
    hub.publish(ev(500))
    sub, whole = hub.subscribe("s1", last_seq=0, current_seq=500)
    assert whole is True
    assert [seq for seq, _ in drain(sub)] == [1, 500]


async def test_a_hub_that_has_seen_nothing_of_a_session_cannot_catch_up_a_tab_that_is_behind(make_hub: MakeHub) -> None:
    # After a console restart the ring is empty: a tab that saw seq 5 of 9 must reload.
    hub = make_hub(CountingRenderer())
    _, whole = hub.subscribe("s1", last_seq=5, current_seq=9)
    assert whole is False
    _, whole = hub.subscribe("s1", last_seq=9, current_seq=9)
    assert whole is True


async def test_the_renderer_gets_the_event_back_from_its_serialized_text_not_the_published_object(
        make_hub: MakeHub) -> None:
    seen: list[TimelineEvent] = []

    def render(event: TimelineEvent) -> str:
        seen.append(event)
        return f"<p>{event.seq}</p>"

    hub = make_hub(render)
    hub.subscribe("s1", None, 0)
    published = ev(1)
    hub.publish(published)
    assert seen == [published] and seen[0] is not published


async def test_what_the_hub_holds_for_a_session_is_text_only(make_hub: MakeHub) -> None:
    render: Renderer = lambda e: None if e.kind == "status" else f"<p>{e.seq}</p>"  # noqa: E731
    hub = make_hub(render)
    hub.publish(ev(1))  # nobody watching: kept as its serialized event
    sub, _ = hub.subscribe("s1", None, 1)
    hub.publish(ev(2))
    hub.publish(ev(3, kind="status"))
    held = [part for ring in hub._rings.values() for slot in ring for part in slot[1:]]
    assert held and all(part is None or isinstance(part, str) for part in held)
    assert all(isinstance(seq, int) and isinstance(payload, str) for seq, payload in drain(sub))


async def test_subscribe_async_replays_exactly_the_missed_events_like_subscribe(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    for seq in range(1, 8):
        hub.publish(ev(seq))
    sub, whole = await hub.subscribe_async("s1", last_seq=4, current_seq=7)
    assert whole is True
    hub.publish(ev(8))
    assert [seq for seq, _ in drain(sub)] == [5, 6, 7, 8]


async def test_subscribe_async_on_a_hub_that_has_seen_nothing_of_a_session_cannot_catch_up(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    _, whole = await hub.subscribe_async("s1", last_seq=5, current_seq=9)
    assert whole is False
    sub, whole = await hub.subscribe_async("s1", last_seq=9, current_seq=9, masked=True)
    assert whole is True and drain(sub) == []


async def test_a_hub_starts_and_stops_without_events(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    await hub.start()
    hub.publish(ev(1))
    await hub.stop()


async def test_a_forgotten_session_cannot_catch_a_tab_up_any_more(make_hub: MakeHub) -> None:
    hub = make_hub(CountingRenderer())
    for seq in range(1, 4):
        hub.publish(ev(seq))
    hub.forget_session("s1")
    _, whole = await hub.subscribe_async("s1", last_seq=1, current_seq=3)
    assert whole is False
