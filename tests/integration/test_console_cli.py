"""The command line, as a real process: the wildcard-bind refusal and the launch URL."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.processes import stop

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
    token = "cli-owner-token-0123"
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port), "--data-dir", str(tmp_path)],
                            cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "MCP_CONSOLE_TOKEN": token})
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), name="cli-stdout", daemon=True).start()
    launch = re.compile(rf"Open: http://(?P<host>mcp-[a-z2-7]{{16}}\.localhost):{port}/\?token={token}$")
    seen: list[str] = []
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        while not (match := next((m for line in seen if (m := launch.search(line.strip()))), None)):
            if time.monotonic() > deadline:
                pytest.fail(f"no launch URL within {STARTUP_TIMEOUT_S:g} s; output so far: {''.join(seen)!r}")
            try:
                seen.append(lines.get(timeout=0.2))
            except queue.Empty:
                if proc.poll() is not None and lines.empty():
                    pytest.fail(f"the console exited (code {proc.returncode}): {''.join(seen)!r}")
        public = f"{match['host']}:{port}"
        assert (tmp_path / "public_host").read_text().strip() == match["host"], "the name is kept in the data dir"
        # The URL answers as soon as it is printed: it trades the token for the cookie. Python does not resolve
        # *.localhost (browsers do), so connect to 127.0.0.1 and name the public host.
        response = httpx.get(f"http://127.0.0.1:{port}/?token={token}", headers={"Host": public}, timeout=10)
        assert response.status_code == 303
        assert response.headers["location"] == "/"
        assert f"mcp_console_token={token}" in response.headers["set-cookie"]
        # Opened under 127.0.0.1 (an old habit) it hops to the public name and sets no cookie here.
        old_habit = httpx.get(f"http://127.0.0.1:{port}/?token={token}", timeout=10)
        assert old_habit.status_code == 303 and "set-cookie" not in old_habit.headers
        assert old_habit.headers["location"] == f"http://{public}/?token={token}&next=%2F"
        assert (tmp_path / "console.sqlite3").exists()
    finally:
        stop(proc)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_serve_refuses_an_owner_token_shorter_than_16_characters(tmp_path: Path, how: str) -> None:
    argv = [sys.executable, "-m", "app", "serve", "--port", str(_free_port()), "--data-dir", str(tmp_path)]
    env = dict(os.environ)
    if how == "flag":
        argv.append("--token=short")
    else:
        env["MCP_CONSOLE_TOKEN"] = "short"
    try:
        done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("`serve` with a 5-character token kept running instead of refusing")
    assert done.returncode != 0
    assert "at least 16" in done.stderr + done.stdout


def test_a_second_console_on_the_same_data_directory_refuses_to_start_and_names_the_first(tmp_path: Path) -> None:
    first = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(_free_port()),
                              "--data-dir", str(tmp_path)], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "MCP_CONSOLE_TOKEN": "cli-owner-token-0123"})
    assert first.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(first.stdout, lines), name="cli-stdout", daemon=True).start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while "MCP Console is running" not in lines.get(timeout=max(0.1, deadline - time.monotonic())):
            pass
        second = subprocess.run([sys.executable, "-m", "app", "serve", "--port", str(_free_port()),
                                 "--data-dir", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True,
                                timeout=STARTUP_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                env={**os.environ, "MCP_CONSOLE_TOKEN": "cli-owner-token-0123"})
        assert second.returncode != 0
        said = second.stderr + second.stdout
        assert f"Another MCP Console (pid {first.pid}) is using the data directory {tmp_path}" in said, said
    finally:
        first.kill()  # kill -9: the kernel lets the lock go with the process
        first.wait(timeout=10)
    third = subprocess.run([sys.executable, "-m", "app", "serve", "--host", "0.0.0.0", "--port", str(_free_port()),
                            "--data-dir", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=STARTUP_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert "Another MCP Console" not in third.stderr + third.stdout  # (refused for its wildcard bind instead)


def _demo_server(port: int, key_file: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "app", "demo-server", "--port", str(port),
                             "--state-key-file", str(key_file)], cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "demo server listening on" in line:
            threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True).start()  # drain
            return proc
    raise AssertionError(f"the demo server exited before it was ready (code {proc.wait()})")


async def test_a_demo_server_started_again_with_its_key_file_takes_the_request_state_it_sealed_before(
        tmp_path: Path, console: Any) -> None:
    """An operation waiting for input outlives a restart of the demo server itself when both runs seal requestState
    with the same key (`mcp-console demo-server --state-key-file`); with the SDK's default key it could not."""
    key_file = tmp_path / "key"
    key_file.write_text("11" * 32)
    port = _free_port()
    server = _demo_server(port, key_file)
    try:
        s = await console.connect(kind="http", url=f"http://127.0.0.1:{port}/mcp", headers="")
        op = (await console.call_tool(s["id"], "two_step"))["operation"]
        assert op["status"] == "awaiting_input", op
        # Off the event loop: the console's loop goes on meanwhile, as it would, and sees the old server close its
        # idle connection before the answer's retry looks for one.
        server.terminate()
        await asyncio.to_thread(server.wait, 10)
        server = await asyncio.to_thread(_demo_server, port, key_file)
        key = next(iter(op["pending_requests"]))
        answered = await console.http.post(f"/sessions/{s['id']}/operations/{op['op']}/answer",
                                           data={"key": key, "action": "accept", "arg.name": "Ada"},
                                           headers={"Accept": "application/json"})
        assert answered.status_code == 200, answered.text
        data = answered.json()
        assert data["status"] == "awaiting_input" and len(data["rounds"]) == 2, data["message"]  # the 2nd question
    finally:
        server.terminate()
        server.wait(timeout=10)
