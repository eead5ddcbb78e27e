"""The bulk import path (issue 13 item 3): a session file stored as rows and folded only for its window.

Real parts: a SessionManager on a SQLite data directory records a session through `Timeline.append` (as
the console does), `session_stream.session_file` writes it out, and a second manager on another data
directory imports the file through `SessionFileReader.rows`, as the import route does. The reference is
the fold of every stored event of the imported session from scratch (the restore path).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from app.console import session_stream, timeline
from app.console.events import (
    DeadlineExtended,
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    Log,
    Notice,
    Progress,
    Restored,
    StatusChanged,
    Stderr,
    TimelineEvent,
    Wire,
)
from app.console.import_fold import WindowTracker
from app.console.live_events import OperationSnapshot, ServerRequestSnapshot
from app.console.manager import RESTORE_KINDS, SessionManager
from app.console.state import SessionState, apply, fold, projection
from app.console.store import ImportRow, iter_events
from app.console.target import Target
from app.settings import Settings
from app.web.result_shape import result_shaped
from tests.integration.conftest import JSON, create_link

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts


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
            tl.append(OperationSnapshot(key=f"op-{op}", op=op, method="tools/call", name="ask", status="running"))
            for r in range(6):
                _call(tl, f"{op}-r{r}", 1000 * i + r, op=op)
                tl.append(FindingRecorded(rule="R2", exchange=f"{op}-r{r}", frame_seq=tl.seq))
            tl.append(ServerRequestSnapshot(id=f"s{i}", key=f"{op}-r5", request_id=i, method="elicitation/create",
                                           status="awaiting"))
            tl.append(OperationSnapshot(key=f"op-{op}", op=op, method="tools/call", name="ask",
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
    assert len(frames) <= 1  # the last stored event, when a frame, is read for its number (Timeline.fold_through)
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
    body = re.sub(rb'"frame_kind": ?"response"', b'"frame_kind": "response", "smuggled": 1', good, count=1)
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


# -- A hostile session file, imported by the owner (a colleague's file, a bug report's attachment).
#
# What it may try: nest JSON deeper than the parser's recursion (the import must refuse it with 400, not fail
# with a 500 and a traceback), claim the id of a session that exists (the import always gets a new one, and the
# other session is untouched), and put markup in every string (escaped on the page).

DEEP = 100_000
HEAD = '{"format": "mcp-console-session", "version": 2, '


async def _post_import(console: Console, body: str) -> tuple[int, str]:
    response = await console.http.post("/sessions/import", content=body.encode(),
                                       headers={**JSON, "content-type": "application/json"})
    return response.status_code, response.text


@pytest.mark.parametrize("where", ["header", "event list", "event data"])
async def test_a_session_file_nested_deeper_than_the_parser_goes_is_refused_with_400(
        console: Console, where: str) -> None:
    deep = "[" * DEEP + "]" * DEEP
    body = {
        "header": HEAD + f'"session": {deep}, "events": []}}',
        "event list": HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": [' + deep + "]}",
        "event data": HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": [{"v": 2, '
                             '"session_id": "x", "seq": 1, "kind": "notice", "at": 1.0, "data": ' + deep + "}]}",
    }[where]
    status, text = await _post_import(console, body)
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/sessions.json")).status_code == 200  # the console is fine


async def test_a_file_claiming_an_existing_sessions_id_imports_beside_it_and_escapes_its_markup(
        console: Console) -> None:
    status, text = await _post_import(console, HEAD + '"session": {"id": "a", "created": 1, "meta": {}}, "events": []}')
    assert status == 200, text
    victim = json.loads(text)["id"]  # an imported session: read-only, so nothing else changes it meanwhile
    before = (await console.session(victim))["timeline"]
    script = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    body = HEAD + json.dumps({"session": {"id": victim, "created": 1, "meta": {"target": {
        "kind": "http", "url": "http://127.0.0.1:9/mcp", "headers": {}}}}})[1:-1] + ', "events": [' + json.dumps(
        {"v": 2, "session_id": victim, "seq": 1, "kind": "notice", "at": 1.0,
         "data": {"level": "error", "message": script}}) + "]}"
    status, text = await _post_import(console, body)
    assert status == 200, text
    new = json.loads(text)["id"]
    assert new != victim
    assert (await console.session(victim))["timeline"] == before
    page = await console.http.get(f"/sessions/{new}")
    assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def _events(*heads: tuple[str, str]) -> str:
    # Notices whose seq and at are spelled as given (a number as the console writes one takes the reader's fast
    # path, anything else its general path).
    return ", ".join(f'{{"v": 2, "session_id": "x", "seq": {seq}, "kind": "notice", "at": {at}, "data": '
                     f'{{"level": "info", "message": "m{i}"}}}}' for i, (seq, at) in enumerate(heads))


@pytest.mark.parametrize(("seq", "at"), [("2", "NaN"), ("2", "null"), ("2", '"1.5"'), ("2", "1" + "0" * 400),
                                         ("18446744073709551616", "1.0"), ("null", "1.0"), ("1.5", "1.0")])
async def test_an_event_whose_seq_or_time_the_store_cannot_hold_is_refused_not_dropped_with_its_chunk(
        console: Console, seq: str, at: str) -> None:
    body = HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": [' + _events(("1", "1.0"), (seq, at)) \
        + "]}"
    status, text = await _post_import(console, body)
    assert status == 400, text  # the file is refused whole: an import is never stored in part
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/sessions.json")).status_code == 200


@pytest.mark.parametrize("exchange", ['{"a": 1}', "[1]", "123456789012345678901234"])
async def test_a_frame_whose_exchange_the_store_cannot_hold_is_refused_not_dropped_with_its_chunk(
        console: Console, exchange: str) -> None:
    body = HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": [' + _events(("1", "1.0")) + \
        ', {"v": 2, "session_id": "x", "seq": 2, "kind": "wire", "at": 1.0, "data": {"direction": "in", "raw": "{}", ' \
        f'"exchange": {exchange}, "headers": null}}}}]}}'
    status, text = await _post_import(console, body)
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]


BAD_TARGETS = [
    {"kind": "http", "url": "http://127.0.0.1:9/mcp", "headers": "Authorization: x"},
    {"kind": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": 1}},
    {"kind": "http", "url": ["http://127.0.0.1:9/mcp"]},
    {"kind": "stdio", "argv": [1, 2]},
    {"kind": "stdio", "argv": None},
    {"kind": "stdio", "argv": "sh -c x", "cwd": 7},
]


@pytest.mark.parametrize("where", ["meta", "session_created"])
@pytest.mark.parametrize("target", BAD_TARGETS)
async def test_a_file_whose_target_fields_have_the_wrong_types_breaks_neither_the_home_page_nor_its_exports(
        console: Console, target: dict[str, object], where: str) -> None:
    # A target is typed by the owner in a form, so its fields were trusted as strings; a file's are anything,
    # and the home page listing every session (the one place to delete it) raised a 500 for good.
    events = [] if where == "meta" else [{"v": 2, "session_id": "x", "seq": 1, "kind": "session_created", "at": 1.0,
                                          "data": {"target": target, "capabilities": {}, "roots": [],
                                                   "read_only": False}}]
    meta = {"target": target} if where == "meta" else {}
    status, text = await _post_import(console, HEAD + json.dumps({"session": {"id": "x", "created": 1, "meta": meta},
                                                             "events": events})[1:])
    assert status == 200, text
    new = json.loads(text)["id"]
    for path in ("/", "/sessions.json", f"/sessions/{new}", f"/sessions/{new}.json", f"/sessions/{new}/export.json",
                 f"/sessions/{new}/export.har"):
        response = await console.http.get(path)
        assert response.status_code == 200, (path, response.text[:300])


WRONG_TYPES = [
    ("exchange_started", {"key": [1], "method": "tools/call"}),         # unhashable: the fold raised
    ("exchange_started", {"key": "e1", "method": "ping", "replay_of": {"a": 1}}),  # the page raised
    ("discovered", {"result": "x"}),                                     # the page and its JSON twin raised
    ("lists_refreshed", {"lists": "x"}),
    ("op_snapshot", {"key": "o1", "op": "o1", "method": "tools/call", "rounds": [1]}),
    ("sub_snapshot", {"sub": "s1", "notifications": ["x"]}),
    ("notice", {"level": "info", "message": {"nested": "markup"}}),
    ("wire", {"direction": "out", "raw": "{}", "exchange": "e1", "headers": "x"}),  # the HAR and the entry raised
    ("wire", {"direction": "out", "raw": 7, "exchange": "e1", "headers": None}),     # the entry's page raised
    # The right types, but the items the pages read by their keys without those keys: the entry's body raised.
    ("op_snapshot", {"key": "o1", "op": "o1", "method": "tools/call", "rounds": [{"key": "e7", "n": 1}]}),
    ("sub_snapshot", {"sub": "s1", "notifications": [{"method": "notifications/tools/list_changed"}]}),
]


@pytest.mark.parametrize(("kind", "data"), WRONG_TYPES,
                         ids=[f"{k}-{sorted(d)[-1]}-{i}" for i, (k, d) in enumerate(WRONG_TYPES)])
async def test_an_event_whose_value_is_not_of_its_fields_type_is_refused_with_400_and_leaves_nothing(
        console: Console, kind: str, data: dict[str, object]) -> None:
    # Keys were checked, values not: a list as a key raised a 500 in the fold, and a string as the server's
    # discover answer imported fine and then made the session's page fail for as long as it was kept.
    before = (await console.http.get("/sessions.json")).json()
    event = {"v": 2, "session_id": "x", "seq": 1, "kind": kind, "at": 1.0, "data": data}
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + json.dumps(event) + "]}")
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/sessions.json")).json() == before


@pytest.mark.parametrize("created", ["1e300", "1e400", "-1e300", '"x"', "[1]"])
async def test_a_session_created_at_a_time_no_clock_shows_is_refused_and_the_home_page_still_lists_sessions(
        console: Console, created: str) -> None:
    # A creation time of 1e300 imported, and the home page, which shows every session's, raised for good.
    status, text = await _post_import(console, HEAD + f'"session": {{"id": "x", "created": {created}, "meta": {{}}}}, '
                                 '"events": []}')
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/")).status_code == 200


@pytest.mark.parametrize("at", ["1e300", "-1e300", "1e15"])
async def test_an_event_at_a_time_no_clock_shows_is_refused_and_leaves_nothing(console: Console, at: str) -> None:
    # An entry at 1e300 imported, and the session's page, which shows each entry's time, raised for good.
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + _events(("1", at)) + "]}")
    assert status == 400, text
    assert (await console.http.get("/sessions.json")).json()["sessions"] == []


@pytest.mark.parametrize("value", [1e300, -1e300, float("nan"), float("inf")])
def test_a_time_no_clock_shows_renders_as_its_number_not_an_error(value: float) -> None:
    from app.web.render import fmt_datetime, fmt_time

    assert fmt_time(value) == fmt_datetime(value) == repr(value)  # a time field of an event's data: any float


@pytest.mark.parametrize("lists", ['"x"', "[1]", '{"tools": "x"}', '{"tools": [1, "x"]}'])
async def test_a_version_1_files_lists_of_the_wrong_shape_import_as_no_lists(console: Console, lists: str) -> None:
    # A file with no session_created event is carried forward from its metadata (a version-1 log), whose
    # lists were read as a mapping of lists: a string there made the import fail with a 500.
    meta = f'{{"lists": {lists}}}'
    body = HEAD + f'"session": {{"id": "x", "created": 1, "meta": {meta}}}, "events": []}}'
    status, text = await _post_import(console, body)
    assert status == 200, text
    new = json.loads(text)["id"]
    assert (await console.http.get(f"/sessions/{new}")).status_code == 200


async def test_an_import_cut_off_by_a_crash_leaves_no_rows_behind_after_the_restart(restarts: ConsoleRestarts) -> None:
    # The file's events go to the store a chunk at a time (its row, marked `importing`, first; the final row
    # last), so a SIGKILL half way left its events stored: they must not stay on disk for ever, nor be listed.
    console = restarts.first()
    cut, release = threading.Event(), threading.Event()

    def chunks() -> Iterator[list[ImportRow]]:
        yield [ImportRow(1, "notice", 1.0, {"level": "info", "message": "first chunk"}, "")]
        cut.set()
        release.wait(30)  # "killed" here: the next console starts while this one gets no further
        raise SystemExit  # (let go at the end of the test: the thread ends)

    def run() -> None:
        with contextlib.suppress(SystemExit):
            console.manager.imported({}, 1.0, chunks())

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    assert cut.wait(10)
    store = console.manager.store
    (half,) = _event_sessions(store)  # the only session of this console: the import half way
    assert next(r for r in store.list_sessions() if r["id"] == half)["meta"]["importing"]
    again = restarts.after_crash(console)
    try:
        assert half not in _event_sessions(again.manager.store)
        assert (await again.http.get("/sessions.json")).json()["sessions"] == []
    finally:
        release.set()
        worker.join(10)


def _event_sessions(store: Any) -> set[str]:
    store.flush()
    with store._read_lock:
        return {r[0] for r in store._read.execute("SELECT DISTINCT session_id FROM events").fetchall()}


@pytest.mark.parametrize("seqs", [(1, 1, 2), (3, 2, 1), (1, 5, 3), (0, 1), (-1, 2), (1, 2**53 + 1)],
                         ids=["a repeated seq", "decreasing", "one out of order", "zero", "negative", "past 2**53"])
async def test_a_file_whose_events_do_not_go_up_one_seq_after_another_is_refused_and_leaves_nothing(
        console: Console, seqs: tuple[int, ...]) -> None:
    # A repeated seq replaced the event before it in the store, one at 0 or below was stored and never read
    # back, and events out of order showed in the file's order but exported in the store's: each imported with
    # 200 and lost or moved events. (Past 2**53 a page's script cannot tell one seq from the next.)
    events = ", ".join(f'{{"v": 2, "session_id": "x", "seq": {seq}, "kind": "notice", "at": 1.0, "data": '
                       f'{{"level": "info", "message": "m{i}"}}}}' for i, seq in enumerate(seqs))
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + events + "]}")
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/sessions.json")).json()["sessions"] == []



def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


async def test_a_deeply_nested_discover_answer_still_exports_masked_and_shows_to_a_link_holder(
        console: Console, share_tab: Callable[..., Awaitable[httpx.AsyncClient]]) -> None:
    # The masking walked values by recursion: a server's answer nested 300 deep (well within what JSON parsing
    # takes) made the masked export, which is the default, and a link holder's JSON twin raise RecursionError.
    event = {"v": 2, "session_id": "x", "seq": 1, "kind": "discovered", "at": 1.0,
             "data": {"result": {"capabilities": {"experimental": _nested(300)}}}}
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + json.dumps(event) + "]}")
    assert status == 200, text
    new = json.loads(text)["id"]
    exported = await console.http.get(f"/sessions/{new}/export.json")
    assert exported.status_code == 200
    assert json.loads(exported.text)["secrets"] == "masked"
    tab = await share_tab(console, await create_link(console, new, "viewer"))
    assert (await tab.get(f"/sessions/{new}.json")).status_code == 200


async def test_a_file_with_bare_nan_in_an_events_data_exports_as_json_any_reader_takes(console: Console) -> None:
    # Python's reader takes NaN and Infinity, so the import stored them, and the export wrote them back: a file
    # that jq, a browser's JSON.parse and orjson all refuse. They go out as null, as the JSON twin shows them.
    event = ('{"v": 2, "session_id": "x", "seq": 1, "kind": "exchange_finished", "at": 1.0, '
             '"data": {"key": "b1", "status": "error", "error_code": [NaN, -Infinity, "NaN"]}}')
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + event + "]}")
    assert status == 200, text
    new = json.loads(text)["id"]

    def refuse(word: str) -> None:
        raise AssertionError(f"the export wrote a bare {word}")
    for secrets in ("", "?secrets=1"):
        exported = await console.http.get(f"/sessions/{new}/export.json{secrets}")
        assert exported.status_code == 200
        [data] = [e["data"] for e in json.loads(exported.text, parse_constant=refuse)["events"]
                  if e["kind"] == "exchange_finished"]
        assert data["error_code"] == [None, None, "NaN"]  # the word inside a string is kept


async def test_a_file_with_data_after_its_closing_brace_is_refused_and_leaves_nothing(console: Console) -> None:
    # Two files joined, or a download cut and appended to: what came after the object was dropped without a word.
    before = (await console.http.get("/sessions.json")).json()
    one = HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": []}'
    status, text = await _post_import(console, one + "\n" + one)
    assert status == 400, text
    assert json.loads(text)["error"] == "Cannot import: there is data after the end of the session file's object"
    assert (await console.http.get("/sessions.json")).json() == before
    status, text = await _post_import(console, one + "\n\n")
    assert status == 200, text


@pytest.mark.parametrize("key", ["\\ud800", "a\\u0000b"])
async def test_an_event_whose_key_no_store_column_can_hold_is_refused_not_dropped_with_its_chunk(
        console: Console, key: str) -> None:
    # A lone surrogate has no UTF-8 form and neither store takes a NUL: the writer's statement failed, and the
    # whole chunk (4,096 events) went with it, while the import answered 200.
    before = (await console.http.get("/sessions.json")).json()
    events = ", ".join(
        f'{{"v": 2, "session_id": "x", "seq": {seq}, "kind": "exchange_started", "at": 1.0, '
        f'"data": {{"key": "{key if seq == 2 else f"k{seq}"}", "method": "ping"}}}}' for seq in range(1, 6))
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": ['
                                 + events + "]}")
    assert status == 400, text
    assert "Cannot import" in json.loads(text)["error"]
    assert (await console.http.get("/sessions.json")).json() == before


async def test_an_imported_http_exchange_whose_frames_hold_a_lone_surrogate_exports_a_whole_har(
        console: Console) -> None:
    # The file's escape \ud800 reads as a character with no UTF-8 form: counting the body's bytes broke the HAR
    # half way through its stream. A live session's frames keep the escape as text, an imported one may not.
    def event(seq: int, kind: str, data: str) -> str:
        return f'{{"v": 2, "session_id": "x", "seq": {seq}, "kind": "{kind}", "at": 1.0, "data": {data}}}'
    ctype = '[["content-type", "application/json"]]'
    events = ", ".join([
        event(1, "exchange_started", '{"key": "b1", "method": "tools/call", "name": "echo", "id": 1}'),
        event(2, "wire", '{"direction": "out", "raw": "out \\ud800", "exchange": "b1", "headers": ' + ctype
              + ', "wall": 1.0}'),
        event(3, "wire", '{"direction": "transport", "raw": "", "exchange": "b1", "http_status": 200, "headers": '
              + ctype + ', "note": "HTTP 200 OK", "wall": 1.1}'),
        event(4, "wire", '{"direction": "in", "raw": "in \\udfff", "exchange": "b1", "wall": 1.2}'),
        event(5, "exchange_finished", '{"key": "b1", "status": "ok"}'),
    ])
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {"target": '
                                 '{"kind": "http", "url": "http://127.0.0.1:9/mcp"}}}, "events": [' + events + "]}")
    assert status == 200, text
    har = await console.http.get(f"/sessions/{json.loads(text)['id']}/export.har")
    assert har.status_code == 200
    (entry,) = json.loads(har.text)["log"]["entries"]
    assert entry["request"]["postData"]["text"] == "out \ud800"
    assert entry["response"]["content"]["text"] == "in \udfff"


async def test_transitions_of_operations_a_file_never_started_fold_into_entries_that_open_and_carry_no_typed_value(
        console: Console) -> None:
    """A file may hold an operation's transitions without its start: each still makes its entry (as the store and an
    import's window count them, so the import shows what a restart shows), the page of one that ended with an empty
    reply opens, and no entry, live or read back once older than the window, carries what was typed."""
    def event(seq: int, kind: str, data: dict[str, object]) -> dict[str, object]:
        return {"v": 3, "session_id": "x", "seq": seq, "kind": kind, "at": 1000.0 + seq, "data": data}

    events = [event(1, "op_answered", {"key": "op-a", "op": "a", "round": 1, "input": "k",
                                       "value": {"secret": "TYPED-VALUE"}}),
              event(2, "op_refused", {"key": "op-b", "op": "b", "round": 1, "input": "k",
                                      "drafts": {"f": ["TYPED-DRAFT"]}, "errors": {"f": "no"}}),
              event(3, "op_ended", {"key": "op-c", "op": "c", "status": "complete", "final": {}}),
              event(4, "op_ended", {"key": "op-d", "op": "d", "status": "error",
                                    "final": {"warnings": 3, "result": "x", "ok": 1, "error": "boom"}})]
    events += [event(seq, "notice", {"level": "info", "message": f"n{seq}"}) for seq in range(5, 260)]
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": '
                                      + json.dumps(events) + "}")
    assert status == 200, text
    sid = json.loads(text)["id"]
    for op in ("c", "d"):
        page = await console.http.get(f"/sessions/{sid}/operations/{op}")
        assert page.status_code == 200, page.text[:300]
    older = (await console.http.get(f"/sessions/{sid}/timeline", params={"before": 100000, "limit": 300},
                                    headers=JSON)).json()
    assert "TYPED-VALUE" not in json.dumps(older) and "TYPED-DRAFT" not in json.dumps(older)
    # The import's window is what a restart's full fold of the stored events makes, and counts what the store counts.
    imported = console.manager.get(sid)
    full = fold(sid, console.manager.store.events(sid))
    assert list(imported.state.entries) == list(full.entries) and imported.state.entry_count == 259
    assert console.manager.store.entry_count(sid) == 259
    assert "TYPED" not in json.dumps(projection(imported.state)["entries"])


ODD_RESULTS = [
    {"content": 5}, {"contents": 5}, {"contents": [{"blob": 5}]}, {"messages": 7}, {"completion": "x"},
    {"completion": {"values": 5}}, {"content": [{"type": "resource", "resource": {"blob": 5}}]},
    {"content": [{"type": "image", "data": 5, "mimeType": "image/png"}]},
    {"messages": [{"role": "user", "content": 3}]},
]


@pytest.mark.parametrize("result", ODD_RESULTS, ids=[json.dumps(r)[:40] for r in ODD_RESULTS])
async def test_a_final_reply_whose_result_has_another_shape_is_shown_as_sent_and_the_pages_open(
        console: Console, result: dict[str, object]) -> None:
    events = [{"v": 3, "session_id": "x", "seq": 1, "kind": "op_started", "at": 1.0,
               "data": {"key": "op-a", "op": "a", "method": "tools/call", "name": "t"}},
              {"v": 3, "session_id": "x", "seq": 2, "kind": "op_ended", "at": 2.0,
               "data": {"key": "op-a", "op": "a", "status": "complete",
                        "final": {"ok": True, "result": result, "key": "e1", "id": 1, "method": "tools/call"}}}]
    status, text = await _post_import(console, HEAD + '"session": {"id": "x", "created": 1, "meta": {}}, "events": '
                                      + json.dumps(events) + "}")
    assert status == 200, text
    sid = json.loads(text)["id"]
    for path in (f"/sessions/{sid}/operations/a", f"/sessions/{sid}"):
        page = await console.http.get(path)
        assert page.status_code == 200, (path, page.text[:300])
    shown = (await console.http.get(f"/sessions/{sid}/operations/a")).text
    # A block of an odd type or value is shown by the content macro itself (as JSON, or "not shown"); a result the
    # template cannot read at all is shown whole, as sent, and says so.
    assert ("shown as the server sent it" in shown) == (not result_shaped(result))
