"""Floods that test the console's bounds: big log notifications on one response stream, stderr storms.

- `log_flood` sends `count` log notifications of `size` bytes each on its own response stream, then
  answers (it stops early when the console cancels, as a polite server would).
- `stderr_flood` starts writing `lines` stderr lines at `rate` lines a second (0: one burst) in the
  background and answers at once, so other calls run during the storm.
"""

from __future__ import annotations

import asyncio
import sys

from tests.hostile.target import Ctx, Tool, text

_running: set[asyncio.Task[None]] = set()


def _int(ctx: Ctx, name: str, default: int) -> int:
    try:
        return int(ctx.args.get(name, default))
    except (TypeError, ValueError):
        return default


async def log_flood(ctx: Ctx) -> None:
    count, size = _int(ctx, "count", 150), _int(ctx, "size", 1024 * 1024)
    chunk = "x" * size
    try:
        for n in range(count):
            if ctx.cancelled.is_set():
                return
            await ctx.log(f"{n}:{chunk}")
    except (ConnectionError, OSError):
        return  # the console closed the stream: that is its cancel on HTTP
    await ctx.reply(text(f"sent {count} log notifications of {size} bytes"))


async def _storm(lines: int, rate: int) -> None:
    per_tick = lines if rate <= 0 else max(1, rate // 20)
    sent = 0
    while sent < lines:
        batch = min(per_tick, lines - sent)
        sys.stderr.write("".join(f"stderr storm line {sent + i} <b>not markup</b>\n" for i in range(batch)))
        sys.stderr.flush()
        sent += batch
        await asyncio.sleep(0 if rate <= 0 else 0.05)


async def stderr_flood(ctx: Ctx) -> None:
    task = asyncio.ensure_future(_storm(_int(ctx, "lines", 20000), _int(ctx, "rate", 0)))
    _running.add(task)
    task.add_done_callback(_running.discard)
    await ctx.reply(text("storm started"))


_NUM = {"type": "integer"}
TOOLS = [
    Tool("log_flood", log_flood, {"description": "Streams `count` log notifications of `size` bytes each.",
                                  "inputSchema": {"type": "object", "properties": {"count": _NUM, "size": _NUM}}}),
    Tool("stderr_flood", stderr_flood, {"description": "Writes `lines` stderr lines at `rate` per second.",
                                        "inputSchema": {"type": "object",
                                                        "properties": {"lines": _NUM, "rate": _NUM}}}),
]
