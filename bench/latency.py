"""Backend added latency per trivial `tools/call`: through the console vs straight to the demo server.

Both series call the demo server's `echo` tool with `{"text": "hi"}`:

- console: `POST /sessions/{id}/tools/call` (form `tool=echo&arg.text=hi`, `Accept: application/json`), which
  parses the form, runs the call as an operation, records the timeline and answers with JSON;
- direct: an httpx POST of the very JSON-RPC body and 2026-07-28 headers the console sent (copied from its own
  reply and wire record, with a fresh id each time) to the demo server.

Each side has one shared keep-alive httpx.Client; calls are interleaved A/B/B/A so drift (CPU frequency, other
load) hits both series alike. The timer wraps the whole client call, including reading and parsing the JSON.

    .venv/bin/python -m bench.latency [--calls 200] [--warmup 20]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx

from bench.common import Rig, cpu_seconds, emit_json, median, percentile, print_table, r, rss_mb

COPIED_HEADERS = ("content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name")


def console_call(rig: Rig, session_id: str) -> dict[str, Any]:
    reply = rig.client.post(f"/sessions/{session_id}/tools/call", data={"tool": "echo", "arg.text": "hi"})
    reply.raise_for_status()
    data: dict[str, Any] = reply.json()
    if not data.get("ok") or data["result"]["content"][0]["text"] != "hi":
        raise RuntimeError(f"console call failed: {data}")
    return data


def request_template(rig: Rig, session_id: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON-RPC body and HTTP headers the console sends for this call, read back from the console."""
    data = console_call(rig, session_id)
    wire = rig.client.get(f"/sessions/{session_id}/entries/{data['key']}.json").json()["wire"]
    out = next(w for w in wire if w["direction"] == "out")
    headers = {k: v for k, v in out["headers"] if k.lower() in COPIED_HEADERS or k.lower().startswith("mcp-param-")}
    body = {"jsonrpc": "2.0", "id": data["id"], "method": "tools/call", "params": data["params"]}
    return body, headers


def direct_call(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]) -> None:
    reply = client.post(url, json=body, headers=headers)
    reply.raise_for_status()
    data = reply.json()
    if data.get("id") != body["id"] or data["result"]["content"][0]["text"] != "hi":
        raise RuntimeError(f"direct call failed: {data}")


def run(calls: int, warmup: int) -> dict[str, Any]:
    with Rig() as rig, httpx.Client(timeout=30.0) as direct:
        session_id = rig.open_demo_session()
        body, headers = request_template(rig, session_id)
        next_id = 1_000_000

        def one_direct() -> float:
            nonlocal next_id
            next_id += 1
            t0 = time.perf_counter()
            direct_call(direct, rig.demo_url, {**body, "id": next_id}, headers)
            return (time.perf_counter() - t0) * 1000

        upstream: list[float] = []

        def one_console() -> float:
            t0 = time.perf_counter()
            data = console_call(rig, session_id)
            elapsed = (time.perf_counter() - t0) * 1000
            upstream.append(float(data["duration_ms"]))
            return elapsed

        for _ in range(warmup):
            one_console()
            one_direct()
        upstream.clear()
        # The console's CPU time over the measured calls: its own work per call, much less moved by the other
        # load on the machine than wall-clock time is (the direct calls cost the console nothing).
        cpu0 = cpu_seconds(rig.console.pid) if rig.console is not None else None
        via_console: list[float] = []
        straight: list[float] = []
        for i in range(calls):
            if i % 2 == 0:
                via_console.append(one_console())
                straight.append(one_direct())
            else:
                straight.append(one_direct())
                via_console.append(one_console())
        console_rss = rss_mb(rig.console.pid) if rig.console is not None else None
        cpu_ms = (cpu_seconds(rig.console.pid) - cpu0) * 1000 / calls \
            if rig.console is not None and cpu0 is not None else None

    c50, c95 = median(via_console), percentile(via_console, 95)
    d50, d95 = median(straight), percentile(straight, 95)
    u50, u95 = median(upstream), percentile(upstream, 95)
    print_table(f"tools/call echo, {calls} calls each side (after {warmup} warm-up), interleaved; ms",
                ["path", "median", "p95", "min", "max"],
                [["direct httpx → demo", d50, d95, min(straight), max(straight)],
                 ["console → demo", c50, c95, min(via_console), max(via_console)],
                 ["(console's own upstream timing)", u50, u95, min(upstream), max(upstream)]])
    print_table("added latency", ["figure", "value"],
                [["median ratio console/direct (goal ≤ 2.0×; Inspector 2.8×)", f"{c50 / d50:.2f}×"],
                 ["p95 ratio console/direct (goal ≤ 2.5×; Inspector 4.0×)", f"{c95 / d95:.2f}×"],
                 ["console-internal overhead, median(console) − median(direct)", f"{c50 - d50:.2f} ms"],
                 ["console's upstream time / direct, median (goal ≤ 1.1×)", f"{u50 / d50:.2f}×"],
                 ["console CPU time per call", f"{cpu_ms:.2f} ms" if cpu_ms is not None else "?"]])
    return {"calls": calls, "warmup": warmup,
            "console_ms": {"median": r(c50, 3), "p95": r(c95, 3)},
            "direct_ms": {"median": r(d50, 3), "p95": r(d95, 3)},
            "console_upstream_ms": {"median": r(u50, 3), "p95": r(u95, 3)},
            "ratio_upstream_median": r(u50 / d50, 3),
            "console_cpu_ms_per_call": r(cpu_ms, 3) if cpu_ms is not None else None,
            "ratio_median": r(c50 / d50, 3), "ratio_p95": r(c95 / d95, 3),
            "overhead_median_ms": r(c50 - d50, 3),
            "console_rss_mb": r(console_rss, 1) if console_rss is not None else None}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=200, help="measured calls per side (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="warm-up calls per side (default 20)")
    args = p.parse_args(argv)
    if not 1 <= args.calls <= 100_000 or not 0 <= args.warmup <= 10_000:
        p.error("--calls must be 1..100000 and --warmup 0..10000")
    emit_json("latency", run(args.calls, args.warmup))


if __name__ == "__main__":
    main()
