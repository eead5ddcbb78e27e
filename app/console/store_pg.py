"""The PostgreSQL store: a team's consoles keep their timelines in one server database.

Same promises as SqliteStore (see app/console/store.py): appends are queued and written in batches
by one writer thread, so the event loop never waits on the network; every read flushes the queue
first, so it sees everything appended before it; bytes per session are counted on append, so the
quota check never waits on the database.

Driver: psycopg 3 with a psycopg_pool connection pool, through the pool's *sync* API. The Store
interface is synchronous (the console calls it from the event loop for cheap reads and through
asyncio.to_thread for heavy ones; SqliteStore's reads are synchronous too), so an async pool would
need a loop of its own in every caller. The pool gives the writer thread and concurrent readers
their own connections, checks a connection before lending it (a server restart or a dropped
connection costs one reconnect, not a dead store), and bounds how many connections one console uses.

Event data is stored as the JSON *text* the console serialized, not jsonb: a target's strings may
hold \\u0000, which jsonb refuses and which even `data::json ->> 'op'` cannot extract past, so a
hostile frame would break every entry count. The one key a query needs (`op`: the operation a round
belongs to) gets a column of its own, filled on append. Text also keeps LENGTH(data) equal to what
append counted, so the byte count rebuilt on reopening matches.

The whole-session filter reads the entry index (app/console/entry_index.py), one row per entry, which
the writer thread keeps in the same transaction as the events, through the IndexWriter SQLite uses too
(app/console/entry_index_writer.py, with the PostgreSQL dialect). Its text search is strpos on the
casefolded text: an exact substring, as the filter's rule is (LIKE would make `%` and `_` wildcards). It scans
the session's index rows (about 20 ms at 100,000 entries); a pg_trgm GIN index would answer a LIKE at once
but made every index write 2.5 times slower, and the writer keeps these rows on every call: not used.

The schema is versioned (MIGRATIONS); the console migrates on open under an advisory lock, so
several processes starting at once migrate once.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from psycopg import Connection, Cursor
from psycopg_pool import ConnectionPool

from app.console import entry_index, entry_index_writer
from app.console.entry_index import EntryHit, EntryMatches, EntryQuery
from app.console.entry_index_writer import POSTGRES, IndexWriter
from app.console.events import EVENT_VERSION, V2_OLD_NAMES, TimelineEvent, load
from app.console.store import ImportRow, StoredEvent, bindable_exchange, mask_url, secret_values

log = logging.getLogger(__name__)


def _entry_index(conn: Connection[Any]) -> None:
    """Version 2: the entry index (app/console/entry_index.py), built from the events already stored."""
    conn.execute("""
