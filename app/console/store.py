"""Where timelines live. SQLite is the embedded default; the interface lets a server database replace it.

Writes are queued and committed in batches by one writer thread, so the event loop never waits on
the disk. Reads flush the queue first, so a reader always sees what was appended before it asked.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from app.console.events import EVENT_VERSION, EXCHANGE_KINDS, TimelineEvent, load

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, meta TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, exchange TEXT,
  at REAL NOT NULL, data TEXT NOT NULL, v INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS events_by_exchange ON events (session_id, exchange);
CREATE TABLE IF NOT EXISTS links (
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, data TEXT NOT NULL
);
"""


class Store(Protocol):
    def save_session(self, session_id: str, meta: dict[str, Any], created: float, updated: float) -> None: ...
    def delete_session(self, session_id: str) -> None: ...
    def list_sessions(self) -> list[dict[str, Any]]: ...
    def append(self, event: TimelineEvent) -> None: ...
    def events(self, session_id: str, *, exchange: str | None = None, kinds: tuple[str, ...] = (),
               before_seq: int | None = None, after_seq: int | None = None,
               limit: int | None = None) -> list[TimelineEvent]: ...
    def count(self, session_id: str) -> int: ...
    def stored_bytes(self, session_id: str) -> int: ...
    def entry_count(self, session_id: str) -> int: ...
    def save_link(self, link: dict[str, Any]) -> None: ...
    def links(self, session_id: str | None = None) -> list[dict[str, Any]]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class SqliteStore:
    def __init__(self, path: Path | str, batch: int = 500, linger_s: float = 0.05) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            _private(Path(self.path))
        self._batch = batch
        self._linger = linger_s
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        # Event rows wait here; the queue gets one "events" item per batch, not one per row. A put per row woke
        # the writer (blocked in a timed get) for every frame of a flood, handing the GIL back and forth with the
        # event loop: at 10,000 frames a second that convoy was the console's largest cost per frame.
        self._rows: list[tuple[Any, ...]] = []
        self._rows_lock = threading.Lock()
        self._read = self._connect()
        self._read_lock = threading.Lock()
        # Bytes stored per session, counted on append so the quota check never waits on the disk.
        self._bytes: dict[str, int] = {
            r[0]: int(r[1]) for r in self._read.execute(
                "SELECT session_id, SUM(LENGTH(data)) FROM events GROUP BY session_id").fetchall()}
        self._bytes_lock = threading.Lock()
        self._writer = threading.Thread(target=self._write_loop, name="sqlite-writer", daemon=True)
        self._writer.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        columns = {r[1] for r in conn.execute("PRAGMA table_info(events)").fetchall()}
        if "v" not in columns:  # a database from version 1: its rows are v1 events, migrated on read
            conn.execute("ALTER TABLE events ADD COLUMN v INTEGER NOT NULL DEFAULT 1")
        return conn

    # -- writes (queued) -------------------------------------------------
    def append(self, event: TimelineEvent) -> None:
        # Serialized here, on the caller's thread: the row records the event as it was at this
        # moment, and the writer thread's work is mostly SQLite, which runs without the GIL.
        data = event.data
        text = json.dumps(data)
        row = (event.session_id, event.seq, event.kind, data.get("exchange") or data.get("key"), event.at, text,
               EVENT_VERSION)
        with self._bytes_lock:
            self._bytes[event.session_id] = self._bytes.get(event.session_id, 0) + len(text)
        with self._rows_lock:
            self._rows.append(row)
            first = len(self._rows) == 1
        if first:
            self._queue.put(("events", None))

    def stored_bytes(self, session_id: str) -> int:
        """How many bytes of event data a session has in the store (the quota counts these)."""
        return self._bytes.get(session_id, 0)

    def save_session(self, session_id: str, meta: dict[str, Any], created: float, updated: float) -> None:
        self._queue.put(("session", (session_id, json.dumps(meta), created, updated)))

    def delete_session(self, session_id: str) -> None:
        with self._bytes_lock:
            self._bytes.pop(session_id, None)
        self._queue.put(("delete", session_id))
        self.flush()

    def save_link(self, link: dict[str, Any]) -> None:
        self._queue.put(("link", (link["id"], link["session_id"], link["token_hash"], json.dumps(link))))
        self.flush()  # a revocation must hold across a restart the moment it is made

    def flush(self) -> None:
        done = threading.Event()
        self._queue.put(("flush", done))
        done.wait(timeout=30)

    def close(self) -> None:
        self.flush()
        self._queue.put(("stop", None))
        self._writer.join(timeout=10)
        self._read.close()

    def _write_loop(self) -> None:
        conn = self._connect()
        running = True
        while running:
            items = [self._queue.get()]
            # Gather a batch for a short while: one transaction for the burst of events a request
            # makes, and fewer wake-ups competing with the event loop. A flush ends the wait.
            deadline = time.monotonic() + self._linger
            while len(items) < self._batch and items[-1][0] not in ("flush", "stop"):
                try:
                    items.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            waiters: list[threading.Event] = []
            conn.execute("BEGIN")
            for op, arg in items:
                if op == "events":
                    with self._rows_lock:
                        rows, self._rows = self._rows, []
                    conn.executemany("INSERT OR REPLACE INTO events (session_id, seq, kind, exchange, at, data, v) "
                                     "VALUES (?,?,?,?,?,?,?)", rows)
                elif op == "session":
                    conn.execute("INSERT OR REPLACE INTO sessions VALUES (?,?,?,?)", arg)
                elif op == "link":
                    conn.execute("INSERT OR REPLACE INTO links VALUES (?,?,?,?)", arg)
                elif op == "delete":
                    conn.execute("DELETE FROM links WHERE session_id=?", (arg,))
                    conn.execute("DELETE FROM events WHERE session_id=?", (arg,))
                    conn.execute("DELETE FROM sessions WHERE id=?", (arg,))
                elif op == "flush":
                    waiters.append(arg)
                elif op == "stop":
                    running = False
            conn.execute("COMMIT")
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

    def links(self, session_id: str | None = None) -> list[dict[str, Any]]:
        self.flush()
        sql, args = "SELECT data FROM links", []
        if session_id is not None:
            sql, args = sql + " WHERE session_id=?", [session_id]
        with self._read_lock:
            rows = self._read.execute(sql, args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def entry_count(self, session_id: str) -> int:
        """How many timeline entries a session has (operation rounds nest, so they do not count)."""
        self.flush()
        with self._read_lock:
            row = self._read.execute(
                "SELECT COUNT(DISTINCT COALESCE(exchange, 'n' || seq)) FROM events WHERE session_id=? AND "
                "(kind IN ('notice','operation') OR (kind IN ('exchange','exchange_started','exchange_finished') "
                "AND json_extract(data,'$.op') IS NULL))",
                (session_id,)).fetchone()
        return int(row[0])

    def count(self, session_id: str) -> int:
        self.flush()
        with self._read_lock:
            row = self._read.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?",
                                     (session_id,)).fetchone()
        return int(row[0])


# Version 1 stored some kinds under other names; a read by kind must find those rows too.
_V1_NAMES = {**{k: "exchange" for k in EXCHANGE_KINDS},
             **{k: "session" for k in ("status", "lists_refreshed", "capabilities_changed", "roots_changed",
                                       "request_settings_changed")}}


def _with_v1_names(kinds: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*kinds, *(_V1_NAMES[k] for k in kinds if k in _V1_NAMES)]))


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
