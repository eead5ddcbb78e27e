"""The entry index (`app/console/entry_index.py` says what it is for), written a batch at a time, by any store.

The writer thread folds each batch's events into their entries' rows in memory first: an exchange's
started and finished events (and its findings) usually share a batch, so each entry is read at most once
and written once per batch, with one `executemany` for the lot.

One implementation serves SQLite and PostgreSQL: what differs between them is a `Dialect` (placeholder
style, the upsert, what text the column type can hold). The writer talks to a `Database`, anything with
DB-API `execute` / `executemany` (a sqlite3 connection, a psycopg cursor), passed in per call: the
PostgreSQL store borrows a different pooled connection for each batch.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from json.encoder import JSONEncoder, encode_basestring_ascii
from typing import Any, Protocol, cast

from app.console import entry_index, sql_rows
from app.console.events import EXCHANGE_KINDS, TimelineEvent, load
from app.mcp.jsonrpc import without_lone_surrogates

IndexItem = tuple[str, str, dict[str, Any], str | None]  # key, kind, the event's facts, its operation id

BEGINS = frozenset({"exchange_started", "notice"})  # kinds whose event is the first of its entry

_COLUMNS = "session_id, key, seq0, kind, host, facts, method, status, text, findings"


class Database(Protocol):
    """The part of DB-API both drivers share that the writer uses."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...
    def executemany(self, sql: Any, params: Iterable[Sequence[Any]], /) -> Any: ...


# A target's JSON may carry a lone surrogate (\ud800): it has no UTF-8 form, and the driver's encode would fail the
# writer's whole batch. Shown as the replacement character; a query is cleaned the same way.
_encodable = without_lone_surrogates


def _encodable_no_nul(text: str) -> str:
    # PostgreSQL text cannot hold U+0000 either (SQLite can), so it is replaced there too.
    return _encodable(text).replace("\x00", "\ufffd")


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    mark: str                      # the driver's placeholder
    insert: str                    # an insert that replaces the row of the same (session_id, key)
    clean: Callable[[str], str]    # what a raw (unescaped) text column is stored as; a query's text too
    # How a batch's new rows go in: `executemany` of `insert`, or on SQLite as few multi-row statements
    # (app/console/sql_rows.py says why: one step per row there cost the writer the GIL once per row).
    insert_many: Callable[[Database, list[tuple[Any, ...]]], None]

    def sql(self, template: str) -> str:
        """`template` written with `?` placeholders, in this dialect's."""
        return template if self.mark == "?" else template.replace("?", self.mark)


_VALUES = f"({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
_SQLITE_HEAD = f"INSERT OR REPLACE INTO entry_index ({_COLUMNS})"
SQLITE = Dialect("sqlite", "?", f"INSERT OR REPLACE INTO entry_index {_VALUES}", _encodable,
                 lambda db, rows: sql_rows.insert_rows(cast(sqlite3.Connection, db), _SQLITE_HEAD, rows))
_PG_INSERT = (
    f"INSERT INTO entry_index {_VALUES.replace('?', '%s')} ON CONFLICT (session_id, key) DO UPDATE SET "
    "seq0=EXCLUDED.seq0, kind=EXCLUDED.kind, host=EXCLUDED.host, facts=EXCLUDED.facts, method=EXCLUDED.method, "
    "status=EXCLUDED.status, text=EXCLUDED.text, findings=EXCLUDED.findings")
# psycopg's executemany pipelines its rows already (and one upsert statement may not touch a row twice).
POSTGRES = Dialect("postgres", "%s", _PG_INSERT, _encodable_no_nul, lambda db, rows: db.executemany(_PG_INSERT, rows))


def index_item(event: TimelineEvent) -> IndexItem | None:
    """What an event adds to the index (made on the appending thread, folded on the writer's)."""
    return index_item_of(event.kind, event.seq, event.data)


def index_item_of(kind: str, seq: int, data: dict[str, Any]) -> IndexItem | None:
    """`index_item` from an event's parts (an import stores rows without building a record per event)."""
    if kind in EXCHANGE_KINDS:  # `entry_key`'s case written out: 200,000 calls in an import of 100k entries
        op = data.get("op")
        key, entry = str(data.get("key") or ""), entry_index.ROUND if op else "exchange"
    elif (found := entry_index.entry_key(kind, seq, data)) is not None:
        (key, entry), op = found, data.get("op")
    else:
        return None
    facts = {f: data[f] for f in entry_index.FACT_FIELDS if f in data}
    if kind == "op_started":  # an operation runs from its start; the event need not say so
        facts["status"] = "running"
    return key, entry, facts, op


def _make_facts_json() -> Callable[[dict[str, Any]], str]:
    """`json.dumps` of an entry's facts, with one C encoder made once: `json.dumps` makes one per call, which
    was most of its cost here (a call per entry written: 100,000 in an import of that many entries). The same
    encoder `dumps` makes, with the same settings; only its check for circular references is off (facts are
    parsed or recorded JSON: they have none)."""
    make: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator (typeshed does not declare it): the plain call
        return json.dumps
    encode = make(None, JSONEncoder().default, encode_basestring_ascii, None, ": ", ", ", False, False,
                            True)
    return lambda facts: "".join(encode(facts, 0))


