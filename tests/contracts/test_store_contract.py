"""The Store contract: every implementation passes these (SQLite, and PostgreSQL on a real server).

Append, read by range and by entry, session metadata as a cache of the fold, a byte count per
session for the quota (also after reopening). Tests of one implementation's own promises (WAL
mode, file modes) name it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.console.entry_index import EntryQuery, statuses_for
from app.console.events import (
    EVENT_VERSION,
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    Notice,
    Stderr,
    TimelineEvent,
    Wire,
    load,
)
from app.console.live_events import OperationSnapshot
from app.console.store import ImportRow, SqliteStore, Store

# Each implementation: a factory that opens (or reopens) the same store each time it is called in one test.
Opener = Callable[[], Store]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return lambda: SqliteStore(tmp_path / "data" / "console.sqlite3")


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    from app.console.store_pg import PostgresStore

    url: str = request.getfixturevalue("pg_database")  # a fresh database per test (tests/services_pg.py)
    return lambda: PostgresStore(url)


IMPLEMENTATIONS: dict[str, Callable[[pytest.FixtureRequest, Path], Opener]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return IMPLEMENTATIONS[request.param](request, tmp_path)


@pytest.fixture
def store(opener: Opener) -> Iterator[Store]:
    s = opener()
    yield s
    s.close()


def ev(seq: int, kind: str = "exchange", session: str = "s1", key: str = "",
       exchange: str | None = None) -> TimelineEvent:
    record: Any
    if kind == "exchange":
        record = ExchangeStarted(key=key or f"x{seq}", method="tools/call")
    elif kind == "wire":
        record = Wire(exchange=exchange, raw=f"frame {seq}")
    elif kind == "notice":
        record = Notice(message=f"notice {seq}")
    else:
        record = Stderr(lines=[f"line {seq}"])
    return TimelineEvent(session_id=session, seq=seq, record=record, at=1000.0 + seq)


def seqs(events: list[TimelineEvent]) -> list[int]:
    return [e.seq for e in events]


def test_appended_events_read_back_in_sequence_order_as_typed_records(store: Store) -> None:
    for seq in (3, 1, 2):
        store.append(TimelineEvent("s1", seq, ExchangeStarted(key=f"x{seq}", method="tools/call",
                                                              name={"n": seq, "text": "héllo"}), 1000.0 + seq))
    events = store.events("s1")
    assert seqs(events) == [1, 2, 3]
    assert events[0] == TimelineEvent("s1", 1, ExchangeStarted(key="x1", method="tools/call",
                                                               name={"n": 1, "text": "héllo"}), 1001.0)


def test_events_are_kept_per_session(store: Store) -> None:
    store.append(ev(1, session="a"))
    store.append(ev(1, session="b"))
    store.append(ev(2, session="b"))
    assert seqs(store.events("a")) == [1]
    assert seqs(store.events("b")) == [1, 2]
    assert store.events("nobody") == []


def test_events_read_by_entry_find_the_exchange_and_its_frames(store: Store) -> None:
    store.append(ev(1, kind="exchange", key="x1"))
    store.append(ev(2, kind="wire", exchange="x1"))
    store.append(ev(3, kind="wire", exchange="x2"))
    store.append(ev(4, kind="notice"))
    assert seqs(store.events("s1", exchange="x1")) == [1, 2]
    assert seqs(store.events("s1", exchange="x2")) == [3]


def test_events_filter_by_kinds(store: Store) -> None:
    for seq, kind in enumerate(["exchange", "wire", "notice", "stderr", "wire"], start=1):
        store.append(ev(seq, kind=kind))
    assert seqs(store.events("s1", kinds=("wire",))) == [2, 5]
    assert seqs(store.events("s1", kinds=("exchange_started", "notice"))) == [1, 3]


def test_before_seq_with_limit_gives_the_latest_events_before_it_in_ascending_order(store: Store) -> None:
    for seq in range(1, 11):
        store.append(ev(seq))
    assert seqs(store.events("s1", before_seq=8, limit=3)) == [5, 6, 7]
    assert seqs(store.events("s1", before_seq=3)) == [1, 2]


def test_after_seq_with_limit_gives_the_next_events_after_it(store: Store) -> None:
    for seq in range(1, 11):
        store.append(ev(seq))
    assert seqs(store.events("s1", after_seq=4, limit=3)) == [5, 6, 7]
    assert seqs(store.events("s1", after_seq=8)) == [9, 10]
    assert seqs(store.events("s1", limit=2)) == [1, 2]


def test_filters_combine(store: Store) -> None:
    for seq in range(1, 11):
        store.append(ev(seq, kind="wire" if seq % 2 else "exchange"))
    assert seqs(store.events("s1", kinds=("wire",), after_seq=2, before_seq=9, limit=2)) == [5, 7]


def test_appending_the_same_sequence_number_again_replaces_the_event(store: Store) -> None:
    store.append(TimelineEvent("s1", 1, OperationSnapshot(key="op-1", op="1", status="running"), 1.0))
    store.append(TimelineEvent("s1", 1, OperationSnapshot(key="op-1", op="1", status="complete"), 1.0))
    (only,) = store.events("s1")
    assert only.data["status"] == "complete"


def test_count_is_the_highest_sequence_number(store: Store) -> None:
    assert store.count("s1") == 0
    store.append(ev(1))
    store.append(ev(5))
    assert store.count("s1") == 5


def test_entry_count_counts_entries_but_not_the_rounds_nested_in_operations(store: Store) -> None:
    store.append(TimelineEvent("s1", 1, ExchangeStarted(key="x1", method="tools/list"), 1.0))
    store.append(TimelineEvent("s1", 2, ExchangeStarted(key="x2", method="tools/call", op="1", round=1), 2.0))
    store.append(TimelineEvent("s1", 3, OperationSnapshot(key="op-1", op="1"), 3.0))
    store.append(TimelineEvent("s1", 4, OperationSnapshot(key="op-1", op="1", status="complete"), 4.0))
    store.append(ev(5, kind="notice"))
    assert store.entry_count("s1") == 3


def test_a_nul_character_from_a_target_is_kept_and_does_not_break_the_entry_count(store: Store) -> None:
    hostile = "before\u0000after \ud800"
    store.append(TimelineEvent("s1", 1, ExchangeStarted(key="x1", method="tools/call", name=hostile), 1.0))
    store.append(TimelineEvent("s1", 2, ExchangeFinished(key="x1", error=hostile), 2.0))
    store.append(TimelineEvent("s1", 3, Wire(exchange="x1", raw=hostile), 3.0))
    assert [e.data.get("name") or e.data.get("error") or e.data.get("raw") for e in store.events("s1")] == [hostile] * 3
    assert store.entry_count("s1") == 1


def test_links_are_saved_replaced_read_per_session_and_by_hash_and_deleted_with_their_session(store: Store) -> None:
    store.save_link({"id": "l1", "session_id": "s1", "token_hash": "h1", "role": "viewer"})
    store.save_link({"id": "l2", "session_id": "s2", "token_hash": "h2", "role": "operator"})
    store.save_link({"id": "l1", "session_id": "s1", "token_hash": "h1", "role": "viewer", "revoked": True})
    assert store.links("s1") == [{"id": "l1", "session_id": "s1", "token_hash": "h1", "role": "viewer",
                                  "revoked": True}]
    assert sorted(link["id"] for link in store.links()) == ["l1", "l2"]
    assert store.link_by_hash("h2") == {"id": "l2", "session_id": "s2", "token_hash": "h2", "role": "operator"}
    assert store.link_by_hash("h1") == {"id": "l1", "session_id": "s1", "token_hash": "h1", "role": "viewer",
                                        "revoked": True}
    assert store.link_by_hash("h3") is None
    store.delete_session("s1")
    assert [link["id"] for link in store.links()] == ["l2"]
    assert store.link_by_hash("h1") is None


def test_a_sessions_secret_values_are_kept_apart_replaced_and_deleted_with_their_session(store: Store) -> None:
    assert store.secrets("s1") == {}
    store.save_secrets("s1", {"header:Authorization": "Bearer t1"})
    store.save_secrets("s2", {"url": "http://h/mcp?token=q2"})
    store.save_secrets("s1", {"header:Authorization": "Bearer t2", "cwd": "/srv"})
    store.save_secrets("s3", {})  # nothing secret: nothing stored
    assert store.secrets("s1") == {"header:Authorization": "Bearer t2", "cwd": "/srv"}
    assert store.secrets("s3") == {}
    store.delete_session("s1")
    assert store.secrets("s1") == {} and store.secrets("s2") == {"url": "http://h/mcp?token=q2"}


def test_the_metadata_row_lists_sessions_newest_first_with_their_entry_counts(store: Store) -> None:
    store.save_session("old", {"target": "a"}, created=1.0, updated=10.0)
    store.save_session("new", {"target": "b"}, created=2.0, updated=20.0)
    for seq, kind in enumerate(["exchange", "wire", "wire", "notice", "stderr", "exchange"], start=1):
        store.append(ev(seq, kind=kind, session="old"))
    sessions = store.list_sessions()
    assert [s["id"] for s in sessions] == ["new", "old"]
    assert sessions[1] == {"id": "old", "meta": {"target": "a"}, "created": 1.0, "updated": 10.0, "events": 3}
    assert sessions[0]["events"] == 0


def test_saving_the_metadata_again_replaces_the_cached_row(store: Store) -> None:
    store.save_session("s1", {"v": 1}, created=1.0, updated=1.0)
    store.save_session("s1", {"v": 2}, created=1.0, updated=2.0)
    (only,) = store.list_sessions()
    assert only["meta"] == {"v": 2}


def test_delete_session_removes_the_session_and_its_events_only(store: Store) -> None:
    store.save_session("s1", {}, created=1.0, updated=1.0)
    store.save_session("s2", {}, created=1.0, updated=1.0)
    store.append(ev(1, session="s1"))
    store.append(ev(1, session="s2"))
    store.delete_session("s1")
    assert store.events("s1") == []
    assert [s["id"] for s in store.list_sessions()] == ["s2"]
    assert seqs(store.events("s2")) == [1]


def test_events_survive_closing_and_reopening_the_store(opener: Opener) -> None:
    first = opener()
    first.save_session("s1", {"a": 1}, created=1.0, updated=1.0)
    first.append(ev(1, key="x1"))
    first.close()
    second = opener()
    try:
        assert seqs(second.events("s1")) == [1]
        assert second.list_sessions()[0]["meta"] == {"a": 1}
    finally:
        second.close()


def test_the_store_counts_the_bytes_each_session_stores_also_after_reopening(opener: Opener) -> None:
    first = opener()
    assert first.stored_bytes("s1") == 0
    for seq in range(1, 6):
        first.append(TimelineEvent("s1", seq, Wire(raw="x" * 1000, exchange="x1"), float(seq)))
    first.append(ev(1, session="other"))
    counted = first.stored_bytes("s1")
    assert 5000 < counted < 7000
    assert first.stored_bytes("other") < 1000
    first.close()
    second = opener()
    try:
        assert second.stored_bytes("s1") == counted
        second.delete_session("s1")
        assert second.stored_bytes("s1") == 0
    finally:
        second.close()


# --- append_rows: an import's chunks -------------------------------------------------------------------


def _mixed(session: str) -> list[TimelineEvent]:
    return [TimelineEvent(session, 1, ExchangeStarted(key="x1", method="tools/call"), 1001.0),
            TimelineEvent(session, 2, Wire(exchange="x1", raw="frame"), 1002.0),
            TimelineEvent(session, 3, ExchangeFinished(key="x1", status="ok"), 1003.0),
            TimelineEvent(session, 4, Notice(message="a notice"), 1004.0),
            TimelineEvent(session, 5, ExchangeStarted(key="r1", method="tools/call", op="o1"), 1005.0)]


def test_rows_appended_in_bulk_read_back_as_the_same_events_appended_one_by_one(store: Store) -> None:
    for event in _mixed("one"):
        store.append(event)
    store.append_rows("bulk", [ImportRow(e.seq, e.kind, e.at, e.data, e.data_json) for e in _mixed("bulk")])
    one, bulk = store.events("one"), store.events("bulk")
    assert [(e.seq, e.kind, e.at, e.data) for e in bulk] == [(e.seq, e.kind, e.at, e.data) for e in one]
    assert seqs(store.events("bulk", exchange="x1")) == [1, 2, 3]
    assert store.entry_count("bulk") == store.entry_count("one") == 2
    assert store.count("bulk") == 5 and store.stored_bytes("bulk") == store.stored_bytes("one")


# --- event_rows: events as stored, for exports ---------------------------------------------------------


def test_event_rows_page_through_the_stored_json_of_a_session_after_a_sequence_number(store: Store) -> None:
    for seq in range(1, 8):
        store.append(ev(seq, kind="wire" if seq % 2 else "notice", exchange="x1"))
    store.append(ev(1, session="other"))
    first = store.event_rows("s1", limit=3)
    assert [r.seq for r in first] == [1, 2, 3]
    assert [r.seq for r in store.event_rows("s1", after_seq=first[-1].seq, limit=3)] == [4, 5, 6]
    assert [r.seq for r in store.event_rows("s1", after_seq=6, limit=3)] == [7]
    (row,) = store.event_rows("s1", after_seq=1, limit=1)
    assert (row.kind, row.v, row.at) == ("notice", EVENT_VERSION, 1002.0)
    assert TimelineEvent("s1", row.seq, load(row.kind, json.loads(row.data), row.v), row.at) == store.events("s1")[1]


# --- find_entries: the filter over the whole session --------------------------------------------------


def _call(store: Store, seq: int, key: str, method: str = "tools/call", name: str = "echo",
          status: str = "ok", error: str | None = None) -> int:
    """One exchange as the recording path stores it: started, a frame, finished (three sequence numbers)."""
    store.append(TimelineEvent("s1", seq, ExchangeStarted(key=key, method=method, name=name), 1.0))
    store.append(TimelineEvent("s1", seq + 1, Wire(exchange=key, raw=f'{{"needle": "{key}-frame"}}'), 1.0))
    store.append(TimelineEvent("s1", seq + 2, ExchangeFinished(key=key, status=status, error=error), 1.0))
    return seq + 3


def test_find_entries_pages_the_matches_of_the_whole_session_newest_first_with_their_total(store: Store) -> None:
    seq = 1
    for i in range(1, 31):
        seq = _call(store, seq, f"x{i}", method="tools/call" if i % 3 else "tools/list")
    query = EntryQuery(method="tools/call")
    first = store.find_entries("s1", query, limit=5)
    assert first.total == 20
    assert [h.key for h in first.hits] == ["x29", "x28", "x26", "x25", "x23"]
    more = store.find_entries("s1", query, before_seq=first.hits[-1].seq0, limit=100)
    assert [h.key for h in more.hits][:2] == ["x22", "x20"] and len(more.hits) == 15 and more.total == 20
    assert all(h.kind == "exchange" for h in more.hits)


def test_find_entries_finds_rows_appended_in_bulk_with_their_final_status_and_findings(store: Store) -> None:
    events = [*_mixed("bulk"), TimelineEvent("bulk", 6, FindingRecorded(rule="R", exchange="x1"), 1006.0)]
    store.append_rows("bulk", [ImportRow(e.seq, e.kind, e.at, e.data, e.data_json) for e in events])
    found = store.find_entries("bulk", EntryQuery(statuses=statuses_for("ok")))
    assert [(h.key, h.seq0, h.kind, h.findings) for h in found.hits] == [("x1", 1, "exchange", 1)]
    assert [h.key for h in store.find_entries("bulk", EntryQuery()).hits] == ["n4", "x1"]  # never the round


def test_find_entries_filters_by_the_final_status_and_by_text_in_the_entry_facts_but_not_frames(
        store: Store) -> None:
    seq = _call(store, 1, "x1", status="tool_error", error="Disk QUOTA exceeded")
    seq = _call(store, seq, "x2")
    store.append(TimelineEvent("s1", seq, Notice(level="error", message="Connection lost"), 1.0))
    failed = store.find_entries("s1", EntryQuery(statuses=statuses_for("error")))
    assert [h.key for h in failed.hits] == [f"n{seq}", "x1"]
    assert store.find_entries("s1", EntryQuery(statuses=statuses_for("pending"))).total == 0  # x1 finished
    assert [h.key for h in store.find_entries("s1", EntryQuery(text="quota")).hits] == ["x1"]  # any case
    assert store.find_entries("s1", EntryQuery(text="x2-frame")).total == 0  # frames are not searched
    assert store.find_entries("other", EntryQuery(text="quota")).total == 0


def test_find_entries_counts_findings_on_the_entry_that_shows_them_and_never_lists_rounds(store: Store) -> None:
    seq = _call(store, 1, "x1")
    store.append(TimelineEvent("s1", seq, FindingRecorded(rule="r", exchange="x1"), 1.0))
    store.append(TimelineEvent("s1", seq + 1, OperationSnapshot(key="op-1", op="1", method="tools/call"), 1.0))
    store.append(TimelineEvent("s1", seq + 2, ExchangeStarted(key="x9", method="tools/call", op="1", round=1), 1.0))
    store.append(TimelineEvent("s1", seq + 3, FindingRecorded(rule="r", exchange="x9"), 1.0))
    store.append(TimelineEvent("s1", seq + 4, OperationSnapshot(key="op-1", op="1", method="tools/call",
                                                                status="complete"), 1.0))
    found = store.find_entries("s1", EntryQuery(findings=True))
    assert [(h.key, h.kind, h.findings) for h in found.hits] == [("op-1", "operation", 1), ("x1", "exchange", 1)]
    everything = store.find_entries("s1", EntryQuery(method="tools/call"))
    assert [h.key for h in everything.hits] == ["op-1", "x1"]
    assert store.find_entries("s1", EntryQuery(statuses=statuses_for("ok"))).total == 2


def test_find_entries_finds_text_around_a_nul_or_a_lone_surrogate_from_a_target(store: Store) -> None:
    _call(store, 1, "x1", name="be\u0000fore \ud800after")
    _call(store, 4, "x2", name="plain")
    assert [h.key for h in store.find_entries("s1", EntryQuery(text="be\u0000fore")).hits] == ["x1"]
    assert [h.key for h in store.find_entries("s1", EntryQuery(text="after")).hits] == ["x1"]
    assert store.find_entries("s1", EntryQuery(text="plain")).total == 1  # the writer survived the batch


def test_find_entries_text_is_a_literal_substring_so_percent_and_underscore_are_no_wildcards(store: Store) -> None:
    _call(store, 1, "x1", name="100%_done")
    _call(store, 4, "x2", name="100 percent done")
    assert [h.key for h in store.find_entries("s1", EntryQuery(text="100%_d")).hits] == ["x1"]
    assert store.find_entries("s1", EntryQuery(text="1_0")).total == 0
    assert store.find_entries("s1", EntryQuery(text="%")).total == 1


def test_find_entries_sees_events_stored_before_a_reopen_and_forgets_a_deleted_session(
        opener: Opener) -> None:
    first = opener()
    _call(first, 1, "x1", name="needle-tool")
    first.close()
    second = opener()
    try:
        assert [h.key for h in second.find_entries("s1", EntryQuery(text="needle-tool")).hits] == ["x1"]
        second.delete_session("s1")
        assert second.find_entries("s1", EntryQuery()).total == 0
    finally:
        second.close()


# --- SQLite's own promises ----------------------------------------------------------------------------


def test_the_sqlite_store_creates_its_data_directory(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "a" / "b" / "db.sqlite3")
    try:
        assert (tmp_path / "a" / "b").is_dir()
    finally:
        s.close()


def test_flush_makes_queued_sqlite_writes_visible_to_another_connection(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite3")
    try:
        for seq in range(1, 101):
            store.append(ev(seq))
        store.flush()
        conn = sqlite3.connect(store.path)
        (count,) = conn.execute("SELECT COUNT(*) FROM events WHERE session_id='s1'").fetchone()
        conn.close()
    finally:
        store.close()
    assert count == 100


def test_the_sqlite_store_uses_wal_mode(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite3")
    try:
        conn = sqlite3.connect(store.path)
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        conn.close()
    finally:
        store.close()
    assert mode == "wal"


def test_the_sqlite_database_is_0600_and_its_data_directory_0700(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = SqliteStore(data / "console.sqlite3")
    try:
        store.append(ev(1))
        store.flush()
        assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
        files = sorted(p.name for p in data.iterdir())
        assert "console.sqlite3" in files
        for name in files:  # the database and its -wal and -shm files
            assert stat.S_IMODE(os.stat(data / name).st_mode) == 0o600, name
    finally:
        store.close()


def test_an_existing_database_and_directory_are_made_private_when_opened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    db = data / "console.sqlite3"
    sqlite3.connect(db).close()
    os.chmod(db, 0o644)
    SqliteStore(db).close()
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600


def test_a_shared_sticky_directory_such_as_tmp_keeps_its_mode_but_the_database_is_still_0600(
        tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    SqliteStore(shared / "console.sqlite3").close()
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
    assert stat.S_IMODE(os.stat(shared / "console.sqlite3").st_mode) == 0o600


def test_the_sqlite_store_builds_the_entry_index_of_a_database_from_before_it(tmp_path: Path) -> None:
    db = tmp_path / "console.sqlite3"
    old = SqliteStore(db)
    _call(old, 1, "x1", name="older-tool")
    old.close()
    conn = sqlite3.connect(db)  # as a database written before the index existed
    conn.execute("DELETE FROM entry_index")
    conn.execute("PRAGMA user_version=0")
    conn.commit()
    conn.close()
    store = SqliteStore(db)
    try:
        assert [h.key for h in store.find_entries("s1", EntryQuery(text="older-tool")).hits] == ["x1"]
    finally:
        store.close()


def test_a_write_sqlite_refuses_is_dropped_alone_and_the_writer_keeps_storing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite3")
    try:
        store.append(ev(1))
        # A row whose text SQLite cannot encode (a lone surrogate outside JSON) fails its whole batch.
        store._queue.put(("event", (("s1", 2, "\ud800", None, 2.0, "{}", 2), None, False)))
        store.append(ev(3))
        store.flush()
        store.append(ev(4))
        assert seqs(store.events("s1")) == [1, 3, 4]
    finally:
        store.close()


@pytest.mark.parametrize("exchange", [{"a": 1}, [1, 2], 2**70])
def test_a_chunk_with_an_exchange_the_store_cannot_hold_is_refused_whole_before_any_row_is_stored(
        store: Store, exchange: object) -> None:
    rows = [ImportRow(e.seq, e.kind, e.at, e.data, e.data_json) for e in _mixed("bulk")]
    bad = {"exchange": exchange, "direction": "in", "raw": "x"}
    rows.insert(2, ImportRow(9, "wire", 1009.0, bad, json.dumps(bad)))
    with pytest.raises(ValueError, match="exchange"):
        store.append_rows("bulk", rows)
    assert store.events("bulk") == [] and store.count("bulk") == 0 and store.stored_bytes("bulk") == 0


@pytest.mark.parametrize("exchange", [True, 1.5, 7])
def test_a_scalar_exchange_from_a_file_is_stored_as_before(store: Store, exchange: object) -> None:
    data = {"exchange": exchange, "direction": "in", "raw": "x"}
    store.append_rows("bulk", [ImportRow(1, "wire", 1001.0, data, json.dumps(data))])
    assert store.count("bulk") == 1


def test_a_store_closed_twice_returns_at_once_the_second_time(store: Store) -> None:
    # A console shut down by its owner and then again by whoever holds it (a test, an app's lifespan and a
    # signal) waited 30 s in the second close: its flush asked a writer thread that had stopped.
    store.close()
    second = threading.Thread(target=store.close, name="second-close")
    second.start()
    second.join(timeout=5)
    assert not second.is_alive(), "the second close waited for a writer that had stopped"
    store.flush()  # nothing to write and no one to ask: returns too


def test_workspaces_are_saved_replaced_listed_newest_first_and_deleted(opener: Opener) -> None:
    store = opener()
    try:
        store.save_workspace({"id": "w1", "name": "first", "servers": [{"session": "s1"}]})
        store.save_workspace({"id": "w2", "name": "second", "servers": []})
        store.save_workspace({"id": "w1", "name": "first, renamed", "servers": [{"session": "s1"}, {"session": "s2"}]})
        listed = store.workspaces()
        assert [w["id"] for w in listed] == ["w1", "w2"]
        assert listed[0]["name"] == "first, renamed" and len(listed[0]["servers"]) == 2
        store.delete_workspace("w2")
    finally:
        store.close()
    again = opener()  # what was saved outlives the process
    try:
        assert [w["name"] for w in again.workspaces()] == ["first, renamed"]
    finally:
        again.close()
