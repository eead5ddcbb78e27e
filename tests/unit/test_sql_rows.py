"""Rows written in multi-row statements are the rows `executemany` writes, conflicts and all."""

from __future__ import annotations

import sqlite3

import pytest

from app.console import session_stream, sql_rows

HEAD = "INSERT OR REPLACE INTO t (k, u, v)"


def _table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, u TEXT UNIQUE, v)")
    return conn


def _rows(n: int) -> list[tuple[object, ...]]:
    # Duplicate keys on both constraints, so the order each conflict is resolved in shows in the result.
    return [(i % 700, f"u{i % 333}", v) for i, v in
            enumerate([1.5, None, "é\u2028", 2**62, b"\x00b", "", -0.0] * (n // 7 + 1))][:n]


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1023, 1024, 1025, 2000, 3001, 4096, 4097, 8200])
def test_rows_in_few_statements_end_as_the_same_table_as_one_statement_per_row(n: int) -> None:
    one, many = _table(), _table()
    one.executemany(f"{HEAD} VALUES (?,?,?)", _rows(n))
    sql_rows.insert_rows(many, HEAD, _rows(n))
    query = "SELECT k, u, v, typeof(v) FROM t ORDER BY k"
    assert many.execute(query).fetchall() == one.execute(query).fetchall()


def test_a_connection_that_takes_few_variables_gets_smaller_statements() -> None:
    conn = _table()
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)  # three rows of three at most
    expected = _table()
    expected.executemany(f"{HEAD} VALUES (?,?,?)", _rows(50))
    sql_rows.insert_rows(conn, HEAD, _rows(50))
    assert conn.execute("SELECT * FROM t ORDER BY k").fetchall() == expected.execute(
        "SELECT * FROM t ORDER BY k").fetchall()


def test_a_row_sqlite_refuses_fails_the_call_as_executemany_would() -> None:
    conn = _table()
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate has no UTF-8 form
        sql_rows.insert_rows(conn, HEAD, [(1, "a", "ok"), (2, "b", "\ud800")])


def test_an_import_s_full_chunk_of_events_is_one_statement() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE e (a, b, c, d, e, f, g)")  # as wide as the events table
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    rows = [(i, "s", "wire", None, 1.5, "{}", 2) for i in range(session_stream.CHUNK)]
    sql_rows.insert_rows(conn, "INSERT INTO e (a, b, c, d, e, f, g)", rows)
    assert len(statements) == 1  # one hand-off of the GIL for the chunk, not one per block of a power of two
    assert conn.execute("SELECT COUNT(*) FROM e").fetchone() == (session_stream.CHUNK,)