CREATE TABLE entry_index (
  session_id TEXT NOT NULL, key TEXT NOT NULL, seq0 BIGINT NOT NULL, kind TEXT NOT NULL, host TEXT,
  facts TEXT NOT NULL, method TEXT NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL,
  findings INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (session_id, key)
);
-- A filter reads a session's entries newest first in one ordered scan; a method filter may go straight there.
CREATE INDEX entry_index_by_seq0 ON entry_index (session_id, seq0);
CREATE INDEX entry_index_by_method ON entry_index (session_id, method);
""")
    with conn.cursor() as cur:
        entry_index_writer.rebuild(cur, POSTGRES)


# Every migration runs once, in order, in one transaction with its version row. Never edit a released one:
# add the next version. A step is SQL, or a function of the connection when it must also move data.
MIGRATIONS: list[tuple[int, str | Callable[[Connection[Any]], None]]] = [
    (1, """
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, meta TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL
);
CREATE TABLE events (
  session_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, exchange TEXT, op TEXT,
  at DOUBLE PRECISION NOT NULL, data TEXT NOT NULL, v INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_exchange ON events (session_id, exchange);
CREATE TABLE links (
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, data TEXT NOT NULL
);
"""),
    (2, _entry_index),
    # Whether a team's processes (with Redis between them) share this database: set by the first of them to start.
    (3, """
CREATE TABLE deployment (id INTEGER PRIMARY KEY CHECK (id = 1), team BOOLEAN NOT NULL, since DOUBLE PRECISION NOT NULL);
"""),
    # The owner-only place for the secret values of a session's target (see store.py's schema).
    (4, """
CREATE TABLE secrets (session_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE exact_events (session_id TEXT NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL,
                           PRIMARY KEY (session_id, seq));
"""),
    # The owner's workspaces (app/console/workspaces.py).
    (5, """
CREATE TABLE IF NOT EXISTS workspaces (id TEXT PRIMARY KEY, data TEXT NOT NULL, updated DOUBLE PRECISION NOT NULL);
"""),
]

# Any fixed number shared by every console process: it names the lock, it is not a secret.
MIGRATION_LOCK = 0x6D6370636F6E73  # "mcpcons"

WRITE_RETRIES = 3

_UPSERT = {
    "event": "INSERT INTO events (session_id, seq, kind, exchange, op, at, data, v) VALUES (%s,%s,%s,%s,%s,%s,%s,%s) "
             "ON CONFLICT (session_id, seq) DO UPDATE SET kind=EXCLUDED.kind, exchange=EXCLUDED.exchange, "
             "op=EXCLUDED.op, at=EXCLUDED.at, data=EXCLUDED.data, v=EXCLUDED.v",
    "session": "INSERT INTO sessions (id, meta, created, updated) VALUES (%s,%s,%s,%s) "
               "ON CONFLICT (id) DO UPDATE SET meta=EXCLUDED.meta, created=EXCLUDED.created, updated=EXCLUDED.updated",
    "secrets": "INSERT INTO secrets (session_id, data) VALUES (%s,%s) "
               "ON CONFLICT (session_id) DO UPDATE SET data=EXCLUDED.data",
    "exact": "INSERT INTO exact_events (session_id, seq, data) VALUES (%s,%s,%s) "
             "ON CONFLICT (session_id, seq) DO UPDATE SET data=EXCLUDED.data",
    "workspace": "INSERT INTO workspaces (id, data, updated) VALUES (%s,%s,%s) "
                 "ON CONFLICT (id) DO UPDATE SET data=EXCLUDED.data, updated=EXCLUDED.updated",
    "link": "INSERT INTO links (id, session_id, token_hash, data) VALUES (%s,%s,%s,%s) "
            "ON CONFLICT (id) DO UPDATE SET session_id=EXCLUDED.session_id, token_hash=EXCLUDED.token_hash, "
            "data=EXCLUDED.data",
}


def migrate(conn: Connection[Any]) -> list[int]:
    """Bring the schema up to the newest version; the versions this call applied (none: already there).

    One transaction under pg_advisory_xact_lock: a second process starting at the same moment waits
    for the first to commit, then finds every version recorded and applies nothing.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                     "(version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)")
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        applied: list[int] = []
        for version, sql in MIGRATIONS:
            if version in done:
                continue
            if callable(sql):
                sql(conn)
            else:
                conn.execute(sql)  # our own constant DDL, never built from input
            conn.execute("INSERT INTO schema_migrations (version, applied) VALUES (%s, %s)", (version, time.time()))
            applied.append(version)
    return applied


class PostgresStore:
    def __init__(self, url: str, batch: int = 500, linger_s: float = 0.05, pool_size: int = 4,
                 connect_timeout_s: float = 15.0) -> None:
        self.url = url
        self._batch = batch
        self._linger = linger_s
        # autocommit: a read is one statement and needs no transaction; writes and migrations open theirs.
        self._pool: ConnectionPool[Connection[Any]] = ConnectionPool(
            url, min_size=1, max_size=max(2, pool_size), kwargs={"autocommit": True},
            check=ConnectionPool.check_connection, name="mcp-console-store", open=False)
        self._pool.open(wait=True, timeout=connect_timeout_s)
        try:
            with self._pool.connection() as conn:
                applied = migrate(conn)
                rows = conn.execute("SELECT session_id, SUM(LENGTH(data)) FROM events GROUP BY session_id").fetchall()
        except BaseException:
            self._pool.close()
            raise
        if applied:
            log.info("PostgreSQL store %s: applied schema migrations %s", mask_url(url), applied)
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        # Bytes stored per session, counted on append so the quota check never waits on the database.
        self._bytes: dict[str, int] = {r[0]: int(r[1]) for r in rows}
        self._bytes_lock = threading.Lock()
        self._index = IndexWriter(POSTGRES)  # the writer thread's alone
        self._writer = threading.Thread(target=self._write_loop, name="postgres-writer", daemon=True)
        self._writer.start()

    # -- writes (queued) -------------------------------------------------
    def append(self, event: TimelineEvent) -> None:
        data = event.data
        text = event.data_json  # serialized once, now: the row is the event as it was; the hub reuses the text
        op = data.get("op")
        row = (event.session_id, event.seq, event.kind, data.get("exchange") or data.get("key"),
               None if op is None else str(op), event.at, text, EVENT_VERSION)
        with self._bytes_lock:
            self._bytes[event.session_id] = self._bytes.get(event.session_id, 0) + len(text)
        item = entry_index_writer.index_item(event)
        self._queue.put(("event", (row, item, item is not None and event.kind in entry_index_writer.BEGINS)))

    def append_many(self, events: list[TimelineEvent]) -> None:
        for event in events:  # the writer batches its queue anyway; one put per event is cheap beside PostgreSQL
            self.append(event)

    def append_rows(self, session_id: str, rows: list[ImportRow]) -> None:
        """Many events at once (an import's chunk): the rows `append` makes, without a record per event."""
        size = 0
        items: list[tuple[str, Any]] = []
        for seq, kind, at, data, text in rows:
            op = data.get("op")
            exchange = data.get("exchange") or data.get("key")
            if exchange is not None and (type(exchange) is not str or not exchange.isascii() or "\x00" in exchange):
                exchange = bindable_exchange(exchange)  # refused before any row of the chunk is queued
            row = (session_id, seq, kind, exchange, None if op is None else str(op), at, text, EVENT_VERSION)
            item = entry_index_writer.index_item_of(kind, seq, data) if kind in entry_index.INDEXED_KINDS else None
            items.append(("event", (row, item, item is not None and kind in entry_index_writer.BEGINS)))
            size += len(text)
        for queued in items:
            self._queue.put(queued)
        with self._bytes_lock:
            self._bytes[session_id] = self._bytes.get(session_id, 0) + size

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

    def save_workspace(self, workspace: dict[str, Any]) -> None:
        self._queue.put(("workspace", (workspace["id"], json.dumps(workspace), time.time())))
        self.flush()

    def delete_workspace(self, workspace_id: str) -> None:
        self._queue.put(("workspace_delete", workspace_id))
        self.flush()

    def workspaces(self) -> list[dict[str, Any]]:
        self.flush()
        return [json.loads(r[0]) for r in self._rows("SELECT data FROM workspaces ORDER BY updated DESC")]

    def save_secrets(self, session_id: str, values: dict[str, str]) -> None:
        if values:
            self._queue.put(("secrets", (session_id, json.dumps(values))))

    def secrets(self, session_id: str) -> dict[str, str]:
        rows = self._rows("SELECT data FROM secrets WHERE session_id=%s", (session_id,))
        return secret_values(rows[0][0] if rows else None)

    def save_exact(self, session_id: str, seq: int, data: str) -> None:
        self._queue.put(("exact", (session_id, seq, data)))

    def compact(self) -> None:
        """PostgreSQL's dead row versions go with its own vacuum (autovacuum): nothing to force from here."""
        self.flush()

    def exact(self, session_id: str, seqs: list[int]) -> dict[int, str]:
        if not seqs:
            return {}
        rows = self._rows("SELECT seq, data FROM exact_events WHERE session_id=%s AND seq = ANY(%s)",
                          (session_id, list(seqs)))
        return {int(seq): data for seq, data in rows}

    def flush(self) -> None:
        if not self._writer.is_alive():  # closed: nothing is queued, and no one would answer (30 s for nothing)
            return
        done = threading.Event()
        self._queue.put(("flush", done))
        done.wait(timeout=30)

    def team_deployment(self, team: bool) -> bool:
        """Whether this database is a team's, once this process has said whether it is one: a team process marks it
        (for good: to use it alone again, `DELETE FROM deployment` with the whole team stopped)."""
        with self._pool.connection() as conn:
            if team:
                conn.execute("INSERT INTO deployment (id, team, since) VALUES (1, TRUE, %s) ON CONFLICT (id) DO "
                             "UPDATE SET team = TRUE", (time.time(),))
                return True
            row = conn.execute("SELECT team FROM deployment WHERE id = 1").fetchone()
            return bool(row and row[0])

    def close(self) -> None:
        """Write what is queued and stop; a second close returns at once (a console may be shut down twice)."""
        if self._writer.is_alive():
            self.flush()
            self._queue.put(("stop", None))
            self._writer.join(timeout=10)
        self._pool.close()

    def _write_loop(self) -> None:
        running = True
        while running:
            items = [self._queue.get()]
            # Gather a burst for a short while: one transaction (and one round of pipelined statements)
            # for the events a request makes. A flush or stop ends the wait.
            deadline = time.monotonic() + self._linger
            while len(items) < self._batch and items[-1][0] not in ("flush", "stop"):
                try:
                    items.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            self._commit(items)
            for op, arg in items:
                if op == "flush":
                    arg.set()
                elif op == "stop":
                    running = False

    def _commit(self, items: list[tuple[str, Any]]) -> None:
        """Write one batch in one transaction; a lost connection is retried on a fresh one from the pool."""
        for attempt in range(1, WRITE_RETRIES + 1):
            try:
                with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
                    self._write(cur, items)
                return
            except Exception:
                self._index.reset()  # its cache may hold rows this rolled-back transaction never stored
                # The writer must survive: a dead writer would leave every later flush waiting out its timeout.
                log.exception("PostgreSQL store %s: writing a batch failed (attempt %d of %d)",
                              mask_url(self.url), attempt, WRITE_RETRIES)
                time.sleep(0.2 * attempt)

    def _write(self, cur: Cursor[Any], items: list[tuple[str, Any]]) -> None:
        """One batch: its events with their entry index rows, in the one transaction of the cursor."""
        for op, args in _runs(items):
            if op == "event":
                cur.executemany(_UPSERT["event"], [row for row, _, _ in args])
                for row, item, begins in args:
                    if item is not None:
                        self._index.add(cur, row[0], row[1], item, begins)
                self._index.write(cur)
            elif op in _UPSERT:
                cur.executemany(_UPSERT[op], args)
            elif op == "workspace_delete":
                for workspace_id in args:
                    cur.execute("DELETE FROM workspaces WHERE id=%s", (workspace_id,))
            elif op == "delete":
                for session_id in args:
                    cur.execute("DELETE FROM links WHERE session_id=%s", (session_id,))
                    cur.execute("DELETE FROM secrets WHERE session_id=%s", (session_id,))
                    cur.execute("DELETE FROM exact_events WHERE session_id=%s", (session_id,))
                    cur.execute("DELETE FROM events WHERE session_id=%s", (session_id,))
                    cur.execute("DELETE FROM entry_index WHERE session_id=%s", (session_id,))
                    self._index.forget(session_id)
                    cur.execute("DELETE FROM sessions WHERE id=%s", (session_id,))

    # -- reads ------------------------------------------------------------
    def _rows(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        self.flush()
        with self._pool.connection() as conn:
            return conn.execute(sql, args).fetchall()  # SQL built from constants only

    def list_sessions(self) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT s.id, s.meta, s.created, s.updated, (SELECT COUNT(*) FROM events e "
            "WHERE e.session_id = s.id AND e.kind IN ('exchange','exchange_started','notice')) FROM sessions s "
            "ORDER BY s.updated DESC")
        return [{"id": r[0], "meta": json.loads(r[1]), "created": r[2], "updated": r[3], "events": r[4]}
                for r in rows]

    def orphans(self) -> list[str]:
        rows = self._rows("SELECT DISTINCT session_id FROM events WHERE session_id NOT IN (SELECT id FROM sessions)")
        return [r[0] for r in rows]

    def events(self, session_id: str, *, exchange: str | None = None, kinds: tuple[str, ...] = (),
               before_seq: int | None = None, after_seq: int | None = None,
               limit: int | None = None) -> list[TimelineEvent]:
        # No v1 kind names here (SqliteStore reads those): a PostgreSQL database never held version-1 rows.
        # It may hold version-2 rows: an operation's snapshot was stored as "operation" (read as op_snapshot).
        sql = "SELECT seq, kind, at, data, v FROM events WHERE session_id=%s"
        args: list[Any] = [session_id]
        if exchange is not None:
            sql += " AND exchange=%s"
            args.append(exchange)
        if kinds:
            sql += " AND kind = ANY(%s)"
            args.append([*kinds, *(V2_OLD_NAMES[k] for k in kinds if k in V2_OLD_NAMES)])
        if before_seq is not None:
            sql += " AND seq<%s"
            args.append(before_seq)
        if after_seq is not None:
            sql += " AND seq>%s"
            args.append(after_seq)
        sql += " ORDER BY seq DESC" if before_seq is not None else " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        out = [TimelineEvent(session_id, r[0], load(r[1], json.loads(r[3]), r[4]), r[2])
               for r in self._rows(sql, args)]
        return sorted(out, key=lambda e: e.seq)

    def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """The next `limit` events after `after_seq` as stored, in sequence order (keyset pages for an export)."""
        rows = self._rows("SELECT seq, kind, at, data, v FROM events WHERE session_id=%s AND seq>%s "
                          "ORDER BY seq LIMIT %s", (session_id, after_seq, limit))
        return [StoredEvent(*r) for r in rows]

    def links(self, session_id: str | None = None) -> list[dict[str, Any]]:
        if session_id is None:
            return [json.loads(r[0]) for r in self._rows("SELECT data FROM links")]
        return [json.loads(r[0]) for r in self._rows("SELECT data FROM links WHERE session_id=%s", (session_id,))]

    def link_by_hash(self, token_hash: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT data FROM links WHERE token_hash=%s", (token_hash,))
        return json.loads(rows[0][0]) if rows else None

    def entry_count(self, session_id: str) -> int:
        """How many timeline entries a session has (operation rounds nest, so they do not count)."""
        (row,) = self._rows(
            "SELECT COUNT(DISTINCT COALESCE(exchange, 'n' || seq)) FROM events WHERE session_id=%s AND "
            "(kind IN ('notice','operation','op_snapshot','op_started','op_round','op_answered','op_refused',"
            "'op_ended') OR (kind IN ('exchange','exchange_started','exchange_finished') "
            "AND op IS NULL))", (session_id,))
        return int(row[0])

    def find_entries(self, session_id: str, query: EntryQuery, *, before_seq: int | None = None,
                     limit: int = 100) -> EntryMatches:
        """The entries of the whole session that match, newest first from `before_seq`, and how many match."""
        clean = POSTGRES.clean  # as the index stored its text
        where = "session_id=%s AND kind<>%s"
        args: list[Any] = [session_id, entry_index.ROUND]
        if query.method:
            where += " AND method=%s"
            args.append(clean(query.method))
        if query.statuses:
            where += " AND status = ANY(%s)"
            args.append(sorted(query.statuses))
        if query.text:  # stored casefolded: strpos is an exact substring test (LIKE would treat % and _ as wildcards)
            where += " AND strpos(text, %s) > 0"
            args.append(clean(query.text.casefold()))
        if query.findings:
            where += " AND findings > 0"
        self.flush()
        page_where, page_args = where, list(args)
        if before_seq is not None:
            page_where += " AND seq0<%s"
            page_args.append(before_seq)
        with self._pool.connection() as conn:  # one borrowed connection for the page and its count
            rows = conn.execute(f"SELECT key, seq0, kind, findings FROM entry_index WHERE {page_where} "
                                "ORDER BY seq0 DESC LIMIT %s", [*page_args, limit]).fetchall()
            # A first page that is not full holds every match: a rare match (a scan of the whole session)
            # is not scanned for again just to count it.
            total = len(rows) if before_seq is None and len(rows) < limit else conn.execute(
                f"SELECT COUNT(*) FROM entry_index WHERE {where}", args).fetchone()[0]  # type: ignore[index]
        return EntryMatches([EntryHit(r[0], int(r[1]), r[2], int(r[3])) for r in rows], int(total))

    def count(self, session_id: str) -> int:
        (row,) = self._rows("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=%s", (session_id,))
        return int(row[0])


def _runs(items: list[tuple[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Consecutive writes of one kind grouped, in order: each group goes to the server as one pipelined batch."""
    runs: list[tuple[str, list[Any]]] = []
    for op, arg in items:
        if op in ("flush", "stop"):
            continue
        if runs and runs[-1][0] == op:
            runs[-1][1].append(arg)
        else:
            runs.append((op, [arg]))
    return runs
