"""The SQLite store's entry index (`app/console/entry_index.py` says what it is for), written a batch at a time.

The writer thread folds each batch's events into their entries' rows in memory first: an exchange's
started and finished events (and its findings) usually share a batch, so each entry is read at most once
and written once per batch, with one `executemany` for the lot.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from app.console import entry_index
from app.console.events import TimelineEvent, load

IndexItem = tuple[str, str, dict[str, Any], str | None]  # key, kind, the event's facts, its operation id
INDEX_VERSION = 1  # PRAGMA user_version once the entry index covers every stored event


def index_item(event: TimelineEvent) -> IndexItem | None:
    """What an event adds to the index (made on the appending thread, folded on the writer's)."""
    found = entry_index.entry_of(event)
    if found is None:
        return None
    data = event.data
    return found[0], found[1], {f: data[f] for f in entry_index.FACT_FIELDS if f in data}, data.get("op")


@dataclass(slots=True)
class _Row:
    seq0: int
    kind: str
    host: str | None
    facts: dict[str, Any]
    findings: int
    stored: bool  # already in the table (then updated, else inserted)
    changed: bool = False


class IndexBatch:
    """The index rows one batch touches, read once, folded in memory, written by `write`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._rows: dict[tuple[str, str], _Row | None] = {}

    def _row(self, session_id: str, key: str) -> _Row | None:
        k = (session_id, key)
        if k not in self._rows:
            found = self._conn.execute("SELECT seq0, kind, host, facts, findings FROM entry_index "
                                       "WHERE session_id=? AND key=?", k).fetchone()
            self._rows[k] = None if found is None else _Row(found[0], found[1], found[2], json.loads(found[3]),
                                                            found[4], stored=True)
        return self._rows[k]

    def add(self, session_id: str, seq: int, item: IndexItem) -> None:
        key, kind, facts, op = item
        row = self._row(session_id, key)
        if kind == "finding":  # counted on the entry that shows the exchange: its own, or its operation's
            if row is not None and row.kind == entry_index.ROUND and row.host:
                row = self._row(session_id, row.host)
            if row is not None:
                row.findings += 1
                row.changed = True
            return
        if row is None:
            host = f"op-{op}" if kind == entry_index.ROUND and op else None
            self._rows[(session_id, key)] = _Row(seq, kind, host, facts, 0, stored=False, changed=True)
            return
        row.facts = {**row.facts, **facts}
        row.changed = True

    def write(self) -> None:
        inserts, updates = [], []
        for (session_id, key), row in self._rows.items():
            if row is None or not row.changed:
                continue
            shown = (json.dumps(row.facts), str(row.facts.get("method") or ""), entry_index.status_of(row.facts),
                     entry_index.search_text(row.facts), row.findings)
            if row.stored:
                updates.append((*shown, session_id, key))
            else:
                inserts.append((session_id, key, row.seq0, row.kind, row.host, *shown))
        if inserts:
            self._conn.executemany("INSERT OR REPLACE INTO entry_index VALUES (?,?,?,?,?,?,?,?,?,?)", inserts)
        if updates:
            self._conn.executemany("UPDATE entry_index SET facts=?, method=?, status=?, text=?, findings=? "
                                   "WHERE session_id=? AND key=?", updates)
        self._rows.clear()


def rebuild(conn: sqlite3.Connection, chunk: int = 5000) -> None:
    """Build the index from the stored events, a chunk of rows at a time (a big database never sits in memory)."""
    conn.execute("BEGIN")
    conn.execute("DELETE FROM entry_index")
    last: tuple[str, int] = ("", -1)
    while True:
        rows = conn.execute("SELECT session_id, seq, kind, at, data, v FROM events WHERE (session_id, seq) > (?, ?) "
                            "ORDER BY session_id, seq LIMIT ?", (*last, chunk)).fetchall()
        batch = IndexBatch(conn)
        for r in rows:
            item = index_item(TimelineEvent(r[0], r[1], load(r[2], json.loads(r[4]), r[5]), r[3]))
            if item is not None:
                batch.add(r[0], r[1], item)
        batch.write()
        if len(rows) < chunk:
            break
        last = (rows[-1][0], rows[-1][1])
    conn.execute(f"PRAGMA user_version={INDEX_VERSION}")
    conn.execute("COMMIT")
