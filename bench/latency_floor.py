"""What stands in the way of the latency goal: the console against the least a Python proxy could do, and direct.

Four series in one run, interleaved (the order reversed every other round): the direct httpx POST to the demo
server and the console's `tools/call` exactly as `bench.latency` makes them, and the same call through two bare
forwarders that record and check nothing:

- `bench/floor_proxy.py` ("floor"), an ASGI app on the console's own parts (uvicorn, httptools, uvloop, the lean
  client): what a second Python hop costs on this machine as an ASGI app, before the console does anything;
- `bench/raw_floor.py` ("raw floor"), asyncio Protocols with no ASGI server, no task and no await: the request
  parsed and the target's request written in one callback, the answer in another. The least any Python hop costs.

and a fifth, "checks + floor": a second console process run under `bench/door_floor.py`, whose front door makes
all of its access checks and then forwards as the floor does. The console's distance above the floor is all of its
own work (access checks, the form, the operation, the wire records, the answer); its distance above "checks +
floor" is its call path after the checks. Prints medians and p95 of each, the ratios, each process's CPU time per
call, and one JSON line.

    .venv/bin/python -m bench.latency_floor [--calls 1000] [--warmup 30]
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import shutil
import sys
import tempfile
import time
from typing import Any

import httpx

from bench.common import (
    CONSOLE_READY,
    Proc,
    Rig,
    cpu_seconds,
    emit_json,
    free_port,
    median,
    percentile,
    print_table,
    r,
)
from bench.latency import console_call, direct_call, request_template

FLOOR_READY = re.compile(r"floor proxy listening on (http://\S+)")


def run(calls: int, warmup: int) -> dict[str, Any]:
    with Rig() as rig, httpx.Client(timeout=30.0) as direct, httpx.Client(timeout=30.0) as floor_client, \
            httpx.Client(timeout=30.0) as raw_client:
        session_id = rig.open_demo_session()
        body, headers = request_template(rig, session_id)
        args = [rig.demo_url, json.dumps(headers), json.dumps(body)]
        floor = Proc("floor", [sys.executable, "-m", "bench.floor_proxy", *args, str(free_port())])
        raw = Proc("raw floor", [sys.executable, "-m", "bench.raw_floor", *args, str(free_port())])
        token, door_port = secrets.token_urlsafe(16), free_port()
        data_dir = tempfile.mkdtemp(prefix="mcp-console-door-")
        door = Proc("checks + floor", [sys.executable, "-m", "bench.door_floor", "app", "serve", "--port",
                                       str(door_port), f"--token={token}", "--data-dir", data_dir],
                    env={"BENCH_DOOR_FLOOR": json.dumps({"target": rig.demo_url, "headers": headers, "body": body})})
        door_client = httpx.Client(base_url=f"http://127.0.0.1:{door_port}", timeout=30.0,
                                   headers={"Authorization": f"Bearer {token}"})
        try:
            door.wait_for(CONSOLE_READY)
            path = f"/sessions/{session_id}/tools/call"
            floor_url = floor.wait_for(FLOOR_READY).group(1) + path
            raw_url = raw.wait_for(FLOOR_READY).group(1) + path
            next_id = [1_000_000]

            def one_direct() -> float:
                next_id[0] += 1
                t0 = time.perf_counter()
                direct_call(direct, rig.demo_url, {**body, "id": next_id[0]}, headers)
                return (time.perf_counter() - t0) * 1000

            def through(client: httpx.Client, url: str) -> float:
                t0 = time.perf_counter()
                reply = client.post(url, data={"tool": "echo", "arg.text": "hi"},
                                    headers={"Accept": "application/json"})
                reply.raise_for_status()
                if reply.json()["result"]["content"][0]["text"] != "hi":
                    raise RuntimeError(f"floor call failed: {reply.text}")
                return (time.perf_counter() - t0) * 1000

            def one_floor() -> float:
                return through(floor_client, floor_url)

            def one_raw() -> float:
                return through(raw_client, raw_url)

            def one_door() -> float:
                return through(door_client, path)

            def one_console() -> float:
                t0 = time.perf_counter()
                console_call(rig, session_id)
                return (time.perf_counter() - t0) * 1000

            series: dict[str, list[float]] = {"direct": [], "raw floor": [], "floor": [], "checks + floor": [],
                                              "console": []}
            order = [("direct", one_direct), ("raw floor", one_raw), ("floor", one_floor),
                     ("checks + floor", one_door), ("console", one_console)]
            for _ in range(warmup):
                for _, call in order:
                    call()
            assert rig.console is not None
            pids = {"raw floor": raw.pid, "floor": floor.pid, "checks + floor": door.pid, "console": rig.console.pid}
            cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
            for i in range(calls):
                for name, call in (order if i % 2 == 0 else order[::-1]):
                    series[name].append(call())
            cpu = {name: (cpu_seconds(pid) - cpu0[name]) * 1000 / calls for name, pid in pids.items()}
        finally:
            door_client.close()
            for proc in (floor, raw, door):
                proc.stop()
            shutil.rmtree(data_dir, ignore_errors=True)

    d50, d95 = median(series["direct"]), percentile(series["direct"], 95)
    rows, figures = [], {}
    for name, values in series.items():
        m, p = median(values), percentile(values, 95)
        rows.append([name, m, p, f"{m / d50:.2f}×", f"{p / d95:.2f}×", f"{cpu[name]:.2f}" if name in cpu else "—"])
        figures[name.replace(" + ", "_").replace(" ", "_")] = {
            "median_ms": r(m, 3), "p95_ms": r(p, 3), "ratio_median": r(m / d50, 3),
            "ratio_p95": r(p / d95, 3), **({"cpu_ms_per_call": r(cpu[name], 3)} if name in cpu else {})}
    print_table(f"tools/call echo, {calls} calls each, interleaved; ms", ["path", "median", "p95", "× direct (median)",
                                                                        "× direct (p95)", "CPU ms/call"], rows)
    return {"calls": calls, "warmup": warmup, **figures}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency_floor", description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=1000, help="measured calls per series (default 1000)")
    p.add_argument("--warmup", type=int, default=30, help="warm-up calls per series (default 30)")
    args = p.parse_args(argv)
    if not 1 <= args.calls <= 100_000 or not 0 <= args.warmup <= 10_000:
        p.error("--calls must be 1..100000 and --warmup 0..10000")
    emit_json("latency_floor", run(args.calls, args.warmup))


if __name__ == "__main__":
    main()
