"""Real parts for the console's integration tests.

- `demo_url`: the bundled demo server as its own process on 127.0.0.1 (Streamable HTTP).
- `tiny_http`: tiny real HTTP servers (stdlib `http.server` in a thread) that misbehave on purpose.
- `console` / `make_console`: the console app built with `create_app(Settings(...))`, driven in-process
  over `httpx.ASGITransport` with the owner token. Its stdio processes are stopped at teardown.

Every wait is a poll with a deadline; nothing sleeps a fixed time to make a test pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
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
from tests.processes import stop

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = "2026-07-28"
TOKEN = "integration-owner-token"  # at least 16 characters, as the console requires
# What the in-process members of one team share (a team refuses to start without a secret and a public host).
TEAM_SECRET = "integration-team-secret-between-console-processes"
TEAM_HOST = "mcp-integrationteamxy.localhost"
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


CLI_RUN_TIMEOUT_S = 90.0


def mcp_console(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line as a CI job runs it (`python -m app ARGS`), from the repository, to its end."""
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=REPO_ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=CLI_RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def pump(stream: IO[bytes], sink: queue.Queue[str]) -> None:
    """Drain a child's pipe on a thread so it never fills up and blocks the child."""
    for raw in iter(stream.readline, b""):
        sink.put(raw.decode("utf-8", "replace"))


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    stop(proc)


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
        # The console's own name (a random mcp-….localhost kept in data_dir): its cookies count only there.
        self.public_host: str = settings.public_host
        self.base = f"http://{self.public_host}"
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=self.base,
                                      headers=AUTH, timeout=30)

    @property
    def manager(self) -> Any:
        return self.app.state.web.manager

    async def create(self, **form: str | list[str]) -> str:
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

    async def connect(self, timeout: float = SETTLE_TIMEOUT_S, **form: str | list[str]) -> dict[str, Any]:
        return await self.settled(await self.create(**form), timeout)

    async def connected_http(self, url: str, headers: str = "") -> str:
        """The id of a new HTTP session on `url` (with `headers`, one per line), asserted connected."""
        s = await self.connect(kind="http", url=url, headers=headers)
        assert s["status"] == "connected", s["status_message"]
        return str(s["id"])

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
        if overrides.get("redis_url"):  # a member of a team: what every process of one shares
            overrides = {"team_secret": TEAM_SECRET, "public_host": TEAM_HOST, **overrides}
        settings = Settings(**{"data_dir": str(data_dir), "token": TOKEN, "allowed_hosts": "testserver",
                               "request_idle_timeout_s": 20.0, "stdio_shutdown_grace_s": 2.0, **overrides})
        console = Console(settings)
        consoles.append(console)
        return console

    yield make
    for console in consoles:
        await console.close()


@pytest.fixture
async def console(make_console: Callable[..., Console]) -> Console:
    return make_console()


# --- live feeds, websockets, share links and restarts (used by test_live_* and test_share_*) ---------

WS_DEADLINE_S = 10.0
OWNER_COOKIE = "mcp_console_token"
LINK_COOKIE = "mcp_console_link"
_WS_SEQ = re.compile(r'\A\s*<div id="ws-seq" hx-swap-oob="true" data-seq="(\d+)"')


def fragment_seq(fragment: str) -> int:
    """The sequence number a websocket fragment leads with (every fragment starts with its ws-seq div)."""
    match = _WS_SEQ.match(fragment)
    assert match, f"a websocket fragment without its leading ws-seq div: {fragment[:200]!r}"
    return int(match.group(1))


def is_reset(fragment: str) -> bool:
    """A fragment that tells the tab to reload: it missed more than the hub can replay, or fell behind."""
    return 'data-reset="1"' in fragment.split(">", 1)[0]


async def ws_collect(ws: Any, done: Callable[[list[str]], bool], what: str,
                     timeout: float = WS_DEADLINE_S) -> list[str]:
    """Receive fragments from a websocket until `done(fragments)` holds; fail when the deadline passes."""
    frames: list[str] = []
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            frames.append(str(await asyncio.wait_for(ws.recv(), remaining)))
        except TimeoutError:
            break
        if done(frames):
            return frames
    pytest.fail(f"the websocket never delivered {what} within {timeout:g} s; got seqs "
                f"{[fragment_seq(f) for f in frames]!r}")


