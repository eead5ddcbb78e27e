"""The bulk import path (issue 13 item 3): a session file stored as rows and folded only for its window.

Real parts: a SessionManager on a SQLite data directory records a session through `Timeline.append` (as
the console does), `session_stream.session_file` writes it out, and a second manager on another data
directory imports the file through `SessionFileReader.rows`, as the import route does. The reference is
the fold of every stored event of the imported session from scratch (the restore path).
"""

from __future__ import annotations

import io
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.console import session_stream, timeline
from app.console.events import (
    DeadlineExtended,
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    Log,
    Notice,
    OperationChanged,
    Progress,
    Restored,
    ServerRequestChanged,
    StatusChanged,
    Stderr,
    TimelineEvent,
    Wire,
)
from app.console.import_fold import WindowTracker
from app.console.manager import RESTORE_KINDS, SessionManager
from app.console.state import SessionState, apply, projection
from app.console.store import iter_events
from app.console.target import Target
from app.settings import Settings

WINDOW = 5


def _manager(path: Path) -> SessionManager:
    return SessionManager(Settings.from_env({}, data_dir=str(path), timeline_window=WINDOW), lambda e: None)


async def _close(manager: SessionManager) -> None:
    manager.store.close()
    await manager.http.aclose()


def _call(tl: timeline.Timeline, key: str, i: int, *, finish: bool = True, op: str | None = None) -> None:
    tl.append(ExchangeStarted(key=key, method="tools/call", name="echo", id=i, op=op))
    tl.append(Wire(direction="out", raw=json.dumps({"id": i}), frame_kind="request", exchange=key, wall=time.time()))
    tl.append(Wire(direction="in", raw=json.dumps({"id": i, "result": {}}), frame_kind="response", exchange=key,
                   http_status=200, wall=time.time()))
    if finish:
        tl.append(ExchangeFinished(key=key, status="ok", duration_ms=1.0, op=op))


def _record_mixed(manager: SessionManager) -> str:
    """A session many times its window, with every way an event touches an entry from outside it: an old call
    that finishes late (its entry comes back), operations with rounds (more rounds than the round window),
    progress, logs, findings, server requests and deadline extensions, notices (one of the store quota),
    stderr and status changes between them."""
    session = manager.create(Target(kind="http", url="http://127.0.0.1:9/mcp"))
    tl = session.timeline
    tl.append(StatusChanged(status="connected", message="", since=time.time()))
    _call(tl, "late", 1, finish=False)  # finishes after many others: evicted, then back as a new entry
    for i in range(2, 60):
        key = f"b{i}"
        _call(tl, key, i)
        tl.append(Progress(target=key, progress=i, total=100, count=1))
        tl.append(Log(target=key, level="info", data=f"log {i}"))
        if i % 7 == 0:
            tl.append(FindingRecorded(rule="R1", message="odd", exchange=key, frame_seq=tl.seq))
            tl.append(DeadlineExtended(key=key, extensions=1))
        if i % 11 == 0:
            tl.append(Notice(level="warning", message=f"notice {i}", signal="store_quota" if i == 22 else None))
            tl.append(Stderr(lines=[f"err {i}"]))
        if i % 9 == 0:  # an operation with rounds (more of them, in all, than the round window keeps)
            op = f"o{i}"
            tl.append(OperationChanged(key=f"op-{op}", op=op, method="tools/call", name="ask", status="running"))
            for r in range(6):
                _call(tl, f"{op}-r{r}", 1000 * i + r, op=op)
                tl.append(FindingRecorded(rule="R2", exchange=f"{op}-r{r}", frame_seq=tl.seq))
            tl.append(ServerRequestChanged(id=f"s{i}", key=f"{op}-r5", request_id=i, method="elicitation/create",
                                           status="awaiting"))
            tl.append(OperationChanged(key=f"op-{op}", op=op, method="tools/call", name="ask",
                                       status="complete" if i < 50 else "awaiting_input"))
        if i == 58:
            tl.append(ExchangeFinished(key="late", status="ok", duration_ms=9.0))
    _call(tl, "b60", 60, finish=False)  # in flight when exported: the import ends it as interrupted
    manager.store.save_session(session.id, session.meta(), session.created, session.last_activity)
    manager.store.flush()
    return session.id


def _file(manager: SessionManager, session_id: str) -> bytes:
    session = manager.sessions[session_id]
    return "".join(session_stream.session_file(session_id, session.meta(), session.created, manager.store,
                                               chunk=50)).encode()


def _import(manager: SessionManager, body: bytes) -> Any:
    reader = session_stream.SessionFileReader.of(io.BytesIO(body))
    meta, created = reader.open()
    return manager.imported(meta, created, reader.chunks())


def _full_fold(manager: SessionManager, session_id: str) -> dict[str, Any]:
    """What the import's state would be had it folded every event (the path before the bulk one)."""
    state = SessionState(session_id, window=WINDOW)
    for chunk in iter_events(manager.store, session_id, RESTORE_KINDS):
        for event in chunk:
            apply(state, event)
    state.seq = max(state.seq, manager.store.count(session_id))  # as a restore: the log's last event, a frame or not
    apply(state, TimelineEvent(session_id, state.seq, Restored(note="Imported from a session file: read-only.",
                                                               imported=True)))
    state.entry_count = max(manager.store.entry_count(session_id), len(state.entries))
    state.evicted = state.entry_count - len(state.entries)
    return projection(state)


