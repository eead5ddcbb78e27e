"""Before and after in one run: the console of another tree against this one, and both against the direct call.

Three series, interleaved (the order reversed every other round), on one demo server: the direct httpx POST and
this tree's console exactly as `bench.latency` makes them, and the same `tools/call` through a second console
started from `--base`, a directory holding another commit's tree (`git archive <commit> | tar -x -C DIR`), run by
the same Python and virtualenv (`python -m app` there imports that tree's `app`). Whatever else the machine does
hits all three alike, so the two ratios can be compared even when the machine is busy. Prints median and p95 of
each, their ratios to the direct call, each console's CPU time per call, and one JSON line.

    .venv/bin/python -m bench.latency_ab --base /tmp/base [--calls 1000] [--warmup 30]
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
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


def _base_session(client: httpx.Client, demo_url: str, timeout_s: float = 20.0) -> str:
    reply = client.post("/sessions", data={"kind": "http", "url": demo_url})
    reply.raise_for_status()
    session_id = str(reply.json()["id"])
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        data = client.get(f"/sessions/{session_id}.json").json()
        tools = {t.get("name") for t in (data.get("lists") or {}).get("tools") or []}
        if data["status"] == "connected" and "echo" in tools:
            return session_id
        time.sleep(0.05)
    raise RuntimeError(f"the base console's session {session_id} did not connect")


def run(base: Path, calls: int, warmup: int) -> dict[str, Any]:
    token, data_dir, port = secrets.token_urlsafe(16), tempfile.mkdtemp(prefix="mcp-console-ab-"), free_port()
    with Rig() as rig, httpx.Client(timeout=30.0) as direct:
        session_id = rig.open_demo_session()
        body, headers = request_template(rig, session_id)
        other = Proc("base console", [sys.executable, "-m", "app", "serve", "--port", str(port), f"--token={token}",
                                      "--data-dir", data_dir], cwd=base)
        try:
            other.wait_for(CONSOLE_READY)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0,
                              headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}) as client:
                base_session = _base_session(client, rig.demo_url)

                class BaseSide:  # what console_call needs of a Rig
                    pass

                base_side: Any = BaseSide()
                base_side.client = client
                next_id = [2_000_000]

                def one_direct() -> float:
                    next_id[0] += 1
                    t0 = time.perf_counter()
                    direct_call(direct, rig.demo_url, {**body, "id": next_id[0]}, headers)
                    return (time.perf_counter() - t0) * 1000

                def one_this() -> float:
                    t0 = time.perf_counter()
                    console_call(rig, session_id)
                    return (time.perf_counter() - t0) * 1000

                def one_base() -> float:
                    t0 = time.perf_counter()
                    console_call(base_side, base_session)
                    return (time.perf_counter() - t0) * 1000

                series: dict[str, list[float]] = {"direct": [], "this": [], "base": []}
                order = [("direct", one_direct), ("this", one_this), ("base", one_base)]
                for _ in range(warmup):
                    for _, call in order:
                        call()
                assert rig.console is not None
                pids = {"this": rig.console.pid, "base": other.pid}
                cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
                for i in range(calls):
                    for name, call in (order if i % 2 == 0 else order[::-1]):
                        series[name].append(call())
                cpu = {name: (cpu_seconds(pid) - cpu0[name]) * 1000 / calls for name, pid in pids.items()}
        finally:
            other.stop()
            shutil.rmtree(data_dir, ignore_errors=True)

    d50, d95 = median(series["direct"]), percentile(series["direct"], 95)
    rows, figures = [], {}
    for name, values in series.items():
        m, p = median(values), percentile(values, 95)
        label = {"direct": "direct", "this": "this tree", "base": f"base ({base})"}[name]
        rows.append([label, m, p, f"{m / d50:.2f}×", f"{p / d95:.2f}×", f"{cpu[name]:.2f}" if name in cpu else "—"])
        figures[name] = {"median_ms": r(m, 3), "p95_ms": r(p, 3), "ratio_median": r(m / d50, 3),
                         "ratio_p95": r(p / d95, 3), **({"cpu_ms_per_call": r(cpu[name], 3)} if name in cpu else {})}
    print_table(f"tools/call echo, {calls} calls each, interleaved; ms",
                ["path", "median", "p95", "× direct (median)", "× direct (p95)", "CPU ms/call"], rows)
    return {"calls": calls, "warmup": warmup, "base_tree": str(base), **figures}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency_ab", description=__doc__.split("\n")[0])
    p.add_argument("--base", type=Path, required=True, help="a directory holding the other commit's tree")
    p.add_argument("--calls", type=int, default=1000, help="measured calls per series (default 1000)")
    p.add_argument("--warmup", type=int, default=30, help="warm-up calls per series (default 30)")
    args = p.parse_args(argv)
    if not (args.base / "app" / "__main__.py").is_file():
        p.error(f"--base {args.base} holds no console tree (no app/__main__.py)")
    if not 1 <= args.calls <= 100_000 or not 0 <= args.warmup <= 10_000:
        p.error("--calls must be 1..100000 and --warmup 0..10000")
    emit_json("latency_ab", run(args.base.resolve(), args.calls, args.warmup))


if __name__ == "__main__":
    main()
