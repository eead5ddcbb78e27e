"""Shared pieces of the benchmarks: start the demo server and the console as real processes, stop them
again (also on error or SIGTERM), small statistics, a table printer and the final JSON line.

Every wait here has a deadline; nothing waits on a fixed sleep when there is something to wait for.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
DEMO_READY = re.compile(r"demo server listening on (http://\S+)")
CONSOLE_READY = re.compile(r"Open: (http://\S+)")
START_TIMEOUT_S = 30.0


# -- processes --------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Linux: ask the kernel to SIGTERM the child if this benchmark dies without cleaning up (kill -9)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Proc:
    """A child process whose output lines are read by threads (so its pipes never fill) into a short tail."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.name = name
        self.popen = subprocess.Popen(
            argv, cwd=str(cwd or ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True, env={**os.environ, **(env or {})},
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        self.tail: deque[str] = deque(maxlen=40)
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.popen.stdout is not None and self.popen.stderr is not None
        for stream in (self.popen.stdout, self.popen.stderr):
            threading.Thread(target=self._read, args=(stream,), name=f"{name}-reader", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.tail.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, pattern: re.Pattern[str], timeout_s: float = START_TIMEOUT_S) -> re.Match[str]:
        """The first output line (stdout or stderr) matching `pattern`, within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        ended = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.name}: no line matching {pattern.pattern!r} within {timeout_s:g} s; "
                                   f"last output:\n" + "\n".join(self.tail))
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                ended += 1
                if ended == 2:
                    raise RuntimeError(f"{self.name} exited (code {self.popen.wait()}) before it was ready; "
                                       f"last output:\n" + "\n".join(self.tail))
                continue
            match = pattern.search(line)
            if match:
                return match

    def stop(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)


def start_demo() -> tuple[Proc, str]:
    proc = Proc("demo", [sys.executable, "-m", "app.demo", "--port", "0"])
    try:
        return proc, proc.wait_for(DEMO_READY).group(1)
    except BaseException:
        proc.stop()
        raise


def start_console(token: str, data_dir: str, launcher: Sequence[str] = ("-m", "app"),
                  env: dict[str, str] | None = None) -> tuple[Proc, str]:
    """The console as `python -m app serve` (or `launcher` instead of `-m app`, e.g. under bench.step_probe)."""
    port = free_port()
    # `--token=…` in one argument: a random token may start with "-", which argparse would take for an option.
    proc = Proc("console", [sys.executable, *launcher, "serve", "--port", str(port), f"--token={token}",
                            "--data-dir", data_dir], env=env)
    try:
        proc.wait_for(CONSOLE_READY)
    except BaseException:
        proc.stop()
        raise
    return proc, f"http://127.0.0.1:{port}"


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (psutil is not a dependency)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _sigterm_to_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


class Rig:
    """The demo server plus a console on free ports, a data directory of its own, and an owner token.

    `with Rig() as rig:` starts both; leaving the block (normally, on an exception, on Ctrl-C or SIGTERM)
    stops both and removes the data directory.
    """

    def __init__(self, launcher: Sequence[str] = ("-m", "app"), env: dict[str, str] | None = None) -> None:
        self.launcher, self.env = launcher, env
        self.token = secrets.token_urlsafe(16)
        self.data_dir = tempfile.mkdtemp(prefix="mcp-console-bench-")
        self.demo: Proc | None = None
        self.console: Proc | None = None
        self.demo_url = ""
        self.base = ""
        self.http: httpx.Client | None = None

    def __enter__(self) -> Rig:
        signal.signal(signal.SIGTERM, _sigterm_to_exit)
        m = machine()
        print(f"machine: {m['cpus']} CPUs, 1-minute load average {m['load_avg_1m']} at start"
              + (" (busy: expect noisy figures)" if m["load_avg_1m"] > (m["cpus"] or 1) * 0.5 else ""), flush=True)
        try:
            self.demo, self.demo_url = start_demo()
            self.console, self.base = start_console(self.token, self.data_dir, self.launcher, self.env)
            # Browsers use the console's own name (its cookies count only there); httpx keeps 127.0.0.1 + Bearer.
            name = (Path(self.data_dir) / "public_host").read_text().strip()
            self.public_base = f"http://{name}:{self.base.rsplit(':', 1)[1]}"
            self.http = httpx.Client(base_url=self.base, timeout=30.0,
                                     headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"})
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt | SystemExit):
            for proc in (self.console, self.demo):
                if proc is not None and proc.tail:
                    print(f"--- last output of the {proc.name} ---\n" + "\n".join(proc.tail), file=sys.stderr)
        self.close()

    def close(self) -> None:
        if self.http is not None:
            self.http.close()
        for proc in (self.console, self.demo):
            if proc is not None:
                proc.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    @property
    def client(self) -> httpx.Client:
        assert self.http is not None, "use the Rig in a with block"
        return self.http

    def open_demo_session(self, timeout_s: float = 20.0) -> str:
        """POST /sessions for the demo server over HTTP and wait until the session says connected."""
        r = self.client.post("/sessions", data={"kind": "http", "url": self.demo_url})
        r.raise_for_status()
        session_id = str(r.json()["id"])
        # "connected" is set after server/discover, before the lists arrive; a tools/call sent before
        # tools/list has answered would not know the tool's schema, so wait for both.
        wait_until(lambda: self._ready(session_id), timeout_s, f"session {session_id} to connect")
        return session_id

    def _ready(self, session_id: str) -> bool:
        data = self.client.get(f"/sessions/{session_id}.json").json()
        if data["status"] in ("failed", "closed"):
            raise RuntimeError(f"session {session_id} is {data['status']}: {data.get('status_message')}")
        tools = {t.get("name") for t in (data.get("lists") or {}).get("tools") or []}
        return data["status"] == "connected" and "echo" in tools

    def launch_url(self, session_id: str) -> str:
        return f"{self.base}/?token={self.token}&next=/sessions/{session_id}"


def wait_until(check: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)


# -- numbers ----------------------------------------------------------------------------------------------------

def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), p in 0..100."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def r(value: float, digits: int = 2) -> float:
    return round(value, digits)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                    strict=True))))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def machine() -> dict[str, Any]:
    """CPU count and load average: other work on the machine moves every figure here."""
    return {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def emit_json(bench: str, figures: dict[str, Any]) -> None:
    """The last line a benchmark prints: its figures as one JSON object (with the machine's load at the end)."""
    print(json.dumps({"bench": bench, **figures, "machine": machine()}, sort_keys=False), flush=True)


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[Callable[[], bool]]:
    """Yields `over()`, true once the budget is spent; loops check it so a run stays bounded in time."""
    deadline = time.monotonic() + seconds
    yield lambda: time.monotonic() > deadline


@contextlib.contextmanager
def team_services() -> Iterator[tuple[str, str]]:
    """A throwaway PostgreSQL (a fresh database) and redis-server on 127.0.0.1, stopped at the end: the
    start logic of the test fixtures (tests/services_pg.py, tests/services_redis.py), imported, not copied.
    Yields (database URL, Redis URL)."""
    from tests.services_pg import start_postgres
    from tests.services_redis import RedisServer

    postgres = start_postgres()
    redis = None
    try:
        redis = RedisServer().start()
        yield postgres.create_database(), redis.url
    finally:
        if redis is not None:
            redis.close()
        postgres.stop()
        shutil.rmtree(postgres.root, ignore_errors=True)
