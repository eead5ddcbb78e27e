"""Listeners on a memory runner: acknowledgement, notifications, drops and re-listens, protocol slips."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.console.events import StatusChanged
from app.console.listen import Listeners
from app.console.timeline import Timeline
from app.mcp.jsonrpc import Frame
from tests.memory_runner import MakeRunner, Published, notification, result, until_stopped

SUB_ID = "io.modelcontextprotocol/subscriptionId"
ASKED = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a", "file:///b"]}
GRANTED = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}


def acknowledged(sid: Any, granted: dict[str, Any] = GRANTED) -> str:
    return notification("notifications/subscriptions/acknowledged", {"notifications": granted, "_meta": {SUB_ID: sid}})


def updated(sid: Any, uri: str = "file:///a") -> str:
    return notification("notifications/resources/updated", {"uri": uri, "_meta": {SUB_ID: sid}})


@pytest.fixture
def stop() -> Iterator[asyncio.Event]:
    """Ends every stream the fake server holds open, when the test is over."""
    event = asyncio.Event()
    yield event
    event.set()


async def test_an_acknowledged_listen_records_what_was_dropped_and_each_notification(
        make_runner: MakeRunner, timeline: Timeline, published: Published, stop: asyncio.Event) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])
        yield updated(message["id"])
        yield notification("notifications/tools/list_changed", {"_meta": {SUB_ID: message["id"]}})
        async for frame in until_stopped(stop):
            yield frame

    changes: list[Frame] = []
    listeners = Listeners(make_runner(server), timeline, changes.append)
    sub = listeners.start(ASKED)
    await published.until(lambda: timeline.state.subscriptions[sub.id].total == 2)
    record = timeline.state.subscriptions[sub.id]
    assert (record.state, record.acknowledged, record.problems) == ("active", GRANTED, [])
    assert record.dropped() == {"resourceSubscriptions": ["file:///b"]}
    assert record.ack_ms is not None
    assert [n["method"] for n in record.notifications] == ["notifications/resources/updated",
                                                          "notifications/tools/list_changed"]
    assert [f.method for f in changes] == [n["method"] for n in record.notifications]  # the session reacts

    await listeners.stop(sub, "owner")
    await published.until(lambda: timeline.state.subscriptions[sub.id].state == "stopped")


async def test_an_unexpected_drop_listens_again_with_a_new_request_after_the_backoff(
        make_runner: MakeRunner, timeline: Timeline, published: Published, stop: asyncio.Event) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])
        if len(runner.sent("subscriptions/listen")) == 1:
            return  # the first stream ends without a response: a drop, not a graceful close
        async for frame in until_stopped(stop):
            yield frame

    runner = make_runner(server)
    listeners = Listeners(runner, timeline, first_backoff_s=0.001)
    sub = listeners.start(ASKED)
    await published.until(lambda: timeline.state.subscriptions[sub.id].reconnects == 1
                          and timeline.state.subscriptions[sub.id].state == "active")
    record = timeline.state.subscriptions[sub.id]
    assert any(p.startswith("stream dropped") for p in record.problems)
    first, second = runner.sent("subscriptions/listen")
    assert first["id"] != second["id"] and record.subscription_id == second["id"]
    states = [e.data["state"] for e in published.events if e.kind in ("sub_ended", "sub_listening")]
    assert states.index("connection_lost") < states.index("reconnecting")
    await listeners.stop_all()


async def test_a_listen_that_ends_with_a_response_is_closed_by_the_server_and_not_reopened(
        make_runner: MakeRunner, timeline: Timeline, published: Published) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])
        yield result(message, {"resultType": "complete"})

    runner = make_runner(server)
    sub = Listeners(runner, timeline, first_backoff_s=0.001).start(ASKED)
    await published.until(lambda: timeline.state.subscriptions[sub.id].state == "closed_by_server")
    assert len(runner.sent("subscriptions/listen")) == 1


async def test_a_notification_under_the_wrong_subscription_id_is_flagged(
        make_runner: MakeRunner, timeline: Timeline, published: Published, stop: asyncio.Event) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])
        yield updated("someone-else")
        async for frame in until_stopped(stop):
            yield frame

    listeners = Listeners(make_runner(server), timeline)
    sub = listeners.start(ASKED)
    await published.until(lambda: timeline.state.subscriptions[sub.id].total == 1)
    record = timeline.state.subscriptions[sub.id]
    [problem] = record.problems
    assert "subscriptionId 'someone-else'" in problem and f"expected {record.subscription_id!r}" in problem
    await listeners.stop_all()


async def test_a_notification_before_the_acknowledgement_and_a_missing_one_are_flagged(
        make_runner: MakeRunner, timeline: Timeline, published: Published, stop: asyncio.Event) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield updated(message["id"])
        async for frame in until_stopped(stop):
            yield frame

    listeners = Listeners(make_runner(server), timeline, ack_deadline_s=0.01)
    sub = listeners.start(ASKED)
    await published.until(lambda: len(timeline.state.subscriptions[sub.id].problems) == 2)
    early, missing = timeline.state.subscriptions[sub.id].problems
    assert early == "notifications/resources/updated arrived before the acknowledgement"
    assert missing == "no notifications/subscriptions/acknowledged within 0.01 s"
    await listeners.stop_all()


async def test_a_drop_while_the_session_is_closed_is_not_listened_to_again(
        make_runner: MakeRunner, timeline: Timeline, published: Published) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])

    runner = make_runner(server)
    timeline.append(StatusChanged(status="closed", message="closed by the owner"))
    sub = Listeners(runner, timeline, first_backoff_s=0.001).start(ASKED)
    await published.until(lambda: any(p.startswith("not listening again")
                                      for p in timeline.state.subscriptions[sub.id].problems))
    record = timeline.state.subscriptions[sub.id]
    assert record.state == "connection_lost" and record.reconnects == 0
    assert "the session is closed (closed by the owner)" in record.problems[-1]
    assert len(runner.sent("subscriptions/listen")) == 1


async def test_ids_continue_past_the_subscriptions_the_fold_already_knows(
        make_runner: MakeRunner, timeline: Timeline, stop: asyncio.Event) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        async for frame in until_stopped(stop):
            yield frame

    runner = make_runner(server)
    before = Listeners(runner, timeline)
    assert before.start(ASKED).id == "L1"
    await before.stop_all()
    after = Listeners(runner, timeline)  # as after a restart: only the fold remembers L1
    assert after.start(ASKED).id == "L2"
    await after.stop_all()


async def test_a_stream_acknowledged_and_dropped_at_once_every_time_backs_off_further_each_time(
        make_runner: MakeRunner, timeline: Timeline, published: Published, monkeypatch: pytest.MonkeyPatch) -> None:
    # A flapping server: each listen is acknowledged and then dropped. The acknowledgement alone is no sign that
    # the stream "worked for a while": taking it for one re-listened every first_backoff_s for ever (four requests
    # and four recorded changes a second, by default), never backing off.
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield acknowledged(message["id"])

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        if delay > 0:
            waits.append(delay)
        return await real_sleep(0, *args)  # the backoff is what is asked for; the test need not wait it out

    monkeypatch.setattr("app.console.listen.asyncio.sleep", sleep)
    listeners = Listeners(make_runner(server), timeline, first_backoff_s=1.0, max_backoff_s=8.0)
    sub = listeners.start(ASKED)
    await published.until(lambda: timeline.state.subscriptions[sub.id].reconnects >= 5)
    await listeners.stop_all()
    assert waits[:5] == [1.0, 2.0, 4.0, 8.0, 8.0], waits
