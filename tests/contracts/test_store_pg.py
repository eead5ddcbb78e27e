"""PostgreSQL's own promises, on a real server (tests/services_pg.py): versioned migrations that run once,
even when consoles start at the same moment; a pool that outlives dropped connections; a URL whose
password never reaches a log. The behaviour every store shares is in test_store_contract.py.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from app.console.entry_index import EntryQuery
from app.console.events import ExchangeFinished, ExchangeStarted, FindingRecorded, Notice, TimelineEvent
from app.console.store import SqliteStore, mask_url, open_store
from app.console.store_pg import MIGRATION_LOCK, MIGRATIONS, PostgresStore, migrate
from app.settings import Settings

WAIT_S = 20.0
ALL = [v for v, _ in MIGRATIONS]


def wait_until(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def versions(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()]


def test_opening_a_store_on_an_empty_database_applies_every_migration_and_records_it(pg_database: str) -> None:
    PostgresStore(pg_database).close()
    assert versions(pg_database) == [v for v, _ in MIGRATIONS]
    with psycopg.connect(pg_database, autocommit=True) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema='public'").fetchall()}
    assert {"schema_migrations", "sessions", "events", "links"} <= tables


def test_migrating_an_up_to_date_database_again_applies_nothing(pg_database: str) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        assert migrate(conn) == ALL
        assert migrate(conn) == []
    store = PostgresStore(pg_database)  # and a console starting on it finds nothing to do
    store.close()
    assert versions(pg_database) == ALL


def test_consoles_starting_at_the_same_moment_migrate_once(pg_database: str) -> None:
    starters = 6
    barrier = threading.Barrier(starters)
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with psycopg.connect(pg_database, autocommit=True) as conn:
                barrier.wait(timeout=WAIT_S)
                applied.append(migrate(conn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, name=f"starter-{i}") for i in range(starters)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
    assert errors == []
    assert sorted(applied) == [[]] * (starters - 1) + [ALL]
    assert versions(pg_database) == ALL


def test_a_migration_waits_while_another_process_holds_the_advisory_lock(pg_database: str) -> None:
    holder = psycopg.connect(pg_database, autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        result: list[list[int]] = []

        def second_console() -> None:
            with psycopg.connect(pg_database, autocommit=True) as conn:
                result.append(migrate(conn))

        migrating = threading.Thread(target=second_console, name="second-console")
        migrating.start()

        def waiting_on_the_lock() -> bool:
            row = holder.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype='advisory' AND NOT granted").fetchone()
            return row is not None and row[0] == 1

        wait_until(waiting_on_the_lock, "the second migration to wait on the advisory lock")
        assert result == []
        assert holder.execute("SELECT to_regclass('public.events')").fetchone() == (None,)
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        migrating.join(timeout=WAIT_S)
        assert result == [ALL]
    finally:
        holder.close()


def test_the_store_keeps_working_after_the_server_drops_its_connections(pg_database: str) -> None:
    store = PostgresStore(pg_database)
    try:
        store.append(TimelineEvent("s1", 1, Notice(message="before"), 1.0))
        assert store.count("s1") == 1
        with psycopg.connect(pg_database, autocommit=True) as admin:
            dropped = admin.execute("SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
        assert dropped is not None and dropped[0] >= 1
        store.append(TimelineEvent("s1", 2, Notice(message="after"), 2.0))
        assert [e.data["message"] for e in store.events("s1")] == ["before", "after"]
    finally:
        store.close()


def test_a_burst_of_appends_is_written_in_a_few_transactions_not_one_per_event(pg_database: str) -> None:
    store = PostgresStore(pg_database)
    try:
        for seq in range(1, 1001):
            store.append(TimelineEvent("s1", seq, Notice(message=f"n{seq}"), float(seq)))
        assert store.count("s1") == 1000
        with psycopg.connect(pg_database, autocommit=True) as conn:
            # xmin is the transaction that wrote a row: how many transactions the burst took.
            row = conn.execute("SELECT COUNT(DISTINCT xmin::text) FROM events").fetchone()
        assert row is not None and row[0] <= 10
    finally:
        store.close()


def test_open_store_gives_postgres_when_database_url_is_set_else_sqlite_in_data_dir(pg_database: str,
                                                                                  tmp_path: Path) -> None:
    pg = open_store(Settings(data_dir=str(tmp_path), database_url=pg_database))
    lite = open_store(Settings(data_dir=str(tmp_path)))
    try:
        assert isinstance(pg, PostgresStore)
        assert isinstance(lite, SqliteStore)
        assert lite.path == str(tmp_path / "console.sqlite3")
    finally:
        pg.close()
        lite.close()


def test_the_database_password_never_reaches_a_log_line(pg_database: str, caplog: pytest.LogCaptureFixture) -> None:
    # The test server asks for a password over TCP: its URL carries one.
    password = str(urlsplit(pg_database).password)
    assert mask_url(pg_database) == pg_database.replace(f"postgres:{password}@", "postgres:***@")
    assert mask_url(pg_database.replace(f":{password}@", "@")) == pg_database.replace(f":{password}@", "@")
    with caplog.at_level(logging.INFO, logger="app.console.store_pg"):
        PostgresStore(pg_database).close()
    assert "applied schema migrations" in caplog.text
    assert "postgres:***@" in caplog.text
    assert password not in caplog.text


def test_a_database_at_version_1_gets_the_entry_index_of_its_stored_events_on_open(pg_database: str) -> None:
    old = PostgresStore(pg_database)
    for i in range(1, 8):
        old.append(TimelineEvent("s1", 2 * i - 1, ExchangeStarted(key=f"x{i}", method="tools/call",
                                                                  name=f"older-tool-{i}"), 1.0))
        old.append(TimelineEvent("s1", 2 * i, ExchangeFinished(key=f"x{i}", status="ok"), 1.0))
    old.append(TimelineEvent("s1", 20, FindingRecorded(rule="r", exchange="x3"), 1.0))
    old.close()
    with psycopg.connect(pg_database, autocommit=True) as conn:  # as a database written before version 2
        conn.execute("DROP TABLE entry_index")
        conn.execute("DROP TABLE deployment")  # (version 3)
        conn.execute("DROP TABLE secrets")  # (version 4)
        conn.execute("DROP TABLE exact_events")
        conn.execute("DELETE FROM schema_migrations WHERE version > 1")
    store = PostgresStore(pg_database)
    try:
        assert versions(pg_database) == ALL
        assert [h.key for h in store.find_entries("s1", EntryQuery(text="older-tool-4")).hits] == ["x4"]
        assert [(h.key, h.findings) for h in store.find_entries("s1", EntryQuery(findings=True)).hits] == [("x3", 1)]
        assert store.find_entries("s1", EntryQuery(method="tools/call")).total == 7
    finally:
        store.close()


def test_a_batch_retried_after_a_failed_transaction_counts_its_findings_once(pg_database: str) -> None:
    store = PostgresStore(pg_database)
    try:
        store.append(TimelineEvent("s1", 1, ExchangeStarted(key="x1", method="tools/call"), 1.0))
        store.append(TimelineEvent("s1", 2, ExchangeFinished(key="x1", status="ok"), 1.0))
        assert store.count("s1") == 2  # committed: x1's index row is cached by the writer
        with psycopg.connect(pg_database, autocommit=True) as conn:
            # The next update of the index fails once (a sequence is not rolled back with the transaction).
            conn.execute("CREATE SEQUENCE fail_once")
            conn.execute("CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                         "IF nextval('fail_once') = 1 THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$")
            conn.execute("CREATE TRIGGER fail_once BEFORE UPDATE ON entry_index FOR EACH ROW "
                         "EXECUTE FUNCTION fail_once()")
        store.append(TimelineEvent("s1", 3, FindingRecorded(rule="r", exchange="x1"), 1.0))
        store.append(TimelineEvent("s1", 4, ExchangeStarted(key="x2", method="tools/call"), 1.0))
        found = store.find_entries("s1", EntryQuery(findings=True))
        assert [(h.key, h.findings) for h in found.hits] == [("x1", 1)]
        assert store.find_entries("s1", EntryQuery()).total == 2  # x2, first inserted by the failed attempt
    finally:
        store.close()