def _same(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@pytest.fixture
async def managers(tmp_path: Path) -> Iterator[tuple[SessionManager, SessionManager]]:
    source, target = _manager(tmp_path / "a"), _manager(tmp_path / "b")
    yield source, target
    await _close(source)
    await _close(target)


async def test_an_import_larger_than_its_window_folds_to_the_state_of_a_full_fold(
        managers: tuple[SessionManager, SessionManager]) -> None:
    source, target = managers
    imported = _import(target, _file(source, _record_mixed(source)))
    fast, full = _same(projection(imported.state)), _same(_full_fold(target, imported.id))
    assert fast["entry_count"] > 8 * WINDOW and len(fast["entries"]) == WINDOW  # the window was outgrown
    assert any(e["key"] == "late" for e in full["entries"])  # the entry that came back is in the window
    assert len(full["rounds"]) == 4 * WINDOW and full["findings"] == {"R1": 8, "R2": 36}
    assert full["store_quota_reached"] and full["last_id"] == 54005
    for part in full:
        assert fast[part] == full[part], part


async def test_an_import_builds_no_record_for_a_frame_and_folds_only_the_window_of_entry_events(
        managers: tuple[SessionManager, SessionManager], monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = managers
    body = _file(source, _record_mixed(source))
    frames, folded = [], []
    real_from_data = Wire.from_data.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Wire, "from_data", classmethod(lambda cls, data: frames.append(1) or real_from_data(cls, data)))
    monkeypatch.setattr(timeline, "apply", lambda state, event: folded.append(event.kind) or apply(state, event))
    imported = _import(target, body)
    assert frames == []
    entry_events = [k for k in folded if k in ("exchange_started", "exchange_finished", "notice")]
    stored = target.store.events(imported.id, kinds=("exchange_started", "exchange_finished", "notice"))
    assert len(entry_events) <= 2 * WINDOW * 5 < len(stored)  # the window's entries and rounds, not the file's


async def test_an_imported_session_reads_back_every_event_and_frame_of_the_file(
        managers: tuple[SessionManager, SessionManager]) -> None:
    source, target = managers
    sid = _record_mixed(source)
    imported = _import(target, _file(source, sid))
    # (the file's session_created holds the target as exported: masked, with its defaults spelt out)
    ours = [(e.seq, e.kind, e.data) for c in iter_events(source.store, sid) for e in c if e.seq > 1]
    theirs = [(e.seq, e.kind, e.data) for c in iter_events(target.store, imported.id) for e in c if e.seq > 1]
    assert len(theirs) > 500 and theirs == ours
    assert imported.timeline.wire("b30") == source.sessions[sid].timeline.wire("b30")
    assert target.store.entry_count(imported.id) == source.store.entry_count(sid)
    rows = target.store.event_rows(imported.id, after_seq=0, limit=10_000)  # the quota counts what is stored
    assert target.store.stored_bytes(imported.id) == sum(len(r.data) for r in rows)


async def test_an_import_counts_its_entries_as_it_stores_them_without_asking_the_store(
        managers: tuple[SessionManager, SessionManager], monkeypatch: pytest.MonkeyPatch) -> None:
    source, target = managers
    body = _file(source, _record_mixed(source))
    real_count = target.store.entry_count

    def refused(session_id: str) -> int:
        raise AssertionError("the import rescans the stored events to count its entries")
    monkeypatch.setattr(target.store, "entry_count", refused)
    imported = _import(target, body)
    monkeypatch.setattr(target.store, "entry_count", real_count)
    # notices, operations and late-finishing calls counted once each, operation rounds not at all: the store's rule
    assert imported.timeline.entry_count == real_count(imported.id) > 8 * WINDOW


async def test_a_frame_with_a_key_no_record_has_is_refused_and_leaves_nothing(
        managers: tuple[SessionManager, SessionManager]) -> None:
    source, target = managers
    good = _file(source, _record_mixed(source))
    body = good.replace(b'"frame_kind": "response"', b'"frame_kind": "response", "smuggled": 1', 1)
    assert body != good
    with pytest.raises(ValueError, match="unknown keys in wire event"):
        _import(target, body)
    assert target.store.list_sessions() == []
    target.store.flush()
    with sqlite3.connect(target.settings.db_path) as db:
        assert db.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM entry_index").fetchone() == (0,)


def test_the_window_tracker_holds_a_key_from_the_event_that_last_brought_it_back() -> None:
    tracker = WindowTracker(window=2)
    events = [TimelineEvent("s", 1, ExchangeStarted(key="k")), TimelineEvent("s", 2, ExchangeStarted(key="a")),
              TimelineEvent("s", 3, ExchangeStarted(key="b")),  # k leaves the window
              TimelineEvent("s", 4, ExchangeFinished(key="k"))]  # and comes back as a new entry, as in the fold
    for e in events:
        tracker.see(e.seq, e.kind, e.data)
    assert dict(tracker.entries) == {"b": 3, "k": 4} and tracker.first_seq == 3
    assert [tracker.in_window(e) for e in events] == [False, False, True, True]
