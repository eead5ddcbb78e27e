"""A big session against a small one: page, JSON twin, a filter, session file export and import, RSS.

Method. The sessions are recorded in-process through the console's own recording path: a SessionManager on
a fresh data directory creates them and every entry goes through `Timeline.append` as typed records
(exchange started, the two wire frames, exchange finished), exactly what a real call appends; nothing writes
the database directly. Then a console process is started on that data directory (it restores both) and each
figure is taken for the small and the big session in turn, interleaved, several times (medians): the HTML
page, the JSON twin's first page, a `?q=` filter, the session file export, and its import. The console's RSS
is read idle (after start) and at the end.

    .venv/bin/python -m bench.big_session [--entries 100000] [--repeat 3] [--database-url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from typing import Any

import httpx

from app.console.events import ExchangeFinished, ExchangeStarted, Wire
from app.console.manager import SessionManager
from app.console.target import Target
from app.settings import Settings
from bench.common import Rig, cpu_seconds, emit_json, machine, median, print_table, r, rss_mb, start_console, wait_until

SMALL = 10


def _record(manager: SessionManager, entries: int) -> str:
    session = manager.create(Target(kind="http", url="http://127.0.0.1:9/mcp"))
    timeline = session.timeline
    for i in range(1, entries + 1):
        key = f"b{i}"
        request = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"text": f"call-{i}."}}})
        answer = json.dumps({"jsonrpc": "2.0", "id": i,
                             "result": {"content": [{"type": "text", "text": f"call-{i}."}]}})
        timeline.append(ExchangeStarted(key=key, method="tools/call", name="echo", id=i))
        timeline.append(Wire(direction="out", raw=request, frame_kind="request", exchange=key, wall=time.time()))
        timeline.append(Wire(direction="in", raw=answer, frame_kind="response", exchange=key, http_status=200,
                             wall=time.time()))
        timeline.append(ExchangeFinished(key=key, status="ok", duration_ms=1.5, bytes_in=len(answer),
                                         http_status=200))
    manager.store.save_session(session.id, session.meta(), session.created, session.last_activity)
    return session.id


async def _record_both(data_dir: str, entries: int, database_url: str = "") -> tuple[str, str]:
    settings = Settings.from_env({}, data_dir=data_dir, database_url=database_url)  # the store: open_store's pick
    manager = SessionManager(settings, lambda event: None)
    try:
        return _record(manager, SMALL), _record(manager, entries)
    finally:
        manager.store.flush()
        manager.store.close()
        await manager.http.aclose()


def _timed(client: httpx.Client, method: str, url: str, **kw: Any) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    response = client.request(method, url, **kw)
    response.raise_for_status()
    return (time.perf_counter() - t0) * 1000, response


def _measure(client: httpx.Client, sid: str, entries: int, pid: int) -> dict[str, float]:
    page_ms, _ = _timed(client, "GET", f"/sessions/{sid}", headers={"Accept": "text/html"})
    json_ms, _ = _timed(client, "GET", f"/sessions/{sid}.json")
    filter_ms, found = _timed(client, "GET", f"/sessions/{sid}.json", params={"q": f"b{entries // 2}"})
    matches = found.json()
    assert matches["matches"] >= 1 and matches["timeline"][0]["key"] == f"b{entries // 2}", matches["matches"]
    status_ms, _ = _timed(client, "GET", f"/sessions/{sid}.json", params={"status": "ok", "method": "tools/call"})
    with tempfile.TemporaryFile() as file:
        # Streamed both ways, in big pieces, so the figure is the console's and not this client's buffering.
        # The console's CPU seconds beside each wall time: on a shared machine the CPU figure moves less.
        t0, c0 = time.perf_counter(), cpu_seconds(pid)
        with client.stream("GET", f"/sessions/{sid}/export.json") as response:
            response.raise_for_status()
            for piece in response.iter_bytes(1 << 20):
                file.write(piece)
        export_ms, export_cpu = (time.perf_counter() - t0) * 1000, cpu_seconds(pid) - c0
        size = file.tell()
        file.seek(0)
        c0 = cpu_seconds(pid)
        import_ms, imported = _timed(client, "POST", "/sessions/import", content=iter(lambda: file.read(1 << 20), b""),
                                     headers={"Content-Type": "application/json", "Content-Length": str(size)})
        import_cpu = cpu_seconds(pid) - c0
    client.post(f"/sessions/{imported.json()['id']}/delete")  # the next run starts from the same store
    return {"page_ms": page_ms, "json_ms": json_ms, "filter_ms": filter_ms, "filter_status_ms": status_ms,
            "export_ms": export_ms, "export_cpu_s": export_cpu, "import_ms": import_ms, "import_cpu_s": import_cpu,
            "file_mb": size / 2**20}


def idle_with_demo() -> float:
    """RSS (MB) of a fresh console on an empty data directory with one demo session open, settled."""
    with Rig() as rig:
        rig.open_demo_session()
        wait_until(lambda: rig.client.get("/sessions.json").status_code == 200, 10.0, "the console to answer")
        return rss_mb(rig.console.pid) if rig.console is not None else float("nan")


class PeakRss:
    """The highest RSS of a process while the block runs, sampled from /proc on a thread."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.peak = pid, every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_mb(self.pid))
            if self._stop.wait(self.every_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def first_paint(base: str, token: str, sessions: dict[str, str], repeat: int) -> dict[str, float]:
    """First contentful paint (ms) of each session page in Chromium, interleaved, medians."""
    from bench.browser import chromium
    from tests.browser.conftest import is_loopback_url

    paints: dict[str, list[float]] = {side: [] for side in sessions}
    with chromium() as context:
        context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
        first = context.new_page()
        first.goto(f"{base}/?token={token}", wait_until="load")  # sets the owner cookie (on the public host)
        public = first.url.rstrip("/")
        first.close()
        for _ in range(repeat):
            for side, sid in sessions.items():
                page = context.new_page()
                page.goto(f"{public}/sessions/{sid}", wait_until="load")
                fcp = page.wait_for_function(
                    "() => performance.getEntriesByType('paint')"
                    ".find(e => e.name === 'first-contentful-paint')?.startTime", timeout=30_000).json_value()
                paints[side].append(float(fcp))
                page.close()
    return {side: r(median(xs)) for side, xs in paints.items()}


def run(entries: int, repeat: int, database_url: str = "") -> dict[str, Any]:
    m = machine()
    print(f"machine: {m['cpus']} CPUs, 1-minute load average {m['load_avg_1m']} at start", flush=True)
    fresh_idle = idle_with_demo()
    print(f"fresh console with the demo session: RSS {fresh_idle:.1f} MB", flush=True)
    data_dir = tempfile.mkdtemp(prefix="mcp-console-big-")
    console = None
    try:
        t0 = time.monotonic()
        small, big = asyncio.run(_record_both(data_dir, entries, database_url))
        record_s = time.monotonic() - t0
        print(f"recorded {SMALL} and {entries:,} entries in {record_s:.1f} s", flush=True)
        token = secrets.token_urlsafe(16)
        if database_url:  # the console process (which inherits the environment) opens the same database
            os.environ["MCP_CONSOLE_DATABASE_URL"] = database_url
        console, base = start_console(token, data_dir)
        idle = rss_mb(console.pid)
        runs: dict[str, list[dict[str, float]]] = {"small": [], "big": []}
        with httpx.Client(base_url=base, timeout=120.0,
                          headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}) as client, \
                PeakRss(console.pid) as peak:
            for _ in range(repeat):  # interleaved: a drift in the machine's load hits both sides alike
                runs["small"].append(_measure(client, small, SMALL, console.pid))
                runs["big"].append(_measure(client, big, entries, console.pid))
        after = rss_mb(console.pid)
        paint = first_paint(base, token, {"small": small, "big": big}, repeat)
    finally:
        if console is not None:
            console.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    figures = {side: {k: r(median([x[k] for x in xs])) for k in xs[0]} for side, xs in runs.items()}
    for side in figures:
        figures[side]["first_paint_ms"] = paint[side]
    keys = list(figures["small"])
    print_table(f"medians of {repeat} runs; ms (file MB)", ["figure", f"{SMALL} entries", f"{entries:,} entries"],
                [[k, figures["small"][k], figures["big"][k]] for k in keys])
    print(f"\nconsole RSS: fresh with the demo session {fresh_idle:.1f} MB; with both sessions restored: "
          f"idle {idle:.1f} MB, peak {peak.peak:.1f} MB, after {after:.1f} MB. Goals at 100,000: "
          "first paint < 1 s, JSON first page < 200 ms, filter < 300 ms, export and import < 10 s each, "
          "RSS < 150 MB, idle RSS ≤ 100 MB.")
    print(f"load average at the end: {machine()['load_avg_1m']}")
    return {"entries": entries, "repeat": repeat, "record_s": r(record_s, 1), **figures,
            "rss_mb": {"fresh_idle_demo": r(fresh_idle, 1), "idle_big": r(idle, 1), "peak": r(peak.peak, 1),
                       "after": r(after, 1)},
            "load_avg_1m_end": machine()["load_avg_1m"]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.big_session", description=__doc__.split("\n")[0])
    p.add_argument("--entries", type=int, default=100_000, help="entries in the big session (default 100000)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs per side (default 3)")
    p.add_argument("--database-url", default="", help="an empty PostgreSQL database to run on "
                   "(postgresql://…; default: SQLite in a temporary data directory)")
    args = p.parse_args(argv)
    if not 1 <= args.entries <= 1_000_000 or not 1 <= args.repeat <= 20:
        p.error("--entries must be 1..1000000 and --repeat 1..20")
    emit_json("big_session", run(args.entries, args.repeat, args.database_url))


if __name__ == "__main__":
    main()
