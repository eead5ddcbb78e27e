"""Attack, on a real team (two `python -m app serve` processes, PostgreSQL, Redis): a replica of an import that
was loaded while the import was still being stored.

An import publishes none of its events (they go to the store a chunk at a time). Process B, starting while A
stored a big file, loaded its replica from the part already there; the end of the import told nobody, so B showed
a part of the file until it restarted. Here the import is held half way by a lock the test takes on the events
table (reads go on, writes wait), B starts and loads the half, then the lock goes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.console.events import Notice, SessionCreated, TimelineEvent
from tests.integration.conftest import JSON
from tests.integration.conftest import eventually as _eventually
from tests.integration.test_team_processes import WAIT_S, twin
from tests.team_processes import Team, TeamSpec

pytestmark = pytest.mark.slow

NOTICES = 20_000  # enough chunks (2,000 events each) that the test takes its lock long before the last one


@pytest.fixture
def team(tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str) -> Iterator[Team]:
    made = Team(TeamSpec(pg_database, redis_url, redis_prefix), tmp_path)
    yield made
    made.stop()


def _file() -> bytes:
    target = {"kind": "http", "url": "http://127.0.0.1:9/mcp"}
    events = [TimelineEvent("x", 1, SessionCreated(target=target), at=1.0)]
    events += [TimelineEvent("x", seq, Notice(message=f"notice {seq}"), at=float(seq))
               for seq in range(2, NOTICES + 2)]
    head = {"format": "mcp-console-session", "version": 2, "session": {"id": "x", "created": 1.0, "meta": {}}}
    return (json.dumps(head)[:-1] + ', "events": [' + ", ".join(e.to_json() for e in events) + "]}").encode()


def _importing(database: str) -> str | None:
    """The id of the session whose import has stored some events and not finished, if there is one yet."""
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT s.id FROM sessions s WHERE s.meta LIKE '%\"importing\": true%' "
                           "AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id)").fetchone()
    return None if row is None else str(row[0])


def _seq(seen: dict[str, Any] | None) -> int | None:
    """How far into the file a process's copy of the session goes (the file's seqs run 1, 2, 3, ...)."""
    return None if seen is None else int(seen["seq"])


async def test_a_replica_loaded_half_way_through_an_import_is_whole_once_the_import_ends(
        team: Team, pg_database: str) -> None:
    a = team.start("a")
    auth = {"Authorization": f"Bearer {a.spec.token}", **JSON}
    body = _file()
    async with httpx.AsyncClient(base_url=a.internal, headers=auth, timeout=60) as to_a:
        upload = asyncio.create_task(to_a.post("/sessions/import", content=body,
                                               headers={"content-type": "application/json"}))
        sid = await _eventually(lambda: asyncio.to_thread(_importing, pg_database), WAIT_S, "the import half way")
        hold = await asyncio.to_thread(psycopg.connect, pg_database)
        try:
            # Writes to the events table wait from here; B's reads do not.
            await asyncio.to_thread(hold.execute, "LOCK TABLE events IN EXCLUSIVE MODE")
            b = await asyncio.to_thread(team.start, "b")  # loads every stored session as a replica at start
            async with httpx.AsyncClient(base_url=b.internal, headers=auth, timeout=60) as to_b:
                half = _seq(await twin(to_b, sid))
                assert half is not None and half < NOTICES + 1, f"B loaded up to seq {half}: the import was done"
                assert not upload.done(), "the import ended while it was held"
                await asyncio.to_thread(hold.rollback)
                done = await upload
                assert done.status_code == 200, done.text
                whole = _seq(await twin(to_a, sid))
                assert whole is not None and whole > half

                async def whole_on_b() -> bool:
                    return _seq(await twin(to_b, sid)) == whole

                await _eventually(whole_on_b, WAIT_S, f"B's replica to go up to seq {whole} as A's does")
        finally:
            await asyncio.to_thread(hold.close)
