"""A real redis-server for tests: loopback only, no persistence, a temp dir, a free port; stopped at the end.

Skipped with a reason when the binary is missing, unless MCP_CONSOLE_REQUIRE_SERVICES=1 (then the test fails).
Tests share one server and keep apart by key prefix (`redis_prefix`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def redis_binary() -> str:
    found = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists()
                                             else None)
    if found is None:
        reason = "redis-server is not installed (set MCP_CONSOLE_REQUIRE_SERVICES=1 to make this a failure)"
        if os.environ.get("MCP_CONSOLE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class RedisServer:
    """One redis-server process; `stop()` and `start()` again keep its port (for outage tests)."""

    def __init__(self) -> None:
        self.binary = redis_binary()
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="mcp-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ping(self.port):  # a condition with a deadline, polled
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"redis-server exited: {err[-500:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("redis-server did not answer PING in time")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of this test's own, so tests sharing the server never see each other's keys."""
    return f"t-{uuid.uuid4().hex[:12]}:"
