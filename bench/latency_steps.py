"""Where a call's wall time goes inside the console, step by step, beside the floor proxy's same steps.

`bench.latency_floor` says how far the console is above the least a Python hop could do; this says at which step.
The console and `bench/floor_proxy.py` both run under `bench.step_probe`, which stamps the same points in both
(the request read, the app called, the request to the target on its socket, the target's answer head, the answer
given to uvicorn, the answer on the client's socket). The direct call, the floor and the console are interleaved
as in `bench.latency_floor`; afterwards the stamps of the measured calls are read back and the median of each step
is printed for both, with the console's flush of held events inside its wait for the target (recording that runs
while the target works: its length, and how long after it the answer came).

    .venv/bin/python -m bench.latency_steps [--calls 2000] [--warmup 30] [--fine]

With `--fine` the console also stamps its own layers and the step between each two is printed: where inside
"app called → request on the target's socket" and "answer head → the answer" the time goes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import Proc, Rig, emit_json, free_port, median, print_table, r
from bench.latency import console_call, direct_call, request_template
from bench.latency_floor import FLOOR_READY
from bench.step_probe import FINE_ORDER

STEPS = [("arrive", "app", "request read → app called (uvicorn)"),
         ("app", "sent", "app called → request on the target's socket"),
         ("sent", "head", "the wait for the target's answer head"),
         ("head", "answer", "answer head → the console's answer to uvicorn"),
         ("answer", "written", "→ the answer on the client's socket"),
         ("arrive", "written", "total inside the process")]


def step_medians(rows: list[dict[str, float]]) -> dict[str, float]:
    out = {}
    for a, b, _ in STEPS:
        spans = [(row[b] - row[a]) * 1e6 for row in rows if a in row and b in row]
        if spans:
            out[f"{a}->{b}"] = median(spans)
    flushed = [row for row in rows if "flush_start" in row and "head" in row]
    if flushed:
        out["flush_in_wait"] = median([(row["flush_end"] - row["flush_start"]) * 1e6 for row in flushed])
        out["flush_end->head"] = median([(row["head"] - row["flush_end"]) * 1e6 for row in flushed])
        out["flushed_share"] = len(flushed) / len(rows)
    return out


def read_rows(path: Path, calls: int) -> list[dict[str, float]]:
    rows: list[dict[str, float]] = json.loads(path.read_text())
    return [row for row in rows if "sent" in row][-calls:]


def fine_medians(rows: list[dict[str, float]]) -> list[tuple[str, str, float]]:
    """The console's finer steps (`--fine`): the median between each two stamps of `FINE_ORDER` a call took."""
    out = []
    for a, b in itertools.pairwise(FINE_ORDER):
        spans = [(row[b] - row[a]) * 1e6 for row in rows if a in row and b in row]
        if spans:
            out.append((a, b, median(spans)))
    return out


def run(calls: int, warmup: int, fine: bool = False) -> dict[str, Any]:
    probe_dir = Path(tempfile.mkdtemp(prefix="mcp-console-steps-"))
    console_out, floor_out = probe_dir / "console.json", probe_dir / "floor.json"
    launcher = ["-m", "bench.step_probe", "app"]
    probe_env = {"BENCH_STEP_PROBE_OUT": str(console_out), **({"BENCH_STEP_PROBE_FINE": "1"} if fine else {})}
    with Rig(launcher, probe_env) as rig, httpx.Client(timeout=30.0) as direct, \
            httpx.Client(timeout=30.0) as floor_client:
        session_id = rig.open_demo_session()
        body, headers = request_template(rig, session_id)
        floor = Proc("floor", [sys.executable, "-m", "bench.step_probe", "bench.floor_proxy", rig.demo_url,
                               json.dumps(headers), json.dumps(body), str(free_port())],
                     env={"BENCH_STEP_PROBE_OUT": str(floor_out)})
        try:
            floor_url = floor.wait_for(FLOOR_READY).group(1) + f"/sessions/{session_id}/tools/call"
            next_id = [1_000_000]
            series: dict[str, list[float]] = {"direct": [], "floor": [], "console": []}

            def one_direct() -> None:
                next_id[0] += 1
                direct_call(direct, rig.demo_url, {**body, "id": next_id[0]}, headers)

            def one_floor() -> None:
                reply = floor_client.post(floor_url, data={"tool": "echo", "arg.text": "hi"},
                                          headers={"Accept": "application/json"})
                reply.raise_for_status()

            def one_console() -> None:
                console_call(rig, session_id)

            order = [("direct", one_direct), ("floor", one_floor), ("console", one_console)]
            for _ in range(warmup):
                for _, call in order:
                    call()
            for i in range(calls):
                for name, call in (order if i % 2 == 0 else order[::-1]):
                    t0 = time.perf_counter()
                    call()
                    series[name].append((time.perf_counter() - t0) * 1000)
        finally:
            floor.stop()
    # Both processes wrote their rows when they exited (and every 500 requests before that).
    console_rows = read_rows(console_out, calls)
    console = step_medians(console_rows)
    fine_steps = fine_medians(console_rows) if fine else []
    floor_steps = step_medians(read_rows(floor_out, calls))
    for path in (console_out, floor_out):
        path.unlink(missing_ok=True)
    os.rmdir(probe_dir)

    d50 = median(series["direct"])
    rows = []
    for a, b, label in STEPS:
        key = f"{a}->{b}"
        c, f = console.get(key), floor_steps.get(key)
        rows.append([label, f"{c:.0f}" if c is not None else "—", f"{f:.0f}" if f is not None else "—",
                     f"{c - f:+.0f}" if c is not None and f is not None else "—"])
    print_table(f"inside each process, {calls} calls, medians in µs", ["step", "console", "floor", "console − floor"],
                rows)
    if "flush_in_wait" in console:
        print(f"\n  the console's flush of held events in the wait: {console['flush_in_wait']:.0f} µs, ending "
              f"{console['flush_end->head']:.0f} µs before the answer head "
              f"(in {console['flushed_share']:.0%} of calls)")
    if fine_steps:
        print_table("the console's layers, one step each (with --fine), medians in µs", ["from", "to", "µs"],
                    [[a, b, f"{us:.0f}"] for a, b, us in fine_steps])
    print_table("seen by the client, ms", ["path", "median", "× direct"],
                [[name, median(v), f"{median(v) / d50:.2f}×"] for name, v in series.items()])
    return {"calls": calls, "warmup": warmup,
            "client_ms": {name: r(median(v), 3) for name, v in series.items()},
            "console_us": {k: r(v, 1) for k, v in console.items()},
            "floor_us": {k: r(v, 1) for k, v in floor_steps.items()},
            **({"console_fine_us": {f"{a}->{b}": r(us, 1) for a, b, us in fine_steps}} if fine else {})}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.latency_steps", description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=2000, help="measured calls per series (default 2000)")
    p.add_argument("--warmup", type=int, default=30, help="warm-up calls per series (default 30)")
    p.add_argument("--fine", action="store_true",
                   help="also stamp the console's layers (front door, form, operation, session, client, transport, "
                        "pool) and print the step between each two; the wrappers cost the console a few µs")
    args = p.parse_args(argv)
    if not 1 <= args.calls <= 20_000 or not 0 <= args.warmup <= 10_000:
        p.error("--calls must be 1..20000 and --warmup 0..10000")
    emit_json("latency_steps", run(args.calls, args.warmup, args.fine))


if __name__ == "__main__":
    main()
