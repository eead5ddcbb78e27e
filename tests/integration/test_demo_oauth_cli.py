"""`mcp-console demo --oauth` and `demo-server --oauth-issuer` as a user runs them: real processes on 127.0.0.1.

The provider is taken from .cache/npm (a link in the data directory stands for the first run's npm install), so
the test needs no registry. Marked `processes` (the console runs as a process of its own) and `slow` (Node).
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests.oauth_services import NODE_MODULES, free_port, provider_missing
from tests.processes import stop

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
POLL_S = 0.05

pytestmark = [pytest.mark.processes, pytest.mark.slow]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "PYTHONUNBUFFERED": "1", "MCP_CONSOLE_TOKEN": "oauth-demo-cli-test-token"}


def _lines(stream: IO[str] | None) -> queue.Queue[str | None]:
    assert stream is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _collect(lines: queue.Queue[str | None], prefixes: tuple[str, ...]) -> dict[str, str]:
    """The rest of each line starting with one of `prefixes`, once all have been seen (or fail at the deadline)."""
    found: dict[str, str] = {}
    deadline = time.monotonic() + START_TIMEOUT_S
    while len(found) < len(prefixes):
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        assert line is not None, f"the console did not print {prefixes} in time; saw {found}"
        for prefix in prefixes:
            if line.startswith(prefix):
                found[prefix] = line[len(prefix):].split()[0]
    return found


def _closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _stop(proc: subprocess.Popen[str]) -> None:
    stop(proc, STOP_TIMEOUT_S)


def test_demo_oauth_runs_the_protected_demo_and_its_provider_and_stops_both(tmp_path: Path) -> None:
    missing = provider_missing()
    if missing:
        pytest.skip(missing)
    (tmp_path / "oidc-provider").mkdir()
    (tmp_path / "oidc-provider" / "node_modules").symlink_to(NODE_MODULES)
    proc = subprocess.Popen([sys.executable, "-m", "app", "demo", "--oauth", "--port", "0", "--data-dir",
                             str(tmp_path)], cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        seen = _collect(_lines(proc.stdout), ("Demo server: ", "Its OAuth authorization server: "))
        demo, issuer = seen["Demo server: "], seen["Its OAuth authorization server: "]
        challenged = httpx.post(demo, json={}, timeout=10)
        assert challenged.status_code == 401 and "resource_metadata=" in challenged.headers["www-authenticate"]
        metadata = httpx.get(demo.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp", timeout=10)
        assert metadata.json()["authorization_servers"] == [issuer]
        assert httpx.get(f"{issuer}/.well-known/oauth-authorization-server", timeout=10).json()["issuer"] == issuer
    finally:
        _stop(proc)
    ports = [int(demo.split(":")[2].split("/")[0]), int(issuer.rsplit(":", 1)[1])]
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while not all(_closed(port) for port in ports):
        assert time.monotonic() < deadline, f"still listening after the console stopped: {ports}"
        time.sleep(POLL_S)


def test_demo_server_passes_oauth_issuer_through(tmp_path: Path) -> None:
    port = free_port()
    # No provider needed: a request without a token is refused before any key is fetched.
    proc = subprocess.Popen([sys.executable, "-m", "app", "demo-server", "--port", str(port), "--oauth-issuer",
                             "http://127.0.0.1:1", "--oauth-scope", "mcp:write"], cwd=ROOT, env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = _lines(proc.stderr)
        deadline = time.monotonic() + START_TIMEOUT_S
        while (line := lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            if "demo server listening on" in line:
                break
        assert line is not None, "the demo server ended before it was ready"
        response = httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=10)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].endswith('scope="mcp:write"')
    finally:
        _stop(proc)
