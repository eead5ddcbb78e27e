"""What recording one event costs on the request path: it is serialized once, and with no tab open nothing renders."""

from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

import pytest

from app.console import events as events_module
from app.console.events import Notice, TimelineEvent
from app.console.hub import Hub
from app.console.store import SqliteStore
from app.console.timeline import Timeline


def test_recording_an_event_serializes_its_data_once_for_the_store_and_the_hub(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders: list[TimelineEvent] = []

    def render(event: TimelineEvent) -> str:
        renders.append(event)
        return "<div></div>"

    store, hub = SqliteStore(tmp_path / "console.sqlite3"), Hub(render)
    timeline = Timeline("sess", store, hub.publish, window=50)
    real_dumps = json.dumps
    dumped: list[Any] = []

    def counting(obj: Any, *args: Any, **kwargs: Any) -> str:
        dumped.append(obj)
        return real_dumps(obj, *args, **kwargs)

    class CountingEncoder:  # the events' own compact encoder (what json.dumps with those separators builds)
        def encode(self, obj: Any) -> str:
            return counting(obj, separators=(",", ":"))

    monkeypatch.setattr(json, "dumps", counting)
    monkeypatch.setattr(events_module, "_COMPACT", CountingEncoder())
    try:
        event = timeline.append(Notice(level="info", message="hello " * 50))
        assert event is not None
        # the data itself, or an envelope around it (as the hub's message was made before)
        assert sum(1 for obj in dumped
                   if obj is event.data or (isinstance(obj, dict) and obj.get("data") is event.data)) == 1
        assert renders == []  # no socket: the hub only keeps the serialized event
        monkeypatch.setattr(json, "dumps", real_dumps)
        [stored] = store.events("sess")
        assert (stored.seq, stored.kind, stored.data) == (event.seq, "notice", event.data)
        assert TimelineEvent.from_json(event.to_json()).to_dict() == event.to_dict()
    finally:
        store.close()


class _CountingQueue(queue.Queue[Any]):
    """Counts the gets that wait: each is a wake-up of the writer thread when an item arrives."""

    waits = 0

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if block:
            type(self).waits += 1
        return super().get(block, timeout)


def test_a_burst_of_events_wakes_the_sqlite_writer_once_not_per_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "Queue", _CountingQueue)
    store = SqliteStore(tmp_path / "console.sqlite3", linger_s=0.5)
    try:
        timeline = Timeline("sess", store, lambda _e: None, window=50)
        for i in range(100):
            timeline.append(Notice(level="info", message=f"n{i}"))
        store.flush()  # ends the linger at once
        assert len(store.events("sess")) == 100
        assert _CountingQueue.waits <= 4  # the idle wait, the batch, the flush's read; never one per event
    finally:
        store.close()


def test_an_event_whose_fragment_cannot_be_rendered_is_still_recorded_and_the_next_ones_reach_the_tabs(
        tmp_path: Path) -> None:
    def render(event: TimelineEvent) -> str:
        if event.record.kind == "notice" and getattr(event.record, "message", "") == "breaks":
            raise TypeError("a template met a value of another shape")
        return f"<p>{event.seq}</p>"

    store, hub = SqliteStore(tmp_path / "console.sqlite3"), Hub(render)
    timeline = Timeline("s1", store, hub.publish, window=200)
    sub, _ = hub.subscribe("s1", None, 0)
    assert timeline.append(Notice(level="info", message="breaks")) is not None
    assert timeline.append(Notice(level="info", message="fine")) is not None
    assert [e.kind for e in store.events("s1")] == ["notice", "notice"]
    assert timeline.state.entry_count == 2
    offered = []
    while not sub.queue.empty():
        offered.append(sub.queue.get_nowait())
    assert any("<p>2</p>" in str(item) for item in offered)
    store.close()
