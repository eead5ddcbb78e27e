"""Real parts for the console's integration tests.

- `demo_url`: the bundled demo server as its own process on 127.0.0.1 (Streamable HTTP).
- `tiny_http`: tiny real HTTP servers (stdlib `http.server` in a thread) that misbehave on purpose.
- `console` / `make_console`: the console app built with `create_app(Settings(...))`, driven in-process
  over `httpx.ASGITransport` with the owner token. Its stdio processes are stopped at teardown.

Every wait is a poll with a deadline; nothing sleeps a fixed time to make a test pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from app.settings import Settings
from app.web.app import create_app

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = "2026-07-28"
TOKEN = "t"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"Accept": "application/json"}
STARTUP_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 20.0
POLL_S = 0.02

# What the console asks for once it is connected, by the capability that offers it.
LIST_METHODS = {"tools": ["tools/list"], "resources": ["resources/list", "resources/templates/list"],
                "prompts": ["prompts/list"]}


# --- small helpers ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def pump(stream: IO[bytes], sink: queue.Queue[str]) -> None:
    """Drain a child's pipe on a thread so it never fills up and blocks the child."""
    for raw in iter(stream.readline, b""):
        sink.put(raw.decode("utf-8", "replace"))


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_for_line(lines: queue.Queue[str], proc: subprocess.Popen[bytes], wanted: Callable[[str], bool],
                  timeout: float) -> tuple[str | None, list[str]]:
    """The first line `wanted` accepts, with everything seen; None when the deadline passes or the process ends."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=min(remaining, 0.2))
        except queue.Empty:
            if proc.poll() is not None and lines.empty():
                break
            continue
        seen.append(line)
        if wanted(line):
            return line, seen
    return None, seen


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = SETTLE_TIMEOUT_S,
                     what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy, or fail when the deadline passes."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(POLL_S)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}; last value: {last!r}")


# --- the demo server as a real process ---------------------------------------------------


@pytest.fixture(scope="session")
def demo_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app.demo", "--port", str(port)], cwd=REPO_ROOT,
                            env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=pump, args=(proc.stderr, lines), name="demo-stderr", daemon=True).start()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        ready, seen = wait_for_line(lines, proc, lambda line: line.strip() == f"demo server listening on {url}",
                                    STARTUP_TIMEOUT_S)
        if ready is None:
            pytest.fail(f"demo server did not become ready; stderr so far: {''.join(seen)!r}")
        yield url
    finally:
        stop_process(proc)


# --- tiny misbehaving HTTP servers ---------------------------------------------------------


@dataclass
class Seen:
    """One request a tiny server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


# A handler answers (status, content type, body bytes) for each request.
Handler = Callable[[Seen], tuple[int, str, bytes]]


class TinyServer:
    """A real HTTP server on 127.0.0.1 (port chosen by the OS) answering with `handler`, on a thread."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[Seen] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                            self.rfile.read(length) if length else b"")
                outer.requests.append(seen)
                status, content_type, body = handler(seen)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name=f"tiny-http-{self.port}", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class TinyHttp:
    """Starts tiny servers (stopped by the fixture) and builds the JSON-RPC bodies they answer with."""

    def __init__(self) -> None:
        self.servers: list[TinyServer] = []

    def start(self, handler: Handler) -> TinyServer:
        server = TinyServer(handler)
        self.servers.append(server)
        return server

    @staticmethod
    def discover(**overrides: Any) -> dict[str, Any]:
        result: dict[str, Any] = {"resultType": "complete", "supportedVersions": [PROTOCOL], "capabilities": {},
                                  "ttlMs": 0, "cacheScope": "public",
                                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tiny", "version": "0"}}}
        result.update(overrides)
        return result

    @staticmethod
    def result(request_id: Any, result: dict[str, Any]) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()

    @staticmethod
    def error(request_id: Any, code: int, message: str) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()


@pytest.fixture
def tiny_http() -> Iterator[TinyHttp]:
    tiny = TinyHttp()
    yield tiny
    for server in tiny.servers:
        server.stop()


# --- the console, in-process ---------------------------------------------------------------


class Console:
    """The console app plus an owner's httpx client over ASGITransport, with a few sentences of its API."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.app = create_app(settings)
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1",
                                      headers=AUTH, timeout=30)

    @property
    def manager(self) -> Any:
        return self.app.state.web.manager

    async def create(self, **form: str) -> str:
        response = await self.http.post("/sessions", data=form, headers=JSON)
        assert response.status_code == 200, response.text
        session_id: str = response.json()["id"]
        return session_id

    async def session(self, session_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/sessions/{session_id}.json")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    async def settled(self, session_id: str, timeout: float = SETTLE_TIMEOUT_S) -> dict[str, Any]:
        """Poll until the session failed, or connected and fetched every list its server offers."""

        async def check() -> dict[str, Any] | None:
            s = await self.session(session_id)
            if s["status"] == "failed":
                return s
            if s["status"] != "connected":
                return None
            done = {e.get("method") for e in s["timeline"] if e.get("kind") == "exchange"
                    and e.get("status") != "pending"}
            wanted = {m for cap in s["server"]["capabilities"] or {} for m in LIST_METHODS.get(cap, [])}
            return s if wanted <= done else None

        result: dict[str, Any] = await eventually(check, timeout, f"session {session_id} to settle")
        return result

    async def connect(self, timeout: float = SETTLE_TIMEOUT_S, **form: str) -> dict[str, Any]:
        return await self.settled(await self.create(**form), timeout)

    async def call_tool(self, session_id: str, tool: str, **args: str) -> dict[str, Any]:
        data = {"tool": tool, **{f"arg.{k}": v for k, v in args.items()}}
        response = await self.http.post(f"/sessions/{session_id}/tools/call", data=data, headers=JSON)
        assert response.status_code == 200, response.text
        reply: dict[str, Any] = response.json()
        return reply

    async def entry(self, session_id: str, key: str) -> dict[str, Any]:
        response = await self.http.get(f"/sessions/{session_id}/entries/{key}.json")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    async def shown_statuses(self, session_id: str, key: str) -> list[str]:
        """Every status the session's timeline shows for exchange `key`.

        A plain exchange is its own entry; a tools/call, prompts/get or resources/read may be a round
        nested in an operation entry, which shows the operation's status and the round's.
        """
        shown: list[str] = []
        for entry in (await self.session(session_id))["timeline"]:
            if entry.get("key") == key:
                shown.append(entry["status"])
            for rnd in entry.get("rounds") or []:
                if rnd.get("key") == key:
                    shown.extend([entry["status"], rnd["status"]])
        assert shown, f"exchange {key} is not on the timeline"
        return shown

    async def close(self) -> None:
        await self.http.aclose()
        await self.manager.shutdown()


@pytest.fixture
async def make_console(tmp_path: Path) -> AsyncIterator[Callable[..., Console]]:
    consoles: list[Console] = []

    def make(**overrides: Any) -> Console:
        data_dir = tmp_path / f"console-{len(consoles)}"
        settings = Settings(**{"data_dir": str(data_dir), "token": TOKEN, "allowed_hosts": "testserver",
                               "request_timeout_s": 20.0, "stdio_shutdown_grace_s": 2.0, **overrides})
        console = Console(settings)
        consoles.append(console)
        return console

    yield make
    for console in consoles:
        await console.close()


@pytest.fixture
async def console(make_console: Callable[..., Console]) -> Console:
    return make_console()
