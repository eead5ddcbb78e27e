"""A console process on PostgreSQL (MCP_CONSOLE_DATABASE_URL): its sessions outlive the process.

Each console runs as `python -m app serve` with a data directory of its own, so what the second one
finds can only have come from the shared database (tests/services_pg.py starts the server).
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.conftest import REPO_ROOT, child_env, eventually, free_port, pump

TOKEN = "postgres-test-owner-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
STARTUP_TIMEOUT_S = 30.0
class PgConsole:
    """`python -m app serve` on a data directory of its own and the shared database; its output kept."""

    def __init__(self, data_dir: Path, database_url: str) -> None:
        self.data_dir = data_dir
        self.database_url = database_url
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.output: list[str] = []

    def start(self) -> None:
        env = {**child_env(), "MCP_CONSOLE_TOKEN": TOKEN, "MCP_CONSOLE_DATABASE_URL": self.database_url}
        proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(self.port),
                                 "--data-dir", str(self.data_dir)], cwd=REPO_ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.proc = proc
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, lines), name="pg-console-out", daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not any(f":{self.port}/?token=" in line for line in self.output):  # the launch line
            if time.monotonic() > deadline or (proc.poll() is not None and lines.empty()):
                pytest.fail(f"the console did not start: {''.join(self.output)!r}")
            try:
                self.output.append(lines.get(timeout=0.2))
            except queue.Empty:
                continue

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def pg_consoles(tmp_path: Path, pg_database: str) -> Iterator[list[PgConsole]]:
    # The test server's URL carries its password (it asks for one over TCP): the test proves it is never printed.
    made = [PgConsole(tmp_path / f"data-{i}", pg_database) for i in range(2)]
    yield made
    for console in made:
        console.stop()


async def session_json(http: httpx.AsyncClient, sid: str) -> dict[str, Any]:
    response = await http.get(f"/sessions/{sid}.json")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def test_a_session_on_postgres_survives_a_console_restart(pg_consoles: list[PgConsole],
                                                               demo_url: str) -> None:
    first, second = pg_consoles
    first.start()
    async with httpx.AsyncClient(base_url=first.base, headers=AUTH, timeout=30) as http:
        sid = (await http.post("/sessions", data={"kind": "http", "url": demo_url})).json()["id"]

        async def connected() -> bool:
            s = await session_json(http, sid)
            return s["status"] == "connected" and bool(s["lists"]["tools"])

        await eventually(connected, what="the session to connect")
        reply = (await http.post(f"/sessions/{sid}/tools/call", data={"tool": "add", "arg.a": "2", "arg.b": "3"})
                 ).json()
        before = await session_json(http, sid)
    first.stop()
    assert first.proc is not None and first.proc.returncode is not None
    assert not any(p.name == "console.sqlite3" for p in first.data_dir.rglob("*"))

    second.start()
    async with httpx.AsyncClient(base_url=second.base, headers=AUTH, timeout=30) as http:
        after = await session_json(http, sid)
        assert after["status"] == "closed"
        assert after["seq"] >= before["seq"]  # and the close, the restart notice
        kept = [e.get("key") for e in after["timeline"]]
        assert all(e.get("key") in kept for e in before["timeline"]), (before["timeline"], kept)
        assert before["operations"] and [op["final"]["result"] for op in after["operations"]] == \
            [op["final"]["result"] for op in before["operations"]]
        entry = await http.get(f"/sessions/{sid}/entries/{reply['key']}.json")
        assert entry.status_code == 200 and entry.json()["wire"], entry.text
    printed = "".join(first.output + second.output)
    assert "Store: PostgreSQL at postgresql://postgres:***@127.0.0.1" in printed
    assert str(urlsplit(first.database_url).password) not in printed
