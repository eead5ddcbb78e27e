"""Frames on the light path: numbered at once, stored in one write per loop turn, spelled as JSON directly, and
still every one of them, in order, before whatever event follows them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

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


def test_a_frame_with_a_value_it_cannot_spell_takes_the_generic_path() -> None:
    record = Wire(raw="x", wall=float("nan"))
    assert record.data_text() is None
    assert TimelineEvent("s", 1, record).data_json == json.dumps(record.to_data(), separators=(",", ":"))


async def test_frames_of_one_loop_turn_reach_the_store_in_one_write_before_the_next_event(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "console.sqlite3")
    try:
        timeline = Timeline("sess", store, lambda _e: None, window=50)
        appends = store.appends
        numbered = [timeline.add_frame(Wire(raw=f"frame {i}", exchange="x1")) for i in range(500)]
        assert [e.seq for e in numbered if e is not None] == list(range(1, 501))
        assert store.appends == appends  # nothing written yet: the batch waits for the loop's turn
        await asyncio.sleep(0)
        assert store.appends == appends + 1 and timeline.frame_batches == 1
        more = [timeline.add_frame(Wire(raw=f"frame {i}", exchange="x1")) for i in range(500, 510)]
        notice = timeline.append(Notice(message="after the frames"))  # flushes the frames first
        assert notice is not None and notice.seq == 511 and more[-1] is not None and more[-1].seq == 510
        stored = store.events("sess")
        assert [e.seq for e in stored] == list(range(1, 512))
        assert [e.data["raw"] for e in stored if e.kind == "wire"] == [f"frame {i}" for i in range(510)]
        assert store.appends == appends + 3  # two frame batches and the notice
    finally:
        store.close()
