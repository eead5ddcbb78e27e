"""How long a call's path is: the Python calls the console and the floor proxy make for one `tools/call`.

Both run under `bench/call_probe.py`, which counts every Python function call (and every call into C) on the event
loop's thread for three requests after a warm-up (each step taken from the request that made the fewest calls
in it), in three steps: the request in until its bytes are on the target's
socket, the wait for the target's answer head, and the answer head until the answer is handed to uvicorn. The
console is called as in `bench.latency`; the floor (`bench/floor_proxy.py`) forwards the same request and records
and checks nothing. Unlike a time, a count is the same on a busy machine and a quiet one (it moves only with the
code, and by a few calls with what the loop happens to run in the wait), so it can be compared across commits.

    .venv/bin/python -m bench.call_path [--at 200] [--top 12]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.call_probe import COUNTED
from bench.common import Proc, Rig, emit_json, free_port, print_table
from bench.latency import console_call, request_template
from bench.latency_floor import FLOOR_READY

STEPS = [("in", "request in → its bytes on the target's socket"), ("wait", "the wait for the answer head"),
         ("out", "answer head → the answer handed to uvicorn")]


def _wait_for(path: Path, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no counts were written to {path}")
        time.sleep(0.05)  # a bench script polling a file another process writes; not a test
    counts: list[dict[str, Any]] = json.loads(path.read_text())  # one entry per request counted
    return counts


def least(counted: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the requests counted, each step as the one that made the fewest Python calls in it: what else the loop
    ran inside a request's step (a timer, another task) is in some of them, not in the path itself."""
    out: dict[str, Any] = {"python": {}, "native": {}}
    for step, _ in STEPS:
        fewest = min(counted, key=lambda c: sum(c["python"][step].values()))
        out["python"][step], out["native"][step] = fewest["python"][step], fewest["native"][step]
    return out


def by_module(calls: dict[str, int]) -> Counter[str]:
    out: Counter[str] = Counter()
    for where, n in calls.items():
        out[where.rsplit(":", 1)[0]] += n
    return out


def run(at: int, top: int) -> dict[str, Any]:
    probe_dir = Path(tempfile.mkdtemp(prefix="mcp-console-calls-"))
    console_out, floor_out = probe_dir / "console.json", probe_dir / "floor.json"
    env = {"BENCH_CALL_PROBE_AT": str(at)}
    with Rig(["-m", "bench.call_probe", "app"], {**env, "BENCH_CALL_PROBE_OUT": str(console_out)}) as rig, \
            httpx.Client(timeout=30.0) as floor_client:
        session_id = rig.open_demo_session()
        body, headers = request_template(rig, session_id)
        floor = Proc("floor", [sys.executable, "-m", "bench.call_probe", "bench.floor_proxy", rig.demo_url,
                               json.dumps(headers), json.dumps(body), str(free_port())],
                     env={**env, "BENCH_CALL_PROBE_OUT": str(floor_out)})
        try:
            floor_url = floor.wait_for(FLOOR_READY).group(1) + f"/sessions/{session_id}/tools/call"
            for i in range(at + COUNTED + 1):  # the template's call counted as the console's first
                if at - 2 <= i < at - 2 + COUNTED:
                    # The call counted comes after the last one's held events are stored (HOLD_S after its answer),
                    # as in bench.latency, where they are stored in the next call's wait: not on its path.
                    time.sleep(0.2)
                console_call(rig, session_id)
                floor_client.post(floor_url, data={"tool": "echo", "arg.text": "hi"},
                                  headers={"Accept": "application/json"}).raise_for_status()
            console, floor_counts = least(_wait_for(console_out)), least(_wait_for(floor_out))
        finally:
            floor.stop()
    keep = os.environ.get("BENCH_CALL_PATH_KEEP")  # a directory to leave the raw counts in, for a closer look
    for path in (console_out, floor_out):
        if keep:
            path.replace(Path(keep) / path.name)
        path.unlink(missing_ok=True)
    os.rmdir(probe_dir)

    rows, figures = [], {}
    for step, label in STEPS:
        c_py, f_py = console["python"][step], floor_counts["python"][step]
        c_c, f_c = console["native"][step], floor_counts["native"][step]
        rows.append([label, sum(c_py.values()), len(c_py), sum(c_c.values()), sum(f_py.values()), len(f_py),
                     sum(f_c.values())])
        figures[step] = {"console": {"python_calls": sum(c_py.values()), "functions": len(c_py),
                                     "native_calls": sum(c_c.values()),
                                     # its own code's share: what a change to app/ moves, whatever the libraries do
                                     "app_calls": sum(n for where, n in c_py.items() if where.startswith("app/"))},
                         "floor": {"python_calls": sum(f_py.values()), "functions": len(f_py),
                                   "native_calls": sum(f_c.values())}}
    print_table(f"one tools/call (request {at}), calls on the event loop's thread",
                ["step", "console: Python", "functions", "C", "floor: Python", "functions", "C"], rows)
    for step in ("in", "out"):
        modules = by_module(console["python"][step]).most_common(top)
        print_table(f"the console's Python calls by module, step {step!r} (top {top})", ["module", "calls"],
                    [[m, n] for m, n in modules])
        figures[step]["console_top_modules"] = dict(modules)
    return {"at": at, **figures}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.call_path", description=__doc__.split("\n")[0])
    p.add_argument("--at", type=int, default=200, help="the request counted, after this many (default 200)")
    p.add_argument("--top", type=int, default=12, help="modules listed per step (default 12)")
    args = p.parse_args(argv)
    if not 2 <= args.at <= 10_000 or not 1 <= args.top <= 100:
        p.error("--at must be 2..10000 and --top 1..100")
    emit_json("call_path", run(args.at, args.top))


if __name__ == "__main__":
    main()
