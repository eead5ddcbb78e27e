"""The real `@modelcontextprotocol/server-everything` (installed by scripts/test.sh into .cache/npm).

stdio: `node dist/index.js stdio`. Streamable HTTP: `node dist/index.js streamableHttp` reads its port from
`PORT` and calls `app.listen(PORT)` with no host, which binds every interface; it has no host option, so
`loopback.cjs` is preloaded to pin the bind to 127.0.0.1 and print the port the OS picked (PORT=0).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import stop

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything"
ENTRY = PACKAGE / "dist" / "index.js"
LOOPBACK = Path(__file__).with_name("loopback.cjs")
TTL_TASKS = Path(__file__).with_name("ttl_tasks.mjs")  # a task tool on the SDK installed with it, keeping the ttl
NODE = shutil.which("node")


def skip_reason() -> str | None:
    if NODE is None:
        return "node is not on PATH: server-everything cannot run"
    if not ENTRY.is_file():
        return (f"{PACKAGE.relative_to(ROOT)} is not installed (scripts/test.sh installs the pinned version with "
                "npm when node and npm exist)")
    return None


needs_everything = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def everything_argv(mode: str = "stdio") -> list[str]:
    assert NODE is not None
    return [NODE, str(ENTRY), mode]


def ttl_tasks_argv() -> list[str]:
    """tests/everything/ttl_tasks.mjs over stdio: a 2025-11-25 task tool (`slow-task`) on the official TypeScript SDK
    server-everything is built on, which keeps the ttl asked for (server-everything's own does not)."""
    assert NODE is not None
    return [NODE, str(TTL_TASKS)]


@pytest.fixture
def everything_url() -> Iterator[str]:
    """server-everything over Streamable HTTP on 127.0.0.1 only; stopped after the test."""
    for port in _serve("streamableHttp"):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def everything_sse_url() -> Iterator[str]:
    """server-everything over the 2024-11-05 HTTP+SSE transport on 127.0.0.1 only; stopped after the test."""
    for port in _serve("sse"):
        yield f"http://127.0.0.1:{port}/sse"


@pytest.fixture
def ttl_tasks_url() -> Iterator[str]:
    """tests/everything/ttl_tasks.mjs over the SDK's stateless Streamable HTTP on 127.0.0.1 (one task store for
    every request, so a task outlives a client that initializes again); stopped after the test."""
    for port in _serve("http", entry=TTL_TASKS):
        yield f"http://127.0.0.1:{port}/mcp"


def _serve(mode: str, entry: Path = ENTRY) -> Iterator[str]:
    assert NODE is not None
    env = {**os.environ, "PORT": "0"}
    proc = subprocess.Popen([NODE, "--require", str(LOOPBACK), str(entry), mode], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        port = None
        for line in proc.stderr:  # ends (and fails below) if the process dies before it listens
            if line.startswith("loopback-listening "):
                host, port = line.split()[1:3]
                assert host == "127.0.0.1", line
                break
        if port is None:
            raise RuntimeError("server-everything did not start listening")
        # Keep draining its stderr so a chatty server never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, name="everything-stderr", daemon=True).start()
        yield port
    finally:
        stop(proc)
