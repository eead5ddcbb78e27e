"""A held request: its events are numbered at once but stored, folded and published at the flush, in sequence
order with its frames; anything else appended, any flush_all, or HOLD_S of quiet flushes them first."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.console import timeline as timeline_module
from app.console.events import (
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    Notice,
    Progress,
    TimelineEvent,
    Wire,
)
from app.console.store import SqliteStore
from app.console.timeline import Timeline, flush_all


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore(tmp_path / "console.sqlite3")
    yield s  # type: ignore[misc]
    s.close()


def _timeline(store: SqliteStore, published: list[TimelineEvent]) -> Timeline:
    return Timeline("sess", store, published.append, window=50)


def _noticed(store: SqliteStore) -> tuple[Timeline, list[TimelineEvent], asyncio.Event]:
    """A timeline whose publishing is seen: what it published, and an event set at each publish."""
    published: list[TimelineEvent] = []
    flushed = asyncio.Event()

    def publish(event: TimelineEvent) -> None:
        published.append(event)
        flushed.set()

    return Timeline("sess", store, publish, window=50), published, flushed


async def test_a_held_exchange_is_numbered_at_once_and_stored_folded_and_published_in_order_at_the_flush(
        store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)
    with timeline.hold():
        started = timeline.append(ExchangeStarted(key="c1x1", method="tools/call", name="echo", id=1))
        out = timeline.add_frame(Wire(direction="out", raw='{"id":1}', exchange="c1x1"))
        back = timeline.add_frame(Wire(direction="in", raw='{"id":1,"result":{}}', exchange="c1x1"))
        finished = timeline.append(ExchangeFinished(key="c1x1", status="ok"))
        assert [e.seq for e in (started, out, back, finished) if e is not None] == [1, 2, 3, 4]
        assert timeline.state.seq == 4
        assert "c1x1" not in timeline.entries and published == []  # not folded, not published yet
    flush_all()
    assert [e.seq for e in published] == [1, 4]  # frames never reach a tab
    assert timeline.entries["c1x1"]["status"] == "ok"
    assert [e.seq for e in store.events("sess")] == [1, 2, 3, 4]


async def test_an_event_of_another_kind_flushes_the_held_ones_before_it(store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)
    with timeline.hold():
        timeline.append(ExchangeStarted(key="c1x1", method="tools/call", id=1))
        notice = timeline.append(Notice(message="the server went away"))
    assert notice is not None and notice.seq == 2
    assert [e.kind for e in published] == ["exchange_started", "notice"]


async def test_the_outgoing_frame_flushes_what_was_held_on_the_next_loop_turn(store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)
    with timeline.hold():
        timeline.append(ExchangeStarted(key="c1x1", method="tools/call", id=1))
        timeline.add_frame(Wire(direction="out", raw="{}", exchange="c1x1"))
        assert published == []
        await asyncio.sleep(0)  # the request is on its way: the wait for the answer is when it is written
        assert [e.kind for e in published] == ["exchange_started"]
        timeline.add_frame(Wire(direction="in", raw="{}", exchange="c1x1"))
        timeline.append(ExchangeFinished(key="c1x1"))
        await asyncio.sleep(0)
        assert [e.kind for e in published] == ["exchange_started"]  # the answer's events wait for the answer


async def test_held_events_are_flushed_hold_s_after_the_request_at_the_latest(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "HOLD_S", 0.001)
    timeline, published, flushed = _noticed(store)
    with timeline.hold():
        timeline.append(ExchangeFinished(key="c1x1"))
    await asyncio.wait_for(flushed.wait(), timeout=5)
    assert [e.kind for e in published] == ["exchange_finished"]


async def test_deferred_work_runs_in_its_place_and_what_it_appends_follows_what_was_held(
        store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)
    with timeline.hold():
        timeline.append(ExchangeStarted(key="c1x1", method="tools/call", id=1))
        frame = timeline.add_frame(Wire(direction="in", raw="{}", exchange="c1x1"))
        assert frame is not None and timeline.deferring
        timeline.defer(lambda: timeline.append(FindingRecorded(rule="r", exchange="c1x1", frame_seq=frame.seq)))
        timeline.defer(lambda: 1 / 0)  # a check that breaks does not cost the events after it
        timeline.append(ExchangeFinished(key="c1x1"))
    assert timeline.deferring
    flush_all()
    assert not timeline.deferring
    assert [(e.seq, e.kind) for e in store.events("sess")] == [
        (1, "exchange_started"), (2, "wire"), (3, "exchange_finished"), (4, "finding")]
    assert [e.kind for e in published] == ["exchange_started", "exchange_finished", "finding"]


async def test_progress_on_a_held_requests_stream_is_never_held_back_and_follows_what_was_held(
        store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)
    with timeline.hold():
        timeline.append(ExchangeStarted(key="c1x1", method="tools/call", id=1))
        timeline.add_frame(Wire(direction="out", raw="{}", exchange="c1x1", frame_kind="request"))
        timeline.add_frame(Wire(direction="in", raw="{}", exchange="c1x1", frame_kind="notification"))
        timeline.append(Progress(target="c1x1", progress=1, total=2))
        assert [e.kind for e in published] == ["exchange_started", "progress"]
    assert [e.kind for e in store.events("sess")] == ["exchange_started", "wire", "wire", "progress"]


async def test_a_request_refused_before_the_wire_while_another_went_out_does_not_keep_later_held_events_waiting(
        store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two calls on one session: B is refused before the wire (a lone surrogate in its arguments cannot be
    # encoded) after A went out. B's hold saw a send (A's) and so counted itself as sent: a request "about to
    # send" was left behind, and every later held event waited for a send that never comes.
    monkeypatch.setattr(timeline_module, "HOLD_S", 0.001)
    timeline, published, flushed = _noticed(store)
    with timeline.hold():  # A
        with timeline.hold():  # B
            timeline.add_frame(Wire(direction="out", raw="{}", exchange="a"))  # A's request goes out
        timeline.add_frame(Wire(direction="in", raw="{}", exchange="a"))
    await asyncio.sleep(0)
    published.clear()
    flushed.clear()
    with timeline.hold():  # C: goes out, is answered
        timeline.add_frame(Wire(direction="out", raw="{}", exchange="c"))
        await asyncio.sleep(0)  # the wait for the answer
        timeline.add_frame(Wire(direction="in", raw="{}", exchange="c"))
        timeline.append(ExchangeFinished(key="c"))
    await asyncio.wait_for(flushed.wait(), timeout=5)
    assert [e.kind for e in published] == ["exchange_finished"]


async def test_a_publish_that_breaks_on_one_held_event_does_not_cost_the_events_after_it(
        store: SqliteStore) -> None:
    published: list[TimelineEvent] = []
    timeline = _timeline(store, published)

    def publish(event: TimelineEvent) -> None:
        if event.seq == 1:
            raise RuntimeError("a template that breaks on a hostile value")
        published.append(event)

    timeline._publish = publish  # type: ignore[method-assign]
    with timeline.hold():
        timeline.append(ExchangeStarted(key="c1x1", method="tools/call", id=1))
        timeline.add_frame(Wire(direction="in", raw="{}", exchange="c1x1"))
        timeline.append(ExchangeFinished(key="c1x1", status="ok"))
    flush_all()
    assert [e.seq for e in store.events("sess")] == [1, 2, 3]
    assert [e.seq for e in published] == [3]
    assert timeline.entries["c1x1"]["status"] == "ok"
    assert not timeline._pending
