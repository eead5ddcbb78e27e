"""Fixtures that run the hostile target as a real process (HTTP on 127.0.0.1, or a stdio command line)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 20.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def hostile_argv(*tools: str, name: str = "hostile") -> list[str]:
    """The stdio command line of the hostile target with the given tools_* modules (all when none)."""
    argv = [sys.executable, "-m", "tests.hostile.target", "--stdio", "--name", name]
    return argv + (["--tools", ",".join(tools)] if tools else [])


class HostileUrl(str):
    """The target's /mcp URL (a plain str to every caller), plus its process: a test may kill it and
    start another on the same port (`hostile_http(..., port=url.port)`)."""

    proc: subprocess.Popen[str]
    port: int

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def hostile_http() -> Iterator[Callable[..., HostileUrl]]:
    """Start the hostile target over HTTP; returns its /mcp URL. Every process started is stopped after the test."""
    procs: list[subprocess.Popen[str]] = []

    def start(*tools: str, name: str = "hostile", port: int = 0) -> HostileUrl:
        argv = [sys.executable, "-m", "tests.hostile.target", "--port", "0", "--name", name]
        argv += ["--tools", ",".join(tools)] if tools else []
        # --port 0 would hide the port; pick one by binding first instead.
        import socket
        if not port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
        argv[argv.index("--port") + 1] = str(port)
        proc = subprocess.Popen(argv, cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        procs.append(proc)
        deadline = time.monotonic() + START_TIMEOUT_S
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on" not in line or time.monotonic() > deadline:
            raise RuntimeError(f"the hostile target did not start: {line!r}")
        url = HostileUrl(line.strip().rsplit(" ", 1)[1])
        url.proc, url.port = proc, port
        return url

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
