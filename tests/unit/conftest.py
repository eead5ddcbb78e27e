"""Fixtures for operations and listeners without a session: a memory runner and a real Timeline.

The timeline is the console's own (an SQLite store in a tmp dir, the fold in `state.apply`), so
what the tests read back is what a page would render.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.console.runner import RequestRunner
from app.console.store import SqliteStore
from app.console.timeline import Timeline
from app.mcp.memory import Handler
from tests.memory_runner import MakeRunner, MemoryRunner, Published


@pytest.fixture
def published() -> Published:
    return Published()


@pytest.fixture
def timeline(tmp_path: Path, published: Published) -> Iterator[Timeline]:
    store = SqliteStore(tmp_path / "console.sqlite3")
    yield Timeline("unitsess", store, published, window=200)
    store.close()


@pytest.fixture
def make_runner(timeline: Timeline) -> MakeRunner:
    def make(handler: Handler, **kw: Any) -> MemoryRunner:
        runner = MemoryRunner(handler, timeline, **kw)
        _typed: RequestRunner = runner  # the runner must satisfy the seam the console uses
        return runner

    return make

