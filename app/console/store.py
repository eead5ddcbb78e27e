"""Where timelines live. SQLite is the embedded default; PostgreSQL (app/console/store_pg.py) serves a team.

Writes are queued and committed in batches by one writer thread, so the event loop never waits on
the disk. Reads flush the queue first, so a reader always sees what was appended before it asked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit, urlunsplit

from app.console import entry_index, entry_index_writer, sql_rows
from app.console.entry_index import EntryHit, EntryMatches, EntryQuery
from app.console.events import EVENT_VERSION, EXCHANGE_KINDS, V2_OLD_NAMES, TimelineEvent, Wire, load
from app.settings import Settings

log = logging.getLogger("mcp_console.store")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, meta TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, exchange TEXT,
  at REAL NOT NULL, data TEXT NOT NULL, v INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS events_by_exchange ON events (session_id, exchange);
-- One row per timeline entry, for the filter (see app/console/entry_index.py): kept by append, never the truth.
-- Clustered by (session, seq0): a filter reads it newest first in one ordered scan.
CREATE TABLE IF NOT EXISTS entry_index (
  session_id TEXT NOT NULL, key TEXT NOT NULL, seq0 INTEGER NOT NULL, kind TEXT NOT NULL, host TEXT,
  facts TEXT NOT NULL, method TEXT NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL,
  findings INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (session_id, seq0), UNIQUE (session_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS links (
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, data TEXT NOT NULL
);
-- The owner-only place: the secret values of a session's target (app/console/target.py), by slot. Never read
-- into an event, a page for a link holder, the hub or an export without the owner's asking.
CREATE TABLE IF NOT EXISTS secrets (session_id TEXT PRIMARY KEY, data TEXT NOT NULL);
-- ... and the exact data of an event in which a secret value was masked when recorded (app/console/scrub.py).
CREATE TABLE IF NOT EXISTS exact_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)
);
-- The owner's workspaces (app/console/workspaces.py): a name and the sessions it shows side by side.
CREATE TABLE IF NOT EXISTS workspaces (id TEXT PRIMARY KEY, data TEXT NOT NULL, updated REAL NOT NULL);
"""


INDEX_VERSION = 1  # PRAGMA user_version once the entry index covers every stored event
CHUNK = 2000  # events read per query by whoever walks a whole session (export, restore): the most held at once


class StoredEvent(NamedTuple):
    """An event as stored: its data still JSON text (what an export writes out without building the record)."""

    seq: int
    kind: str
    at: float
    data: str  # json.dumps of the record's data (ASCII), at event version `v`
    v: int


class ImportRow(NamedTuple):
    """An event for `Store.append_rows`: its data parsed (for the columns and the entry index) and as JSON text
    (stored as it is). An import makes these straight from a session file, without a typed record per event."""

    seq: int
    kind: str
    at: float
    data: dict[str, Any]
    text: str  # JSON of `data`, at EVENT_VERSION