async def ws_closed(ws: Any, timeout: float = WS_DEADLINE_S) -> tuple[list[str], Any]:
    """Read a websocket until the server closes it; returns what arrived first and the close frame received."""
    from websockets.exceptions import ConnectionClosed

    frames: list[str] = []
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            frames.append(str(await asyncio.wait_for(ws.recv(), remaining)))
        except ConnectionClosed as closed:
            return frames, closed.rcvd
        except TimeoutError:
            break
    pytest.fail(f"the server did not close the websocket within {timeout:g} s; got {len(frames)} fragments")


@dataclass
class Served:
    """A console app served by a real uvicorn on 127.0.0.1, for websocket clients."""

    console: Console
    host: str  # "127.0.0.1:PORT": where the socket is

    @property
    def port(self) -> int:
        return int(self.host.rsplit(":", 1)[1])

    @property
    def public(self) -> str:
        """"mcp-….localhost:PORT": the name a browser uses (Python does not resolve *.localhost: see `via`)."""
        return f"{self.console.public_host}:{self.port}"

    @property
    def origin(self) -> str:
        return f"http://{self.public}"

    @property
    def via(self) -> dict[str, Any]:
        """`connect(..., **served.via)`: reach the public name's URL over 127.0.0.1."""
        return {"host": "127.0.0.1", "port": self.port}

    def ws_url(self, session_id: str) -> str:
        return f"ws://{self.public}/sessions/{session_id}/ws"

    def headers(self, cookie: str = f"{OWNER_COOKIE}={TOKEN}") -> dict[str, str]:
        return {"Cookie": cookie, "Origin": self.origin}


@pytest.fixture
async def serve(make_console: Callable[..., Console]) -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    """Start `await serve(console)`: uvicorn on a free 127.0.0.1 port, stopped before the console closes.

    `send_buffer` pins SO_SNDBUF on the listening socket (accepted sockets inherit it), so a client that
    stops reading fills the pipe after kilobytes instead of megabytes of kernel autotuned buffers.
    """
    import uvicorn

    from app.serving import WS_MAX_MESSAGE_BYTES
    from app.web.wire_writes import CoalescingHttpToolsProtocol

    running: list[tuple[Any, asyncio.Task[None]]] = []

    async def start(console: Console, send_buffer: int | None = None) -> Served:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if send_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(console.app, lifespan="off", log_level="warning", ws="websockets-sansio",
                                ws_max_size=WS_MAX_MESSAGE_BYTES, timeout_graceful_shutdown=2,
                                http=CoalescingHttpToolsProtocol)  # as app/serving.py
        server = uvicorn.Server(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name="uvicorn-console")
        running.append((server, task))
        deadline = time.monotonic() + WS_DEADLINE_S
        while not server.started:
            if task.done() or time.monotonic() > deadline:
                pytest.fail("uvicorn did not start")
            await asyncio.sleep(POLL_S)
        return Served(console, f"127.0.0.1:{sock.getsockname()[1]}")

    yield start
    for server, task in reversed(running):
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(task, WS_DEADLINE_S)


RESTART_ATTEMPTS = 5
PORT_FREE_TIMEOUT_S = 10.0


def _wait_until_bindable(port: int, timeout_s: float) -> bool:
    """Polls until 127.0.0.1:`port` can be bound (SO_REUSEADDR, as uvicorn binds), at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
                return True
            except OSError:
                pass
        time.sleep(0.05)
    return False


class DemoProcess:
    """A dedicated demo server on a fixed port: a test may kill it and start it again on the same port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        for _attempt in range(RESTART_ATTEMPTS):
            seen = self._start_once()
            if seen is None:
                return
            if "address already in use" not in "".join(seen):
                break
            # Between the kill and the restart another socket of this machine took the port (an outgoing
            # connection's ephemeral port): wait until it can be bound again, then try once more.
            _wait_until_bindable(self.port, PORT_FREE_TIMEOUT_S)
        pytest.fail(f"demo server on port {self.port} did not become ready; stderr: {''.join(seen)!r}")

    def _start_once(self) -> list[str] | None:
        """Start the process; None once it is ready, else what it said on stderr before it gave up."""
        proc = subprocess.Popen([sys.executable, "-m", "app.demo", "--port", str(self.port)], cwd=REPO_ROOT,
                                env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        self.proc = proc
        assert proc.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stderr, lines), name=f"demo-{self.port}", daemon=True).start()
        ready, seen = wait_for_line(lines, proc, lambda line: line.strip() == f"demo server listening on {self.url}",
                                    STARTUP_TIMEOUT_S)
        if ready is None:
            stop_process(proc)
            return seen
        return None

    async def start(self) -> None:
        """Start (or start again) and wait for the readiness line, off the event loop."""
        await asyncio.to_thread(self._start)

    def kill(self) -> None:
        """SIGKILL: the process vanishes mid-stream, as in a crash (no graceful end of listen streams)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


@pytest.fixture
async def demo_process() -> AsyncIterator[Callable[[], Awaitable[DemoProcess]]]:
    """`await demo_process()`: a started demo server of the test's own; stopped at teardown."""
    made: list[DemoProcess] = []

    async def make() -> DemoProcess:
        demo = DemoProcess(free_port())
        made.append(demo)
        await demo.start()
        return demo

    yield make
    for demo in made:
        demo.stop()


