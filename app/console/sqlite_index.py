"""The SQLite store's entry index (`app/console/entry_index.py` says what it is for), written a batch at a time.

The writer thread folds each batch's events into their entries' rows in memory first: an exchange's
started and finished events (and its findings) usually share a batch, so each entry is read at most once
and written once per batch, with one `executemany` for the lot.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from app.console import entry_index
from app.console.events import TimelineEvent, load

IndexItem = tuple[str, str, dict[str, Any], str | None]  # key, kind, the event's facts, its operation id
INDEX_VERSION = 1  # PRAGMA user_version once the entry index covers every stored event


BEGINS = frozenset({"exchange_started", "notice"})  # kinds whose event is the first of its entry


def index_item(event: TimelineEvent) -> IndexItem | None:
    """What an event adds to the index (made on the appending thread, folded on the writer's)."""
    return index_item_of(event.kind, event.seq, event.data)


def index_item_of(kind: str, seq: int, data: dict[str, Any]) -> IndexItem | None:
    """`index_item` from an event's parts (an import stores rows without building a record per event)."""
    found = entry_index.entry_key(kind, seq, data)
    if found is None:
        return None
    return found[0], found[1], {f: data[f] for f in entry_index.FACT_FIELDS if f in data}, data.get("op")


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
    """

    def __init__(self, conn: sqlite3.Connection, keep: int = 4096) -> None:
        self._conn = conn
        self._keep = keep
        self._cache: OrderedDict[tuple[str, str], _Row | None] = OrderedDict()
        self._dirty: set[tuple[str, str]] = set()

    def _row(self, session_id: str, key: str, begins: bool = False) -> _Row | None:
        k = (session_id, key)
        if k in self._cache:
            self._cache.move_to_end(k)
            return self._cache[k]
        if begins:
            return None
        found = self._conn.execute("SELECT seq0, kind, host, facts, findings FROM entry_index "
                                   "WHERE session_id=? AND key=?", k).fetchone()
        row = None if found is None else _Row(found[0], found[1], found[2], json.loads(found[3]), found[4],
                                              stored=True)
        self._cache[k] = row
        return row

    def add(self, session_id: str, seq: int, item: IndexItem, begins: bool) -> None:
        key, kind, facts, op = item
        row = self._row(session_id, key, begins)
        if kind == "finding":  # counted on the entry that shows the exchange: its own, or its operation's
            if row is not None and row.kind == entry_index.ROUND and row.host:
                key = row.host
                row = self._row(session_id, key)
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

    def write(self) -> None:
        inserts, updates = [], []
        for k in self._dirty:
            row = self._cache[k]
            assert row is not None
            shown = (json.dumps(row.facts), entry_index.method_of(row.facts), entry_index.status_of(row.facts),
                     entry_index.search_text(row.facts), row.findings)
            if row.stored:
                updates.append((*shown, *k))
            else:
                inserts.append((*k, row.seq0, row.kind, row.host, *shown))
                row.stored = True
        if inserts:
            self._conn.executemany("INSERT OR REPLACE INTO entry_index VALUES (?,?,?,?,?,?,?,?,?,?)", inserts)
        if updates:
            self._conn.executemany("UPDATE entry_index SET facts=?, method=?, status=?, text=?, findings=? "
                                   "WHERE session_id=? AND key=?", updates)
        self._dirty.clear()
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """A session deleted: its cached rows go too (after `write`)."""
        for k in [k for k in self._cache if k[0] == session_id]:
            del self._cache[k]


def rebuild(conn: sqlite3.Connection, chunk: int = 5000) -> None:
    """Build the index from the stored events, a chunk of rows at a time (a big database never sits in memory)."""
    conn.execute("BEGIN")
    conn.execute("DELETE FROM entry_index")
    last: tuple[str, int] = ("", -1)
    index = IndexWriter(conn)
    while True:
        rows = conn.execute("SELECT session_id, seq, kind, at, data, v FROM events WHERE (session_id, seq) > (?, ?) "
                            "ORDER BY session_id, seq LIMIT ?", (*last, chunk)).fetchall()
        for r in rows:
            event = TimelineEvent(r[0], r[1], load(r[2], json.loads(r[4]), r[5]), r[3])
            item = index_item(event)
            if item is not None:
                index.add(r[0], r[1], item, event.kind in BEGINS)
        index.write()
        if len(rows) < chunk:
            break
        last = (rows[-1][0], rows[-1][1])
    conn.execute(f"PRAGMA user_version={INDEX_VERSION}")
    conn.execute("COMMIT")
