"""Real Chromium against a real console: `python -m app demo` runs as a subprocess for the whole folder.

The console starts the bundled demo server over HTTP and opens a session on it; its launch URL (printed once
the socket is bound) is how every browser context gets the owner cookie. Teardown stops the console (SIGTERM,
then SIGKILL after a timeout), kills by pid whatever it started and left behind (the HTTP demo server, stdio demo
servers), and checks that the console lived to the end and that the demo port is closed.
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, expect, sync_playwright

from tests.chromium import launch_options

ROOT = Path(__file__).resolve().parents[2]
# The console's own name: a random mcp-<16 chars>.localhost, which Chromium resolves to loopback.
LAUNCH_LINE = re.compile(
    r"MCP Console is running\. Open: (?P<url>http://mcp-[a-z2-7]{16}\.localhost:\d+/\?token=\S+&next=/sessions/\S+)")
DEMO_LINE = re.compile(r"Demo server: (?P<url>http://\S+)")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
LEFTOVER_GRACE_S = 3.0  # the console stops its demo server before it exits; orphans get this long
CONNECT_TIMEOUT_MS = 30_000  # a stdio demo server is a fresh Python process importing the SDK

expect.set_options(timeout=10_000)


@dataclass(frozen=True)
class Console:
    base: str  # http://mcp-<random>.localhost:PORT
    launch_url: str
    token: str
    session_id: str  # the session on the HTTP demo server that `demo` opens at start
    demo_url: str

    def url(self, path: str) -> str:
        return self.base + path

    @property
    def session_url(self) -> str:
        return self.url(f"/sessions/{self.session_id}")


def _read_lines(stream: object, lines: queue.Queue[str | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)
    lines.put(None)


def _wait_for_launch(proc: subprocess.Popen[str], lines: queue.Queue[str | None], log: Path) -> tuple[str, str]:
    deadline = time.monotonic() + START_TIMEOUT_S
    demo_url = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"The console printed no launch URL within {START_TIMEOUT_S} s; stderr in {log}")
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            continue
        if line is None:
            raise RuntimeError(f"The console exited (code {proc.wait()}) before it was ready: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        if match := DEMO_LINE.search(line):
            demo_url = match["url"]
        if match := LAUNCH_LINE.search(line):
            return match["url"], demo_url


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def wait_until(check: object, timeout_s: float) -> bool:
    """Polls a condition until it holds or the deadline passes (a bounded wait on a condition, not a sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(check())  # type: ignore[operator]


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT_S)


class RunningConsole:
    """`python -m app demo` as a subprocess, with what is needed to stop it and check that it left nothing behind."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.log = tmp / "console-stderr.log"
        self.died_early: int | None = None
        token = secrets.token_urlsafe(16)
        # --port 0: the console binds any free port and prints it in the launch URL, so there is no port race.
        with self.log.open("w") as err:
            # The token goes in the environment, as the README says to (a flag shows in `ps`).
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app", "demo", "--port", "0", "--data-dir", str(tmp / "data")],
                cwd=str(ROOT), stdout=subprocess.PIPE, stderr=err, text=True,
                env={**os.environ, "MCP_CONSOLE_TOKEN": token, **(env or {})})
        lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=_read_lines, args=(self.proc.stdout, lines), name="console-stdout", daemon=True).start()
        try:
            launch_url, demo_url = _wait_for_launch(self.proc, lines, self.log)
        except BaseException:
            self.kill_all(descendants(self.proc.pid))
            raise
        self.children = descendants(self.proc.pid)  # the demo server; kept in case the console dies early
        parts = urlsplit(launch_url)
        self.console = Console(base=f"{parts.scheme}://{parts.netloc}", launch_url=launch_url, token=token,
                               session_id=launch_url.rsplit("/sessions/", 1)[1], demo_url=demo_url)

    def terminate(self) -> set[int]:
        """SIGTERM (then SIGKILL after a timeout); returns the processes it started that are still alive."""
        # The HTTP demo server plus any stdio servers the tests started (their stdin closes if the console dies).
        started = self.children | descendants(self.proc.pid)
        self.died_early = self.proc.poll()
        _stop(self.proc)
        wait_until(lambda: not any(alive(pid) for pid in started), LEFTOVER_GRACE_S)
        return {pid for pid in started if alive(pid)}

    def demo_port_open(self) -> bool:
        demo = urlsplit(self.console.demo_url)
        return port_open(demo.hostname or "127.0.0.1", demo.port or 80)

    def kill_all(self, pids: set[int]) -> None:
        """Kills, by pid, what this run started and left behind, so it never leaks into other runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="package")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    running = RunningConsole(tmp_path_factory.mktemp("console"))
    try:
        assert running.console.demo_url, "the console did not print its 'Demo server: URL' line"
        yield running.console
    finally:
        left = running.terminate()
        running.kill_all(left)
    assert running.died_early is None, f"the console died during the tests (exit code {running.died_early})"
    # SIGTERM must stop the demo server too (test_console_process.py checks it); here leftovers are
    # only killed, as a safety net, so a regression there does not error every test.
    assert wait_until(lambda: not running.demo_port_open(), STOP_TIMEOUT_S), \
        f"something still listens on the demo port {running.console.demo_url} after teardown (killed {sorted(left)})"


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    # `page.request` runs in Playwright's Node driver, whose resolver (glibc's) does not map *.localhost to
    # loopback the way Chromium does; the preload makes it, so API requests reach the console's own name.
    hook = f"--require {Path(__file__).with_name('localhost_dns.cjs')}"
    previous = os.environ.get("NODE_OPTIONS")
    os.environ["NODE_OPTIONS"] = f"{previous} {hook}" if previous else hook
    try:
        with sync_playwright() as pw:
            yield pw
    finally:
        if previous is None:
            os.environ.pop("NODE_OPTIONS", None)
        else:
            os.environ["NODE_OPTIONS"] = previous


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(**launch_options())
    yield browser
    browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context()
    context.set_default_timeout(15_000)
    # Nothing outside this machine's loopback is ever loaded, whatever a hostile target links to.
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    yield context
    context.close()


def is_loopback_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss"):
        return True  # data:, blob:, about: never leave the browser
    host = (parts.hostname or "").lower()
    return host in ("127.0.0.1", "localhost", "::1") or host.endswith(".localhost")


def open_launch_url(page: Page, console: Console) -> None:
    """Opens the launch URL (which sets the owner cookie) and waits for the live session page."""
    page.goto(console.launch_url)
    expect(page).to_have_url(console.session_url)
    wait_live(page)


def wait_live(page: Page, timeout_ms: int = CONNECT_TIMEOUT_MS) -> None:
    """Waits until the session is connected and this tab's websocket is open."""
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=timeout_ms)
    expect(page.locator("body")).to_have_attribute("data-ws", "open")


@pytest.fixture
def page(context: BrowserContext, console: Console) -> Page:
    """A tab on the demo session, with the owner cookie set by the launch URL."""
    page = context.new_page()
    open_launch_url(page, console)
    return page
