"""The command line, as a real process: the wildcard-bind refusal and the launch URL."""

from __future__ import annotations

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

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pump(stream: IO[str], sink: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):
        sink.put(line)


def test_serve_refuses_a_wildcard_bind_without_the_loud_flag(tmp_path: Path) -> None:
    port = _free_port()
    try:
        done = subprocess.run([sys.executable, "-m", "app", "serve", "--host", "0.0.0.0", "--port", str(port),
                               "--data-dir", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=STARTUP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("`serve --host 0.0.0.0` kept running instead of refusing")
    assert done.returncode != 0
    assert "--dangerously-bind-all-interfaces" in done.stderr + done.stdout
    assert "0.0.0.0" in done.stderr + done.stdout


def test_serve_prints_the_launch_url_and_the_url_opens_the_console(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port), "--token", "abc",
                             "--data-dir", str(tmp_path)], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), name="cli-stdout", daemon=True).start()
    launch = f"http://127.0.0.1:{port}/?token=abc"
    seen: list[str] = []
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        while not any(launch in line for line in seen):
            if time.monotonic() > deadline:
                pytest.fail(f"no launch URL within {STARTUP_TIMEOUT_S:g} s; output so far: {''.join(seen)!r}")
            try:
                seen.append(lines.get(timeout=0.2))
            except queue.Empty:
                if proc.poll() is not None and lines.empty():
                    pytest.fail(f"the console exited (code {proc.returncode}): {''.join(seen)!r}")
        # The URL answers as soon as it is printed: it trades the token for the cookie.
        response = httpx.get(launch, timeout=10)
        assert response.status_code == 303
        assert response.headers["location"] == "/"
        assert "mcp_console_token=abc" in response.headers["set-cookie"]
        assert (tmp_path / "console.sqlite3").exists()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