async def create_link(console: Console, session_id: str, role: str = "viewer",
                      ttl_minutes: float | None = None) -> dict[str, Any]:
    """The owner makes a share link; returns {id, role, url, expires} (the url ends in /s/<token>)."""
    form = {"role": role, **({"ttl_minutes": str(ttl_minutes)} if ttl_minutes is not None else {})}
    response = await console.http.post(f"/sessions/{session_id}/links", data=form, headers=JSON)
    assert response.status_code == 200, response.text
    link: dict[str, Any] = response.json()
    return link


def link_token(link: dict[str, Any]) -> str:
    return str(link["url"]).rsplit("/s/", 1)[1]


@pytest.fixture
async def share_tab(make_console: Callable[..., Console]) -> AsyncIterator[Callable[..., Awaitable[httpx.AsyncClient]]]:
    """`await share_tab(console, link)`: a fresh client (no owner token) that opened the share link.

    It lands on /s/<token>, which must answer 200 and set the link cookie; the client keeps that cookie.
    """
    tabs: list[httpx.AsyncClient] = []

    async def open_link(console: Console, link: dict[str, Any]) -> httpx.AsyncClient:
        tab = httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base, timeout=30)
        tabs.append(tab)
        landing = await tab.get(f"/s/{link_token(link)}")
        assert landing.status_code == 200, landing.text
        assert f"{LINK_COOKIE}={link_token(link)}" in landing.headers.get("set-cookie", "")
        assert tab.cookies.get(LINK_COOKIE) == link_token(link)
        return tab

    yield open_link
    for tab in tabs:
        await tab.aclose()


class ConsoleRestarts:
    """Consoles on one data_dir: `restart(console)` shuts one down and builds the next on the same store.

    ASGITransport runs no lifespan, so the new console restores its sessions by calling `restore()`,
    as the lifespan would.
    """

    def __init__(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self.open: list[Console] = []

    def first(self, **overrides: Any) -> Console:
        settings = Settings(**{"data_dir": str(self._tmp / "restartable"), "token": TOKEN,
                               "allowed_hosts": "testserver", "request_idle_timeout_s": 20.0,
                               "stdio_shutdown_grace_s": 2.0, **overrides})
        console = Console(settings)
        self.open.append(console)
        return console

    async def restart(self, console: Console) -> Console:
        self.open.remove(console)
        await console.close()
        return self._again(console)

    def after_crash(self, console: Console) -> Console:
        """The next console as after a SIGKILL of this one: it never shut down; what its store committed is
        all the new one finds. (The crashed one is only closed at teardown.)"""
        console.manager.store.flush()
        return self._again(console)

    def _again(self, console: Console) -> Console:
        again = Console(console.settings)
        self.open.append(again)
        again.manager.restore()
        return again


@pytest.fixture
async def restarts(tmp_path: Path) -> AsyncIterator[ConsoleRestarts]:
    made = ConsoleRestarts(tmp_path)
    yield made
    for console in made.open:
        await console.close()


# --- a team's attacker: an HTTP server of its own (tests/integration/test_team_*.py) ---------------------------


class Catcher:
    """An HTTP server of the attacker's: it records every request it gets (and answers 200)."""

    def __init__(self, answer_headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        caught, headers = self.requests, dict(answer_headers or {})

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                caught.append((self.command, self.path, dict(self.headers.items())))
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _any

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="catcher", daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
