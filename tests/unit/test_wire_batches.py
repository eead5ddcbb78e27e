"""Frames on the light path: numbered at once, stored in one write per batch (however many loop turns brought it),
spelled as JSON directly, and still every one of them, in order, before whatever event follows them."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from app.console import timeline as timeline_module
from app.console.events import Notice, TimelineEvent, Wire
from app.console.store import SqliteStore
from app.console.timeline import Timeline

HOSTILE = ['{"a":1}', "", "\ud800 lone surrogate", "é \u2028 \u202e <b>&amp;</b> \"quoted\" \\ back\nslash\t",
           "\x00\x1f control", "😀 astral"]


def test_a_frame_spells_its_json_exactly_as_the_generic_serializer_does() -> None:
    for raw in HOSTILE:
        for record in (Wire(raw=raw, exchange=raw or None, note=raw, problem=None, http_status=200, wall=1.5e9 + 0.1),
                       Wire(direction="out", raw=raw, frame_kind="request", headers=[["X-A", raw], ["b", "c"]],
                            http_status=None, wall=0.0)):
            assert record.data_text() == json.dumps(record.to_data(), separators=(",", ":"))
            event = TimelineEvent("s", 1, record)
            assert json.loads(event.data_json) == record.to_data()


def test_frames_sharing_a_wall_time_and_zero_times_of_either_sign_are_spelled_as_the_generic_serializer_does() -> None:
    walls = [1.7e9 + 0.123456, 1.7e9 + 0.123456, 0.0, -0.0, 0.0, 5e-324, 1.7e9 + 0.1234567, *range(100)]
    for wall in [*walls, *walls]:
        record = Wire(raw="x", exchange="c1", wall=float(wall))
        assert record.data_text() == json.dumps(record.to_data(), separators=(",", ":")), wall


def test_a_frame_with_a_value_it_cannot_spell_takes_the_generic_path() -> None:
    record = Wire(raw="x", wall=float("nan"))
    assert record.data_text() is None
    assert TimelineEvent("s", 1, record).data_json == json.dumps(record.to_data(), separators=(",", ":"))


async def test_frames_coming_in_over_several_loop_turns_reach_the_store_in_one_write_before_the_next_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "HOLD_S", 60.0)  # the batch is written by what follows it, not its timer
    store = SqliteStore(tmp_path / "console.sqlite3")
    try:
        timeline = Timeline("sess", store, lambda _e: None, window=50)
        appends = store.appends
        numbered = [timeline.add_frame(Wire(raw=f"frame {i}", exchange="x1")) for i in range(300)]
        await asyncio.sleep(0)
        numbered += [timeline.add_frame(Wire(raw=f"frame {i}", exchange="x1")) for i in range(300, 500)]
        await asyncio.sleep(0)
        assert [e.seq for e in numbered if e is not None] == list(range(1, 501))
        assert store.appends == appends  # two loop turns' frames wait as one batch
        notice = timeline.append(Notice(message="after the frames"))  # flushes the frames first
        assert notice is not None and notice.seq == 501
        assert store.appends == appends + 2 and timeline.frame_batches == 1  # the frames' batch, then the notice
        stored = store.events("sess")
        assert [e.seq for e in stored] == list(range(1, 502))
        assert [e.data["raw"] for e in stored if e.kind == "wire"] == [f"frame {i}" for i in range(500)]
    finally:
        store.close()


async def test_frames_coming_in_are_written_hold_s_later_and_an_outgoing_one_on_the_next_loop_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "HOLD_S", 0.001)
    store = SqliteStore(tmp_path / "console.sqlite3")
    try:
        timeline = Timeline("sess", store, lambda _e: None, window=50)
        appends = store.appends
        for i in range(10):
            timeline.add_frame(Wire(raw=f"frame {i}", exchange="x1"))
        async with asyncio.timeout(5):
            while store.appends == appends:  # the timer writes them, with nothing else appended
                await asyncio.sleep(0.001)
        assert store.appends == appends + 1 and timeline.frame_batches == 1
        monkeypatch.setattr(timeline_module, "HOLD_S", 60.0)
        timeline.add_frame(Wire(direction="out", raw="request", exchange="x2"))
        await asyncio.sleep(0)
        assert store.appends == appends + 2 and timeline.frame_batches == 2
        assert [e.data["raw"] for e in store.events("sess")] == [*(f"frame {i}" for i in range(10)), "request"]
    finally:
        store.close()


async def test_a_flush_from_a_worker_thread_leaves_the_frames_and_a_read_off_the_loop_flushes_on_the_loop_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline_module, "HOLD_S", 60.0)
    store = SqliteStore(tmp_path / "console.sqlite3")
    try:
        timeline = Timeline("sess", store, lambda _e: None, window=50)
        timeline.add_frame(Wire(raw="frame in", exchange="x1"))  # pending: HOLD_S away
        worker = threading.Thread(target=timeline.flush)  # a worker's flush, while the loop is running (blocked)
        worker.start()
        worker.join()
        assert store.appends == 0 and timeline.frame_batches == 0  # swapping the batch there raced the loop
        seqs = await timeline.read_off_loop(lambda: [e.seq for e in timeline.stored().events("sess")])
        assert seqs == [1] and timeline.frame_batches == 1  # handed over on the loop, before the thread read
    finally:
        store.close()
