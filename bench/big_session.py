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
import time
from typing import Any

import httpx

from app.console.events import ExchangeFinished, ExchangeStarted, Wire
from app.console.manager import SessionManager
from app.console.target import Target
from app.settings import Settings
from bench.common import emit_json, machine, median, print_table, r, rss_mb, start_console

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


def _measure(client: httpx.Client, sid: str, entries: int) -> dict[str, float]:
    page_ms, _ = _timed(client, "GET", f"/sessions/{sid}", headers={"Accept": "text/html"})
    json_ms, _ = _timed(client, "GET", f"/sessions/{sid}.json")
    filter_ms, _ = _timed(client, "GET", f"/sessions/{sid}.json", params={"q": f"call-{entries // 2}."})
    export_ms, exported = _timed(client, "GET", f"/sessions/{sid}/export.json")
    import_ms, _ = _timed(client, "POST", "/sessions/import", content=exported.content,
                          headers={"Content-Type": "application/json"})
    return {"page_ms": page_ms, "json_ms": json_ms, "filter_ms": filter_ms, "export_ms": export_ms,
            "import_ms": import_ms, "file_mb": len(exported.content) / 2**20}


def run(entries: int, repeat: int, database_url: str = "") -> dict[str, Any]:
    m = machine()
    print(f"machine: {m['cpus']} CPUs, 1-minute load average {m['load_avg_1m']} at start", flush=True)
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
                          headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}) as client:
            for _ in range(repeat):  # interleaved: a drift in the machine's load hits both sides alike
                runs["small"].append(_measure(client, small, SMALL))
                runs["big"].append(_measure(client, big, entries))
        after = rss_mb(console.pid)
    finally:
        if console is not None:
            console.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    figures = {side: {k: r(median([x[k] for x in xs])) for k in xs[0]} for side, xs in runs.items()}
    keys = list(figures["small"])
    print_table(f"medians of {repeat} runs; ms (file MB)", ["figure", f"{SMALL} entries", f"{entries:,} entries"],
                [[k, figures["small"][k], figures["big"][k]] for k in keys])
    print(f"\nconsole RSS: idle {idle:.1f} MB, after {after:.1f} MB. Goals at 100,000: JSON first page < 200 ms, "
          "filter < 300 ms, export and import < 10 s each, RSS < 150 MB, idle RSS ≤ 100 MB.")
    return {"entries": entries, "repeat": repeat, "record_s": r(record_s, 1), **figures,
            "rss_mb": {"idle": r(idle, 1), "after": r(after, 1)}}


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
