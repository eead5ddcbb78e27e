"""Console processes of one team, as real `python -m app serve` subprocesses (used by tests and bench/).

Every process gets the same owner token, public host, database and Redis (prefix included), its own port,
data directory and `advertise_url` (http://127.0.0.1:PORT, where the others forward actions to it). The
lease TTL is short so a killed process's sessions become claimable within about a second.
"""

from __future__ import annotations

import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = re.compile(r"MCP Console is running\. Open: (?P<url>\S+)")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def public_host_name() -> str:
    """A console name like the one each console makes for itself: every process of the team shares it."""
    return "mcp-" + "".join(secrets.choice(_BASE32) for _ in range(16)) + ".localhost"


@dataclass
class TeamSpec:
    database_url: str
    redis_url: str
    redis_prefix: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    team_secret: str = field(default_factory=lambda: secrets.token_hex(32))
    public_host: str = field(default_factory=public_host_name)
    lease_ttl_s: float = 1.5
    heartbeat_s: float = 0.3
    extra_env: dict[str, str] = field(default_factory=dict)  # more MCP_CONSOLE_* settings for every process


class ConsoleProcess:
    """One console process of the team; `kill()` is SIGKILL (nothing flushed, no lease released)."""

    def __init__(self, spec: TeamSpec, name: str, data_dir: Path, log: Path) -> None:
        self.spec, self.name = spec, name
        self.port = free_port()
        self.log = log
        env = {**os.environ, "MCP_CONSOLE_TOKEN": spec.token, "MCP_CONSOLE_PUBLIC_HOST": spec.public_host,
               "MCP_CONSOLE_TEAM_SECRET": spec.team_secret,
               "MCP_CONSOLE_DATABASE_URL": spec.database_url, "MCP_CONSOLE_REDIS_URL": spec.redis_url,
               "MCP_CONSOLE_REDIS_PREFIX": spec.redis_prefix,
               "MCP_CONSOLE_ADVERTISE_URL": f"http://127.0.0.1:{self.port}",
               "MCP_CONSOLE_LEASE_TTL_S": str(spec.lease_ttl_s), "MCP_CONSOLE_HEARTBEAT_S": str(spec.heartbeat_s),
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), "PYTHONUNBUFFERED": "1",
               **spec.extra_env}
        with log.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app", "serve", "--port", str(self.port), "--data-dir", str(data_dir)],
                cwd=str(ROOT), stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, env=env)
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, name=f"console-{name}-stdout", daemon=True).start()
        self._wait_ready()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise RuntimeError(f"console {self.name} exited early: {self.log.read_text(errors='replace')[-2000:]}")
            if LAUNCH.search(line):
                return
        self.kill()
        raise RuntimeError(f"console {self.name} printed no launch URL in {START_TIMEOUT_S:g} s")

    @property
    def base(self) -> str:
        """Where a browser opens this process: the team's public name and this process's port."""
        return f"http://{self.spec.public_host}:{self.port}"

    @property
    def internal(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def launch_url(self) -> str:
        return f"{self.base}/?token={self.spec.token}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=STOP_TIMEOUT_S)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()


class Team:
    """Starts console processes on one spec and stops every one it started."""

    def __init__(self, spec: TeamSpec, root: Path) -> None:
        self.spec, self.root = spec, root
        self.members: list[ConsoleProcess] = []

    def start(self, name: str) -> ConsoleProcess:
        member = ConsoleProcess(self.spec, name, self.root / f"data-{name}", self.root / f"console-{name}.log")
        self.members.append(member)
        return member

    def stop(self) -> None:
        for member in self.members:
            member.stop()
