"""Viewers spread over two console processes of a team: how long an event takes from its creation on the owner
process to each viewer's websocket, on this process and across Redis to the other.

Method. Starts a throwaway PostgreSQL and redis-server (bench.common.team_services), the demo server and two
`mcp-console serve` processes (A and B) on them (tests/team_processes.py). A session on the demo server is made
on A; `--viewers` websockets (half on A, half on B) subscribe to it with the owner token (Bearer; the per-
credential socket cap is raised for the run), each sending the hello with the session's current seq. Then
`--calls` echo calls go through A's JSON API, one after another. Every fragment a viewer receives is stamped
(wall clock) and read for its seq; afterwards each seq's creation time (`at`, the owner's wall clock, the same
machine) is read from the events table. Latency = arrival - at, per viewer and event. "Lost" counts, per
viewer, the seqs some viewer received but this one did not; "duplicated" the seqs a viewer received twice.

    .venv/bin/python -m bench.team_viewers [--viewers 50] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench.common import (
    cpu_seconds,
    emit_json,
    machine,
    percentile,
    print_table,
    r,
    start_demo,
    team_services,
    wait_until,
)
from tests.team_processes import ConsoleProcess, Team, TeamSpec

SEQ = re.compile(r'\A\s*<div id="ws-seq" hx-swap-oob="true" data-seq="(\d+)"')
DRAIN_TIMEOUT_S = 60.0
QUIET_S = 1.0


class Viewer:
    def __init__(self, side: str, ws: ClientConnection) -> None:
        self.side, self.ws = side, ws
        self.arrivals: list[tuple[int, float]] = []  # (seq, wall-clock arrival)

    async def read(self) -> None:
        async for message in self.ws:
            now = time.time()
            match = SEQ.match(str(message))
            if match:
                self.arrivals.append((int(match.group(1)), now))


def connected_session(client: httpx.Client, demo_url: str) -> str:
    created = client.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""})
    created.raise_for_status()
    session_id = str(created.json()["id"])

    def ready() -> bool:
        s = client.get(f"/sessions/{session_id}.json").json()
        return s["status"] == "connected" and any(e.get("method") == "tools/list" and e.get("status") == "ok"
                                                  for e in s["timeline"])

    wait_until(ready, 30, "the session to connect")
    return session_id


async def open_viewers(members: list[ConsoleProcess], session_id: str, seq: int, count: int) -> list[Viewer]:
    viewers = []
    for n in range(count):
        member = members[n % len(members)]
        ws = await connect(f"ws://127.0.0.1:{member.port}/sessions/{session_id}/ws", max_size=None,
                           additional_headers={"Authorization": f"Bearer {member.spec.token}"})
        await ws.send(json.dumps({"last_seq": seq}))
        viewers.append(Viewer(member.name, ws))
    return viewers


async def drive(a: ConsoleProcess, b: ConsoleProcess, demo_url: str, viewers_n: int,
                calls: int) -> tuple[list[Viewer], str, float]:
    headers = {"Authorization": f"Bearer {a.spec.token}", "Accept": "application/json"}
    with httpx.Client(base_url=a.internal, headers=headers, timeout=60) as sync:
        session_id = connected_session(sync, demo_url)
        seq = int(sync.get(f"/sessions/{session_id}.json").json()["seq"])
        # B serves the session from its replica: wait until it has one, or its sockets would be refused.
        with httpx.Client(base_url=b.internal, headers=headers, timeout=60) as other:
            wait_until(lambda: other.get(f"/sessions/{session_id}.json").status_code == 200, 30, "B's replica")
    viewers = await open_viewers([a, b], session_id, seq, viewers_n)
    readers = [asyncio.create_task(v.read(), name=f"viewer-{n}") for n, v in enumerate(viewers)]
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=a.internal, headers=headers, timeout=60) as client:
        for n in range(calls):
            reply = await client.post(f"/sessions/{session_id}/tools/call",
                                      data={"tool": "echo", "arg.text": f"call {n} {uuid.uuid4().hex[:6]}"})
            reply.raise_for_status()
    calls_s = time.monotonic() - started
    # Drained: every viewer holds the highest seq any viewer got, and nothing new came for QUIET_S.
    deadline, seen, since = time.monotonic() + DRAIN_TIMEOUT_S, -1, time.monotonic()
    while time.monotonic() < deadline:
        highest = max((s for v in viewers for s, _ in v.arrivals), default=0)
        if highest != seen:
            seen, since = highest, time.monotonic()
        elif all(v.arrivals and v.arrivals[-1][0] >= highest for v in viewers) and time.monotonic() - since > QUIET_S:
            break
        await asyncio.sleep(0.05)  # polling a condition with a deadline
    for v in viewers:
        await v.ws.close()
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    return viewers, session_id, calls_s


def creation_times(database_url: str, session_id: str) -> dict[int, float]:
    import psycopg

    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT seq, at FROM events WHERE session_id = %s", (session_id,)).fetchall()
    return {int(seq): float(at) for seq, at in rows}


def figures(viewers: list[Viewer], created: dict[int, float]) -> dict[str, Any]:
    published = {seq for v in viewers for seq, _ in v.arrivals}
    by_side: dict[str, list[float]] = {"A (owner)": [], "B (other)": []}
    per_viewer, lost, duplicated = [], 0, 0
    for v in viewers:
        seqs = Counter(seq for seq, _ in v.arrivals)
        duplicated += sum(n - 1 for n in seqs.values() if n > 1)
        lost += len(published - set(seqs))
        per_viewer.append(len(v.arrivals))
        side = "A (owner)" if v.side == "a" else "B (other)"
        by_side[side].extend((at - created[seq]) * 1000 for seq, at in v.arrivals if seq in created)
    everything = [x for xs in by_side.values() for x in xs]
    stats = {side: {"p50_ms": r(percentile(xs, 50)), "p95_ms": r(percentile(xs, 95)), "max_ms": r(max(xs)),
                    "samples": len(xs)} for side, xs in {**by_side, "overall": everything}.items() if xs}
    return {"latency": stats, "messages_per_viewer": {"min": min(per_viewer), "max": max(per_viewer)},
            "events_published": len(published), "lost": lost, "duplicated": duplicated}


def run(viewers_n: int, calls: int) -> dict[str, Any]:
    m = machine()
    print(f"machine: {m['cpus']} CPUs, 1-minute load average {m['load_avg_1m']} at start", flush=True)
    with team_services() as (database_url, redis_url), tempfile.TemporaryDirectory(prefix="mcp-team-") as tmp:
        demo, demo_url = start_demo()
        team = Team(TeamSpec(database_url, redis_url, "bench:",
                             extra_env={"MCP_CONSOLE_MAX_WEBSOCKETS_PER_CREDENTIAL": str(viewers_n)}), Path(tmp))
        try:
            a, b = team.start("a"), team.start("b")
            cpu0 = {p.name: cpu_seconds(p.proc.pid) for p in (a, b)}
            viewers, session_id, calls_s = asyncio.run(drive(a, b, demo_url, viewers_n, calls))
            cpu = {p.name: r(cpu_seconds(p.proc.pid) - cpu0[p.name], 1) for p in (a, b)}
            created = creation_times(database_url, session_id)
        finally:
            team.stop()
            demo.stop()
    result = figures(viewers, created)
    rows = [[side, s["p50_ms"], s["p95_ms"], s["max_ms"], s["samples"]] for side, s in result["latency"].items()]
    print_table(f"{viewers_n} viewers (half per process), {calls} calls on A in {calls_s:.1f} s: "
                "event creation -> viewer websocket, ms", ["viewers on", "p50", "p95", "max", "samples"], rows)
    print(f"\nmessages per viewer {result['messages_per_viewer']}, events published {result['events_published']}, "
          f"lost {result['lost']}, duplicated {result['duplicated']}; console CPU s {cpu}; "
          f"load average now {machine()['load_avg_1m']}")
    return {"viewers": viewers_n, "calls": calls, "calls_s": r(calls_s, 1), **result, "cpu_s": cpu}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.team_viewers", description=__doc__.split("\n")[0])
    p.add_argument("--viewers", type=int, default=50, help="viewer websockets, half per process (default 50)")
    p.add_argument("--calls", type=int, default=1000, help="echo calls through A's JSON API (default 1000)")
    args = p.parse_args(argv)
    if not 2 <= args.viewers <= 400 or not 1 <= args.calls <= 100_000:
        p.error("--viewers must be 2..400 and --calls 1..100000")
    emit_json("team_viewers", run(args.viewers, args.calls))


if __name__ == "__main__":
    main()