class Store(Protocol):
    def save_session(self, session_id: str, meta: dict[str, Any], created: float, updated: float) -> None: ...
    def delete_session(self, session_id: str) -> None: ...
    def list_sessions(self) -> list[dict[str, Any]]: ...
    # Sessions with events but no row: an import cut off by a crash (the row is written last).
    def orphans(self) -> list[str]: ...
    def append(self, event: TimelineEvent) -> None: ...
    # Consecutive events in one write (a burst of frames): one queue item, one lock, for all of them.
    def append_many(self, events: list[TimelineEvent]) -> None: ...
    def append_rows(self, session_id: str, rows: list[ImportRow]) -> None: ...
    def events(self, session_id: str, *, exchange: str | None = None, kinds: tuple[str, ...] = (),
               before_seq: int | None = None, after_seq: int | None = None,
               limit: int | None = None) -> list[TimelineEvent]: ...
    def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[StoredEvent]: ...
    def count(self, session_id: str) -> int: ...
    def stored_bytes(self, session_id: str) -> int: ...
    def entry_count(self, session_id: str) -> int: ...
    def find_entries(self, session_id: str, query: EntryQuery, *, before_seq: int | None = None,
                     limit: int = 100) -> EntryMatches: ...
    def save_link(self, link: dict[str, Any]) -> None: ...
    def save_workspace(self, workspace: dict[str, Any]) -> None: ...
    def delete_workspace(self, workspace_id: str) -> None: ...
    def workspaces(self) -> list[dict[str, Any]]: ...
    # The secret values of a session's target, in the owner-only place; {} when it has none.
    def save_secrets(self, session_id: str, values: dict[str, str]) -> None: ...
    def secrets(self, session_id: str) -> dict[str, str]: ...
    # Leave no old bytes of rewritten or deleted rows in the database's files (SQLite); nothing to do elsewhere.
    def compact(self) -> None: ...
    # The exact data (JSON text) of an event recorded with secret values masked, for the owner's eyes only.
    def save_exact(self, session_id: str, seq: int, data: str) -> None: ...
    def exact(self, session_id: str, seqs: list[int]) -> dict[int, str]: ...
    def links(self, session_id: str | None = None) -> list[dict[str, Any]]: ...
    def link_by_hash(self, token_hash: str) -> dict[str, Any] | None: ...
    def flush(self) -> None: ...
    # A store a team shares says so, so that a console process started on it without the team's Redis (one
    # forgotten export) refuses instead of acting on the team's sessions as if it were alone (app/web/app.py).
    def team_deployment(self, team: bool) -> bool: ...
    def close(self) -> None: ...


def open_store(settings: Settings) -> Store:
    """The store the settings name: PostgreSQL when database_url is set, else SQLite in data_dir."""
    if settings.database_url:
        # Imported here: a console on SQLite never loads the PostgreSQL driver.
        from app.console.store_pg import PostgresStore

        return PostgresStore(settings.database_url)
    return SqliteStore(settings.db_path)


