"""Many rows into SQLite in a few multi-row statements, where `executemany` would step once per row.

The sqlite3 module lets go of the GIL around every `sqlite3_step`, and `executemany` steps once per row: the
writer thread then needs the GIL back once per row. While another thread runs Python (an import parsing the next
chunk of its file, the event loop) each of those waits lasts until that thread is made to let go (the switch
interval, 5 ms): a chunk of 2,000 rows written beside a busy parser took seconds, so the two threads took turns
instead of overlapping. One `INSERT … VALUES (…), (…), …` of many rows is one step: SQLite writes the lot with the
GIL let go once.

A multi-row INSERT OR REPLACE is the same act as the rows inserted one by one in order (each row's conflict is
resolved as it is inserted), so what is stored is the same. The statements come in power-of-two sizes (at most a
dozen distinct texts, which the connection's statement cache keeps prepared).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import cache
from itertools import chain
from typing import Any

# Rows per statement at most (also bounded by the connection's variable limit): an import's chunk of 4,096 rows
# (`session_stream.CHUNK`) is one statement, one GIL hand-off; in blocks of 1,024 a chunk of 2,000 was six, and
# each waited up to the switch interval beside the parser (the import waited 2.5 s for its writer at 100k).
MAX_ROWS = 4096


@cache
def _statement(head: str, width: int, rows: int) -> str:
    one = "(" + ",".join("?" * width) + ")"
    return head + " VALUES " + ",".join([one] * rows)


def insert_rows(conn: sqlite3.Connection, head: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """`conn.executemany(head + " VALUES (?,…)", rows)` in as few statements as the sizes allow.

    `head` is the statement up to VALUES (`INSERT OR REPLACE INTO t (a, b)`); every row has the same width.
    """
    if not rows:
        return
    width = len(rows[0])
    most = min(MAX_ROWS, _most_rows(conn, width))
    start, left = 0, len(rows)
    while left:
        n = min(most, 1 << (left.bit_length() - 1))  # the largest power of two that fits
        conn.execute(_statement(head, width, n), list(chain.from_iterable(rows[start:start + n])))
        start += n
        left -= n


def _most_rows(conn: sqlite3.Connection, width: int) -> int:
    """The largest power of two of rows whose parameters the connection takes in one statement."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    return 1 << (max(limit, 1).bit_length() - 1)
