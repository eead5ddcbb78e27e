"""The SQLite timeline store, and the versioned serialization of timeline events."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.console.events import EVENT_VERSION, TimelineEvent
from app.console.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "data" / "console.sqlite3")
    yield s
    s.close()


def ev(seq: int, kind: str = "exchange", session: str = "s1", **data: object) -> TimelineEvent:
    return TimelineEvent(session_id=session, seq=seq, kind=kind, data=dict(data), at=1000.0 + seq)


def seqs(events: list[TimelineEvent]) -> list[int]:
    return [e.seq for e in events]


def test_the_store_creates_its_data_directory(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "a" / "b" / "db.sqlite3")
    try:
        assert (tmp_path / "a" / "b").is_dir()
    finally:
        s.close()


def test_appended_events_read_back_in_sequence_order_with_their_data(store: SqliteStore) -> None:
    for seq in (3, 1, 2):
        store.append(ev(seq, key=f"x{seq}", payload={"n": seq, "text": "héllo"}))
    events = store.events("s1")
    assert seqs(events) == [1, 2, 3]
    assert events[0] == TimelineEvent("s1", 1, "exchange", {"key": "x1", "payload": {"n": 1, "text": "héllo"}}, 1001.0)


def test_events_are_kept_per_session(store: SqliteStore) -> None:
    store.append(ev(1, session="a"))
    store.append(ev(1, session="b"))
    store.append(ev(2, session="b"))
    assert seqs(store.events("a")) == [1]
    assert seqs(store.events("b")) == [1, 2]
    assert store.events("nobody") == []


def test_events_filter_by_exchange_key_or_exchange_field(store: SqliteStore) -> None:
    store.append(ev(1, kind="exchange", key="x1"))
    store.append(ev(2, kind="wire", exchange="x1"))
    store.append(ev(3, kind="wire", exchange="x2"))
    store.append(ev(4, kind="notice"))
    assert seqs(store.events("s1", exchange="x1")) == [1, 2]
    assert seqs(store.events("s1", exchange="x2")) == [3]


def test_events_filter_by_kinds(store: SqliteStore) -> None:
    for seq, kind in enumerate(["exchange", "wire", "notice", "stderr", "wire"], start=1):
        store.append(ev(seq, kind=kind))
    assert seqs(store.events("s1", kinds=("wire",))) == [2, 5]
    assert seqs(store.events("s1", kinds=("exchange", "notice"))) == [1, 3]


def test_before_seq_with_limit_gives_the_latest_events_before_it_in_ascending_order(store: SqliteStore) -> None:
    for seq in range(1, 11):
        store.append(ev(seq))
    assert seqs(store.events("s1", before_seq=8, limit=3)) == [5, 6, 7]
    assert seqs(store.events("s1", before_seq=3)) == [1, 2]


def test_after_seq_with_limit_gives_the_next_events_after_it(store: SqliteStore) -> None:
    for seq in range(1, 11):
        store.append(ev(seq))
    assert seqs(store.events("s1", after_seq=4, limit=3)) == [5, 6, 7]
    assert seqs(store.events("s1", after_seq=8)) == [9, 10]
    assert seqs(store.events("s1", limit=2)) == [1, 2]


def test_filters_combine(store: SqliteStore) -> None:
    for seq in range(1, 11):
        store.append(ev(seq, kind="wire" if seq % 2 else "exchange"))
    assert seqs(store.events("s1", kinds=("wire",), after_seq=2, before_seq=9, limit=2)) == [5, 7]


def test_appending_the_same_sequence_number_again_replaces_the_event(store: SqliteStore) -> None:
    store.append(ev(1, key="x1", state="pending"))
    store.append(ev(1, key="x1", state="done"))
    (only,) = store.events("s1")
    assert only.data["state"] == "done"


def test_count_is_the_highest_sequence_number(store: SqliteStore) -> None:
    assert store.count("s1") == 0
    store.append(ev(1))
    store.append(ev(5))
    assert store.count("s1") == 5


def test_list_sessions_counts_exchange_and_notice_entries_newest_first(store: SqliteStore) -> None:
    store.save_session("old", {"target": "a"}, created=1.0, updated=10.0)
    store.save_session("new", {"target": "b"}, created=2.0, updated=20.0)
    for seq, kind in enumerate(["exchange", "wire", "wire", "notice", "stderr", "exchange"], start=1):
        store.append(ev(seq, kind=kind, session="old"))
    sessions = store.list_sessions()
    assert [s["id"] for s in sessions] == ["new", "old"]
    assert sessions[1] == {"id": "old", "meta": {"target": "a"}, "created": 1.0, "updated": 10.0, "events": 3}
    assert sessions[0]["events"] == 0


def test_saving_a_session_again_updates_it(store: SqliteStore) -> None:
    store.save_session("s1", {"v": 1}, created=1.0, updated=1.0)
    store.save_session("s1", {"v": 2}, created=1.0, updated=2.0)
    (only,) = store.list_sessions()
    assert only["meta"] == {"v": 2}


def test_delete_session_removes_the_session_and_its_events_only(store: SqliteStore) -> None:
    store.save_session("s1", {}, created=1.0, updated=1.0)
    store.save_session("s2", {}, created=1.0, updated=1.0)
    store.append(ev(1, session="s1"))
    store.append(ev(1, session="s2"))
    store.delete_session("s1")
    assert store.events("s1") == []
    assert [s["id"] for s in store.list_sessions()] == ["s2"]
    assert seqs(store.events("s2")) == [1]


def test_flush_makes_queued_writes_visible_to_another_connection(store: SqliteStore) -> None:
    store.save_session("s1", {}, created=1.0, updated=1.0)
    for seq in range(1, 101):
        store.append(ev(seq))
    store.flush()
    conn = sqlite3.connect(store.path)
    try:
        (count,) = conn.execute("SELECT COUNT(*) FROM events WHERE session_id='s1'").fetchone()
    finally:
        conn.close()
    assert count == 100


def test_events_survive_closing_and_reopening_the_store(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    first = SqliteStore(path)
    first.save_session("s1", {"a": 1}, created=1.0, updated=1.0)
    first.append(ev(1, key="x1"))
    first.close()
    second = SqliteStore(path)
    try:
        assert seqs(second.events("s1")) == [1]
        assert second.list_sessions()[0]["meta"] == {"a": 1}
    finally:
        second.close()


def test_the_store_uses_wal_mode(store: SqliteStore) -> None:
    conn = sqlite3.connect(store.path)
    try:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    finally:
        conn.close()
    assert mode == "wal"


def test_timeline_event_round_trips_through_to_dict_and_from_dict() -> None:
    event = TimelineEvent("s1", 4, "exchange", {"key": "x1", "nested": {"list": [1, None, "é"]}}, at=12.5)
    raw = event.to_dict()
    assert raw == {"v": EVENT_VERSION, "session_id": "s1", "seq": 4, "kind": "exchange", "at": 12.5,
                   "data": {"key": "x1", "nested": {"list": [1, None, "é"]}}}
    assert TimelineEvent.from_dict(raw) == event
    assert raw["v"] == EVENT_VERSION  # from_dict does not consume the caller's dict


def test_timeline_event_from_dict_rejects_unknown_keys() -> None:
    raw = {**ev(1).to_dict(), "extra": True}
    with pytest.raises(ValueError, match=r"unknown keys.*extra"):
        TimelineEvent.from_dict(raw)


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_timeline_event_from_dict_rejects_unknown_versions(version: object) -> None:
    raw = {**ev(1).to_dict(), "v": version}
    with pytest.raises(ValueError, match="version"):
        TimelineEvent.from_dict(raw)