facts_json = _make_facts_json()


@dataclass(slots=True)
class _Row:
    seq0: int
    kind: str
    host: str | None
    facts: dict[str, Any]
    findings: int
    stored: bool  # already in the table (then updated, else inserted)


class IndexWriter:
    """The index rows the writer touches: read at most once, folded in memory, written once per batch.

    Rows stay cached (a bounded number, most recent) between batches, so an exchange's finished event
    finds its started one without a read. The event that begins an entry (a start, a notice) makes its
    row without looking for one: nothing can be stored under a key before the event that makes it.
    A batch whose transaction fails must `reset` the writer: its cache would describe rows never committed.
    """

    def __init__(self, dialect: Dialect, keep: int = 4096) -> None:
        self._dialect = dialect
        self._keep = keep
        self._cache: OrderedDict[tuple[str, str], _Row | None] = OrderedDict()
        self._dirty: set[tuple[str, str]] = set()
        self._select = dialect.sql("SELECT seq0, kind, host, facts, findings FROM entry_index "
                                   "WHERE session_id=? AND key=?")
        self._update = dialect.sql("UPDATE entry_index SET facts=?, method=?, status=?, text=?, findings=? "
                                   "WHERE session_id=? AND key=?")

    def _row(self, db: Database, session_id: str, key: str, begins: bool = False) -> _Row | None:
        k = (session_id, key)
        if k in self._cache:
            self._cache.move_to_end(k)
            return self._cache[k]
        if begins:
            return None
        found = db.execute(self._select, (session_id, self._dialect.clean(key))).fetchone()
        row = None if found is None else _Row(found[0], found[1], found[2], json.loads(found[3]), found[4],
                                              stored=True)
        self._cache[k] = row
        return row

    def add(self, db: Database, session_id: str, seq: int, item: IndexItem, begins: bool) -> None:
        key, kind, facts, op = item
        row = self._row(db, session_id, key, begins)
        if kind == "finding":  # counted on the entry that shows the exchange: its own, or its operation's
            if row is not None and row.kind == entry_index.ROUND and row.host:
                key = row.host
                row = self._row(db, session_id, key)
            if row is not None:
                row.findings += 1
                self._dirty.add((session_id, key))
            return
        if row is None:
            host = f"op-{op}" if kind == entry_index.ROUND and op else None
            row = self._cache[(session_id, key)] = _Row(seq, kind, host, facts, 0, stored=False)
        else:
            row.facts = {**row.facts, **facts}
        self._dirty.add((session_id, key))

    def write(self, db: Database) -> None:
        clean = self._dialect.clean
        inserts, updates = [], []
        for k in self._dirty:
            row = self._cache[k]
            assert row is not None
            # facts is JSON (NUL escaped); the columns a query compares are raw text, so cleaned.
            shown = (facts_json(row.facts), clean(str(row.facts.get("method") or "")),
                     clean(entry_index.status_of(row.facts)), clean(entry_index.search_text(row.facts)), row.findings)
            where = (k[0], clean(k[1]))
            if row.stored:
                updates.append((*shown, *where))
            else:
                inserts.append((*where, row.seq0, row.kind, None if row.host is None else clean(row.host), *shown))
                row.stored = True
        if inserts:
            self._dialect.insert_many(db, inserts)
        if updates:
            db.executemany(self._update, updates)
        self._dirty.clear()
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """A session deleted: its cached rows go too (after `write`)."""
        for k in [k for k in self._cache if k[0] == session_id]:
            del self._cache[k]

    def reset(self) -> None:
        """Forget every cached row (a transaction rolled back): the next batch reads what was committed."""
        self._cache.clear()
        self._dirty.clear()


def rebuild(db: Database, dialect: Dialect, chunk: int = 5000) -> None:
    """Build the index from the stored events, a chunk of rows at a time (a big database never sits in memory).

    The caller holds the transaction: the index is rebuilt whole or not at all.
    """
    db.execute("DELETE FROM entry_index")
    last: tuple[str, int] = ("", -1)
    index = IndexWriter(dialect)
    page = dialect.sql("SELECT session_id, seq, kind, at, data, v FROM events WHERE (session_id, seq) > (?, ?) "
                       "ORDER BY session_id, seq LIMIT ?")
    while True:
        rows = db.execute(page, (*last, chunk)).fetchall()
        for r in rows:
            event = TimelineEvent(r[0], r[1], load(r[2], json.loads(r[4]), r[5]), r[3])
            item = index_item(event)
            if item is not None:
                index.add(db, r[0], r[1], item, event.kind in BEGINS)
        index.write(db)
        if len(rows) < chunk:
            break
        last = (rows[-1][0], rows[-1][1])
