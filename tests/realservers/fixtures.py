"""Servers nobody here wrote, as a new user meets them (installed pinned by scripts/test.sh):
`@modelcontextprotocol/server-filesystem` and `server-memory` over stdio (.cache/npm), and a fastmcp server
over Streamable HTTP (tests/realservers/fastmcp_server.py, run by the .cache/fastmcp venv)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM = ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol"
FILESYSTEM = NPM / "server-filesystem" / "dist" / "index.js"
MEMORY = NPM / "server-memory" / "dist" / "index.js"
FASTMCP_PYTHON = ROOT / ".cache" / "fastmcp" / "bin" / "python"
FASTMCP_SERVER = Path(__file__).with_name("fastmcp_server.py")
NODE = shutil.which("node")


def _npm_reason(entry: Path) -> str | None:
    if NODE is None:
        return "node is not on PATH"
    if not entry.is_file():
        return f"{entry.relative_to(ROOT)} is not installed (scripts/test.sh installs it with npm)"
    return None


def _fastmcp_reason() -> str | None:
    if not FASTMCP_PYTHON.is_file():
        return ".cache/fastmcp is not installed (scripts/test.sh makes it with pip)"
    return None


needs_filesystem = pytest.mark.skipif(_npm_reason(FILESYSTEM) is not None, reason=_npm_reason(FILESYSTEM) or "")
needs_memory = pytest.mark.skipif(_npm_reason(MEMORY) is not None, reason=_npm_reason(MEMORY) or "")
needs_fastmcp = pytest.mark.skipif(_fastmcp_reason() is not None, reason=_fastmcp_reason() or "")


def filesystem_argv(*directories: str | Path) -> list[str]:
    assert NODE is not None
    return [NODE, str(FILESYSTEM), *map(str, directories)]


def memory_argv() -> list[str]:
    assert NODE is not None
    return [NODE, str(MEMORY)]


@pytest.fixture
def fastmcp_url() -> Iterator[str]:
    """The fastmcp server over Streamable HTTP on 127.0.0.1; stopped after the test."""
    proc = subprocess.Popen([str(FASTMCP_PYTHON), str(FASTMCP_SERVER)], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # empty (and failing below) if it dies first
        if not line.startswith("listening "):
            raise RuntimeError(f"the fastmcp server did not start: {line!r}")
        port = int(line.split()[1])
        threading.Thread(target=proc.stdout.read, name="fastmcp-stdout", daemon=True).start()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
