"""Redis hub figures: what publishing costs the caller (memory Hub vs RedisHub, interleaved rounds), and how
long an event takes from one RedisHub to a subscriber on another (one at a time, and a burst).

Starts its own redis-server on 127.0.0.1 (no persistence, temp dir) and stops it at the end.
    .venv/bin/python -m bench.hub_redis [--events 2000] [--rounds 5] [--pings 200]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from app.console.events import Notice, TimelineEvent
from app.console.hub import Hub
from app.console.hub_redis import RedisHub
from bench.common import emit_json, machine, median, percentile, print_table, r
from tests.services_redis import TEAM_KEY, RedisServer


def ev(seq: int, session: str = "s1") -> TimelineEvent:
    return TimelineEvent(session_id=session, seq=seq, record=Notice(message=f"note {seq}"), at=time.time())


def render(event: TimelineEvent) -> str:
    return f"<div id='e{event.seq}'>{event.kind}</div>"


def publish_cost_us(hub: Hub, events: list[TimelineEvent]) -> float:
    started = time.perf_counter()
    for event in events:
        hub.publish(event)
    return (time.perf_counter() - started) / len(events) * 1e6


async def main(events: int, rounds: int, pings: int) -> None:
    print(machine())
    server = RedisServer().start()
    try:
        prefix = f"bench-{uuid.uuid4().hex[:8]}:"
        memory_us, redis_us = [], []
        for n in range(rounds):  # interleaved: the machine's noise falls on both alike
            batch = [ev(i + 1, f"m{n}") for i in range(events)]
            memory = Hub(render)
            memory.subscribe(f"m{n}", None, 0)
            memory_us.append(publish_cost_us(memory, batch))
            hub = RedisHub(render, url=server.url, prefix=prefix, key=TEAM_KEY)
            await hub.start()
            hub.subscribe(f"m{n}", None, 0)
            redis_us.append(publish_cost_us(hub, batch))
            await hub.stop()

        a = RedisHub(render, url=server.url, prefix=prefix, key=TEAM_KEY)
        b = RedisHub(render, url=server.url, prefix=prefix, key=TEAM_KEY)
        await a.start()
        await b.start()
        sub, _ = b.subscribe("x", None, 0)
        latencies = []
        for seq in range(1, pings + 1):
            started = time.perf_counter()
            a.publish(ev(seq, "x"))
            await asyncio.wait_for(sub.queue.get(), 10)
            latencies.append((time.perf_counter() - started) * 1000)
        burst, _ = b.subscribe("y", None, 0)
        started = time.perf_counter()
        for seq in range(1, events + 1):
            a.publish(ev(seq, "y"))
        for _ in range(events):
            await asyncio.wait_for(burst.queue.get(), 30)
        burst_s = time.perf_counter() - started
        await a.stop()
        await b.stop()
    finally:
        server.close()
    print_table("publish cost to the caller (µs per event, one subscriber)", ["hub", "median", "min"],
                [["memory", r(median(memory_us)), r(min(memory_us))], ["redis", r(median(redis_us)), r(min(redis_us))]])
    print_table("A → subscriber on B", ["figure", "value"],
                [["one at a time p50 ms", r(percentile(latencies, 50))], ["p95 ms", r(percentile(latencies, 95))],
                 [f"burst of {events}: events/s", round(events / burst_s)]])
    emit_json("hub_redis", {"publish_us_memory": r(median(memory_us)), "publish_us_redis": r(median(redis_us)),
                            "remote_p50_ms": r(percentile(latencies, 50)),
                            "remote_p95_ms": r(percentile(latencies, 95)),
                            "burst_events_per_s": round(events / burst_s)})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pings", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.rounds, args.pings))
