"""A real redis-server for tests: loopback only, no persistence, a temp dir, a free port; stopped at the end.

It requires a password (`requirepass`, a random one per server, in every URL the fixtures hand out), as a
team's Redis must; `open_url` is the same server's URL without it (refused by the server and by a team console).

Skipped with a reason when the binary is missing, unless MCP_CONSOLE_REQUIRE_SERVICES=1 (then the test fails).
Tests share one server and keep apart by key prefix (`redis_prefix`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.console.team_key import TeamKey

START_TIMEOUT_S = 10.0
# What the hubs and directories of one test team sign with (app/console/team_key.py).
TEAM_SECRET = "tests-team-secret-shared-by-the-processes-of-one-team"
TEAM_KEY = TeamKey(TEAM_SECRET)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ping(port: int, password: str | None) -> bool:
    hello = (f"AUTH {password}\r\n" if password else "").encode() + b"PING\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(hello)
            received = b""
            while b"+PONG" not in received and len(received) < 64:
                chunk = sock.recv(64)
                if not chunk:
                    break
                received += chunk
            return (received.startswith(b"+OK") or not password) and b"+PONG" in received
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

    def __init__(self, password: bool = True) -> None:
        self.binary = redis_binary()
        self.requires_password = password
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="mcp-redis-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.password = secrets.token_hex(16)

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def open_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        # The password on stdin (`-` reads configuration from it), as deploy/team.compose.yml gives it: on no
        # command line.
        self.proc = subprocess.Popen(
            [self.binary, "-", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.proc.stdin is not None
        if self.requires_password:
            self.proc.stdin.write(f"requirepass {self.password}\n".encode())
        self.proc.stdin.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        password = self.password if self.requires_password else None
        while not _ping(self.port, password):  # a condition with a deadline, polled
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
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of this test's own, so tests sharing the server never see each other's keys."""
    return f"t-{uuid.uuid4().hex[:12]}:"