def mask_url(url: str) -> str:
    """The URL fit for a log line or a notice: its password replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class SqliteStore:
    def __init__(self, path: Path | str, batch: int = 500, linger_s: float = 0.05) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            _private(Path(self.path))
        self._batch = batch
        self._linger = linger_s
        # SimpleQueue: the C queue, several times cheaper per put than queue.Queue (one put per event recorded).
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._urgent = threading.Event()  # a flush or stop is queued: the writer stops lingering
        self._read = self._connect()
        self._read_lock = threading.Lock()
        # Bytes stored per session, counted on append so the quota check never waits on the disk.
        self._bytes: dict[str, int] = {
            r[0]: int(r[1]) for r in self._read.execute(
                "SELECT session_id, SUM(LENGTH(data)) FROM events GROUP BY session_id").fetchall()}
        self._bytes_lock = threading.Lock()
        self.appends = 0  # queue items of events (one per append, one per append_many): tests count them
        if self._read.execute("PRAGMA user_version").fetchone()[0] < INDEX_VERSION:
            _rebuild_index(self._read)  # a database from before the entry index: built once, here
        self._writer = threading.Thread(target=self._write_loop, name="sqlite-writer", daemon=True)
        self._writer.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # A deleted or replaced row's bytes are zeroed, and a page freed by a delete too: a secret masked in
        # place, or a deleted session, leaves nothing in the file (FAST left freed pages as they were).
        conn.execute("PRAGMA secure_delete=ON")
        conn.executescript(_SCHEMA)
        columns = {r[1] for r in conn.execute("PRAGMA table_info(events)").fetchall()}
        if "v" not in columns:  # a database from version 1: its rows are v1 events, migrated on read
            conn.execute("ALTER TABLE events ADD COLUMN v INTEGER NOT NULL DEFAULT 1")
        return conn

    # -- writes (queued) -------------------------------------------------
    def append(self, event: TimelineEvent) -> None:
        # Serialized here, on the caller's thread: the row records the event as it was at this
        # moment, and the writer thread's work is mostly SQLite, which runs without the GIL. The text is
        # the event's own cached `data_json`, which the hub's message reuses.
        with self._bytes_lock:
            self._bytes[event.session_id] = self._bytes.get(event.session_id, 0) + len(event.data_json)
        self.appends += 1
        self._queue.put(("event", self._row(event)))

    def append_many(self, events: list[TimelineEvent]) -> None:
        """`append` for a burst: one queue item and one count of the bytes, so a flood of frames costs the
        event loop one put per batch (the writer's batch and transaction are the same either way)."""
        if not events:
            return
        session_id = events[0].session_id
        table = _frame_rows(events)
        if table is not None:
            # Frames (what the timeline batches): no entry of the index, so the table's rows alone, as an import's
            # chunk travels; the writer extends its executemany with them whole, without a loop over them.
            size = sum(len(row[5]) for row in table)
            item: tuple[str, Any] = ("rows", (session_id, table, []))
        else:
            rows = [self._row(event) for event in events]
            size = sum(len(r[0][5]) for r in rows)
            item = ("events", rows)
        with self._bytes_lock:
            self._bytes[session_id] = self._bytes.get(session_id, 0) + size
        self._queue.put(item)
        self.appends += 1

    def _row(self, event: TimelineEvent) -> tuple[tuple[Any, ...], Any, bool]:
        record = event.record
        if isinstance(record, Wire):  # a frame is no entry of the index, and its dict need not be built
            exchange, item = record.exchange, None
        else:
            data = event.data
            exchange, item = data.get("exchange") or data.get("key"), entry_index_writer.index_item(event)
        row = (event.session_id, event.seq, event.kind, exchange, event.at, event.data_json, EVENT_VERSION)
        return row, item, item is not None and event.kind in entry_index_writer.BEGINS

    def append_rows(self, session_id: str, rows: list[ImportRow]) -> None:
        """Many events in one queue item, written with one executemany (an import: a chunk of a file at a time).
        The rows and index items are made here, as `append` makes them, but without a record per event."""
        # The table's rows and the index's items apart: the writer extends its executemany with the rows whole
        # and loops over the items only (half of an import's events are frames, which have none).
        out = []
        items = []
        size = 0
        begins, indexed = entry_index_writer.BEGINS, entry_index.INDEXED_KINDS
        item_of = entry_index_writer.index_item_of
        for seq, kind, at, data, text in rows:
            exchange = data.get("exchange") or data.get("key")
            if exchange is not None and (type(exchange) is not str or not exchange.isascii() or "\x00" in exchange):
                exchange = bindable_exchange(exchange)
            out.append((session_id, seq, kind, exchange, at, text, EVENT_VERSION))
            if kind in indexed and (item := item_of(kind, seq, data)) is not None:
                items.append((seq, item, kind in begins))
            size += len(text)
        with self._bytes_lock:
            self._bytes[session_id] = self._bytes.get(session_id, 0) + size
        self._queue.put(("rows", (session_id, out, items)))
        self._urgent.set()  # a chunk is a batch already: lingering for more would only idle while the next is read

    def stored_bytes(self, session_id: str) -> int:
        """How many bytes of event data a session has in the store (the quota counts these)."""
        return self._bytes.get(session_id, 0)

    def save_session(self, session_id: str, meta: dict[str, Any], created: float, updated: float) -> None:
        self._queue.put(("session", (session_id, json.dumps(meta), created, updated)))

    def delete_session(self, session_id: str) -> None:
        with self._bytes_lock:
            self._bytes.pop(session_id, None)
        self._queue.put(("delete", session_id))
        self.compact()  # its rows' bytes leave the write-ahead log too

    def save_link(self, link: dict[str, Any]) -> None:
        self._queue.put(("link", (link["id"], link["session_id"], link["token_hash"], json.dumps(link))))
        self.flush()  # a revocation must hold across a restart the moment it is made

    def save_workspace(self, workspace: dict[str, Any]) -> None:
        self._queue.put(("workspace", (workspace["id"], json.dumps(workspace), time.time())))
        self.flush()

    def delete_workspace(self, workspace_id: str) -> None:
        self._queue.put(("workspace_delete", workspace_id))
        self.flush()

    def workspaces(self) -> list[dict[str, Any]]:
        self.flush()
        with self._read_lock:
            rows = self._read.execute("SELECT data FROM workspaces ORDER BY updated DESC").fetchall()
        return [json.loads(r[0]) for r in rows]

    def save_secrets(self, session_id: str, values: dict[str, str]) -> None:
        if values:
            self._queue.put(("secrets", (session_id, json.dumps(values))))

    def secrets(self, session_id: str) -> dict[str, str]:
        self.flush()
        with self._read_lock:
            row = self._read.execute("SELECT data FROM secrets WHERE session_id=?", (session_id,)).fetchone()
        return secret_values(row[0] if row is not None else None)

    def save_exact(self, session_id: str, seq: int, data: str) -> None:
        self._queue.put(("exact", (session_id, seq, data)))

    def compact(self) -> None:
        """Rows rewritten or deleted leave no old bytes behind: secure_delete zeroes them, and the write-ahead log
        (which keeps old page images) is checkpointed and truncated."""
        self.flush()
        with self._read_lock:
            self._read.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def exact(self, session_id: str, seqs: list[int]) -> dict[int, str]:
        if not seqs:
            return {}
        self.flush()
        marks = ",".join("?" * len(seqs))
        with self._read_lock:
            rows = self._read.execute(f"SELECT seq, data FROM exact_events WHERE session_id=? AND seq IN ({marks})",
                                      [session_id, *seqs]).fetchall()
        return {int(seq): data for seq, data in rows}

    def flush(self) -> None:
        if not self._writer.is_alive():  # closed: nothing is queued, and no one would answer (30 s for nothing)
            return
        done = threading.Event()
        self._queue.put(("flush", done))
        self._urgent.set()
        done.wait(timeout=30)

    def team_deployment(self, team: bool) -> bool:
        """A SQLite store is one process's: no team shares it."""
        return False

    def close(self) -> None:
        """Write what is queued and stop; a second close returns at once (a console may be shut down twice)."""
        if self._writer.is_alive():
            self.flush()
            self._queue.put(("stop", None))
            self._urgent.set()
            self._writer.join(timeout=10)
        self._read.close()

    def _gather(self) -> list[tuple[str, Any]]:
        """The next batch: wait for an item, linger for more, take what is queued (up to the batch size).

        While it lingers the writer waits on `_urgent`, not on the queue, so an event's `put` wakes no one:
        waking the writer (and its bid for the GIL) once per event competed with the event loop on every
        call. A flush or a stop sets `_urgent` and ends the wait at once.
        """
        items = [self._queue.get()]
        if items[0][0] not in ("flush", "stop"):
            self._urgent.wait(timeout=self._linger)
        self._urgent.clear()
        while len(items) < self._batch:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        if not self._queue.empty():
            self._urgent.set()  # a backlog (perhaps a flush in it): the next batch does not linger
        return items

    def _write_loop(self) -> None:
        conn = self._connect()
        index = entry_index_writer.IndexWriter(entry_index_writer.SQLITE)
        running = True
        while running:
            # One transaction for the burst of events a request makes (see _gather).
            items = self._gather()
            waiters = [arg for op, arg in items if op == "flush"]
            running = not any(op == "stop" for op, _ in items)
            try:
                _write_batch(conn, index, items)
            except Exception:  # whatever one item did, the writer must outlive it
                # A batch that fails (a row SQLite refuses) must not take the writer thread with it: every
                # later event would be lost. Roll back, then write the items one at a time, dropping only
                # the ones that fail (said in the log).
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                index.reset()  # its cache may hold rows the rollback undid
                for item in items:
                    try:
                        _write_batch(conn, index, [item])
                    except Exception:  # the one that fails is dropped, the rest stored
                        log.exception("SQLite store: dropped one write it could not store (%s)", item[0])
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        index.reset()
            finally:
                for waiter in waiters:
                    waiter.set()
        conn.close()

    # -- reads ------------------------------------------------------------
    def list_sessions(self) -> list[dict[str, Any]]:
        self.flush()
        with self._read_lock:
            rows = self._read.execute(
                "SELECT s.id, s.meta, s.created, s.updated, (SELECT COUNT(*) FROM events e "
                "WHERE e.session_id = s.id AND e.kind IN ('exchange','exchange_started','notice')) FROM sessions s "
                "ORDER BY s.updated DESC").fetchall()
        return [{"id": r[0], "meta": json.loads(r[1]), "created": r[2], "updated": r[3], "events": r[4]}
                for r in rows]

    def orphans(self) -> list[str]:
        self.flush()
        with self._read_lock:
            rows = self._read.execute("SELECT DISTINCT session_id FROM events WHERE session_id NOT IN "
                                      "(SELECT id FROM sessions)").fetchall()
        return [r[0] for r in rows]

    def events(self, session_id: str, *, exchange: str | None = None, kinds: tuple[str, ...] = (),
               before_seq: int | None = None, after_seq: int | None = None,
               limit: int | None = None) -> list[TimelineEvent]:
        self.flush()
        sql = "SELECT seq, kind, at, data, v FROM events WHERE session_id=?"
        args: list[Any] = [session_id]
        if exchange is not None:
            sql += " AND exchange=?"
            args.append(exchange)
        if kinds:
            stored = _with_v1_names(kinds)
            sql += f" AND kind IN ({','.join('?' * len(stored))})"
            args.extend(stored)
        if before_seq is not None:
            sql += " AND seq<?"
            args.append(before_seq)
        if after_seq is not None:
            sql += " AND seq>?"
            args.append(after_seq)
        sql += " ORDER BY seq DESC" if before_seq is not None else " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._read_lock:
            rows = self._read.execute(sql, args).fetchall()
        out = [TimelineEvent(session_id, r[0], load(r[1], json.loads(r[3]), r[4]), r[2]) for r in rows]
        if kinds:  # a v1 row stored under an old name may have become a kind that was not asked for
            out = [e for e in out if e.kind in kinds]
        return sorted(out, key=lambda e: e.seq)

    def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """The next `limit` events after `after_seq` as stored, in sequence order (keyset pages for an export)."""
        self.flush()
        with self._read_lock:
            rows = self._read.execute("SELECT seq, kind, at, data, v FROM events WHERE session_id=? AND seq>? "
                                      "ORDER BY seq LIMIT ?", (session_id, after_seq, limit)).fetchall()
        return [StoredEvent(*r) for r in rows]

    def links(self, session_id: str | None = None) -> list[dict[str, Any]]:
        self.flush()
        sql, args = "SELECT data FROM links", []
        if session_id is not None:
            sql, args = sql + " WHERE session_id=?", [session_id]
        with self._read_lock:
            rows = self._read.execute(sql, args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def link_by_hash(self, token_hash: str) -> dict[str, Any] | None:
        self.flush()
        with self._read_lock:
            row = self._read.execute("SELECT data FROM links WHERE token_hash=?", (token_hash,)).fetchone()
        return json.loads(row[0]) if row is not None else None

    def entry_count(self, session_id: str) -> int:
        """How many timeline entries a session has (operation rounds nest, so they do not count)."""
        self.flush()
        with self._read_lock:
            row = self._read.execute(
                "SELECT COUNT(DISTINCT COALESCE(exchange, 'n' || seq)) FROM events WHERE session_id=? AND "
                "(kind IN ('notice','operation','op_snapshot','op_started','op_round','op_answered','op_refused',"
                "'op_ended') OR (kind IN ('exchange','exchange_started','exchange_finished') "
                "AND json_extract(data,'$.op') IS NULL))",
                (session_id,)).fetchone()
        return int(row[0])

    def find_entries(self, session_id: str, query: EntryQuery, *, before_seq: int | None = None,
                     limit: int = 100) -> EntryMatches:
        """The entries of the whole session that match, newest first from `before_seq`, and how many match."""
        self.flush()
        where = "session_id=? AND kind!=?"
        args: list[Any] = [session_id, entry_index.ROUND]
        clean = entry_index_writer.SQLITE.clean  # as the index stored its text
        if query.method:
            where += " AND method=?"
            args.append(clean(query.method))
        if query.statuses:
            where += f" AND status IN ({','.join('?' * len(query.statuses))})"
            args.extend(sorted(query.statuses))
        if query.text:  # stored casefolded: instr is an exact substring test, as the filter's `in` is
            where += " AND instr(text, ?) > 0"
            args.append(clean(query.text.casefold()))
        if query.findings:
            where += " AND findings > 0"
        page_where, page_args = where, list(args)
        if before_seq is not None:
            page_where += " AND seq0<?"
            page_args.append(before_seq)
        with self._read_lock:
            rows = self._read.execute(
                f"SELECT key, seq0, kind, findings FROM entry_index WHERE {page_where} ORDER BY seq0 DESC LIMIT ?",
                [*page_args, limit]).fetchall()
            # A first page that is not full holds every match: a rare match (a scan of the whole session)
            # is not scanned for again just to count it.
            total = len(rows) if before_seq is None and len(rows) < limit else self._read.execute(
                f"SELECT COUNT(*) FROM entry_index WHERE {where}", args).fetchone()[0]
        return EntryMatches([EntryHit(r[0], int(r[1]), r[2], int(r[3])) for r in rows], int(total))

    def count(self, session_id: str) -> int:
        self.flush()
        with self._read_lock:
            row = self._read.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?",
                                     (session_id,)).fetchone()
        return int(row[0])


def bindable_exchange(value: Any) -> Any:
    """An imported event's exchange column when the file gave something other than a plain string: a value both
    stores bind, as it was, or a refusal. The writer's statement failed on what a column cannot hold, and with it
    the whole chunk of the import's events, while the import answered 200; the import now fails whole (and leaves
    nothing behind). Refused: a dict, a list, an integer past 64 bits, a string with a lone surrogate (no UTF-8
    form) or a NUL (PostgreSQL's text takes none, and a file imports alike in either store). PostgreSQL's column
    is text: a scalar goes in by its cast, as it did."""
    if type(value) is str:
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError(f"an event's exchange has a lone surrogate: {value[:40]!r}") from None
        if "\x00" in value:
            raise ValueError(f"an event's exchange holds a NUL character: {value[:40]!r}")
        return value
    if type(value) in (bool, float) or (type(value) is int and -(1 << 63) <= value < 1 << 63):
        return value
    raise ValueError(f"an event's exchange is not a string: {str(value)[:40]!r}")


def _frame_rows(events: list[TimelineEvent]) -> list[tuple[Any, ...]] | None:
    """The table's rows of a run of frames, as `SqliteStore._row` makes them; None when one is not a frame."""
    rows = []
    for event in events:
        record = event.record
        if type(record) is not Wire:
            return None
        rows.append((event.session_id, event.seq, "wire", record.exchange, event.at, event.data_json, EVENT_VERSION))
    return rows


def _write_batch(conn: sqlite3.Connection, index: entry_index_writer.IndexWriter,
                 items: list[tuple[str, Any]]) -> None:
    """One transaction: events gathered for one executemany, anything else written in its place."""
    rows: list[tuple[Any, ...]] = []
    conn.execute("BEGIN")
    for op, arg in items:
        if op in ("event", "events"):
            for row, item, begins in (arg if op == "events" else [arg]):
                rows.append(row)
                if item is not None:
                    index.add(conn, row[0], row[1], item, begins)
            continue
        if op == "rows":  # an import's chunk (`append_rows`)
            session_id, table_rows, index_items = arg
            rows.extend(table_rows)
            for seq, item, begins in index_items:
                index.add(conn, session_id, seq, item, begins)
            continue
        _write_events(conn, rows, index)
        if op == "session":
            conn.execute("INSERT OR REPLACE INTO sessions VALUES (?,?,?,?)", arg)
        elif op == "link":
            conn.execute("INSERT OR REPLACE INTO links VALUES (?,?,?,?)", arg)
        elif op == "workspace":
            conn.execute("INSERT OR REPLACE INTO workspaces VALUES (?,?,?)", arg)
        elif op == "workspace_delete":
            conn.execute("DELETE FROM workspaces WHERE id=?", (arg,))
        elif op == "secrets":
            conn.execute("INSERT OR REPLACE INTO secrets VALUES (?,?)", arg)
        elif op == "exact":
            conn.execute("INSERT OR REPLACE INTO exact_events VALUES (?,?,?)", arg)
        elif op == "delete":
            conn.execute("DELETE FROM links WHERE session_id=?", (arg,))
            conn.execute("DELETE FROM secrets WHERE session_id=?", (arg,))
            conn.execute("DELETE FROM exact_events WHERE session_id=?", (arg,))
            conn.execute("DELETE FROM events WHERE session_id=?", (arg,))
            conn.execute("DELETE FROM entry_index WHERE session_id=?", (arg,))
            index.forget(arg)
            conn.execute("DELETE FROM sessions WHERE id=?", (arg,))
    _write_events(conn, rows, index)
    conn.execute("COMMIT")


def _write_events(conn: sqlite3.Connection, rows: list[tuple[Any, ...]],
                  index: entry_index_writer.IndexWriter) -> None:
    if rows:  # in multi-row statements: one GIL hand-off per statement, not per row (see sql_rows)
        sql_rows.insert_rows(conn, "INSERT OR REPLACE INTO events (session_id, seq, kind, exchange, at, data, v)", rows)
        rows.clear()
    index.write(conn)


def _rebuild_index(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN")
    entry_index_writer.rebuild(conn, entry_index_writer.SQLITE)
    conn.execute(f"PRAGMA user_version={INDEX_VERSION}")
    conn.execute("COMMIT")


def iter_events(store: Store, session_id: str, kinds: tuple[str, ...] = (),
                chunk: int | None = None, after: int = 0) -> Iterator[list[TimelineEvent]]:
    """Every event of a session in sequence order (after `after`), a chunk at a time (each chunk a query
    after the last seq)."""
    chunk = chunk or CHUNK
    while True:
        events = store.events(session_id, kinds=kinds, after_seq=after, limit=chunk)
        if events:
            yield events
        if len(events) < chunk:
            return
        after = events[-1].seq


# Version 1 stored some kinds under other names; a read by kind must find those rows too.
_V1_NAMES = {**{k: "exchange" for k in EXCHANGE_KINDS},
             **{k: "session" for k in ("status", "lists_refreshed", "capabilities_changed", "roots_changed",
                                       "request_settings_changed")}}




def _with_v1_names(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds as asked, and the names older versions stored them under."""
    return tuple(dict.fromkeys([*kinds, *(_V1_NAMES[k] for k in kinds if k in _V1_NAMES),
                                *(V2_OLD_NAMES[k] for k in kinds if k in V2_OLD_NAMES)]))


def secret_values(text: str | None) -> dict[str, str]:
    """A stored row of secret values; anything else (no row, a row not of strings) is none."""
    try:
        values = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {k: v for k, v in values.items() if type(v) is str} if isinstance(values, dict) else {}


def _private(db: Path) -> None:
    """The data directory 0700 and the database 0600: it holds targets' headers, frames and link hashes.

    A directory that is not ours alone (another owner's, or a shared sticky one such as /tmp) keeps its
    mode: tightening it would break others. The database file is private in any case.
    """
    db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = os.stat(db.parent)
    if info.st_uid == os.getuid() and not info.st_mode & stat.S_ISVTX:
        os.chmod(db.parent, 0o700)
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if path == db or path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            os.chmod(path, 0o600)
