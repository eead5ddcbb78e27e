"""Readers that share the event loop.

An awaited read whose data is already buffered returns without suspending, so a reader with a backlog
(a server flooding thousands of notifications a second) can run for seconds without letting anything
else in the process run: timers (the progress coalescer's flush, the frame batches' store writes), other
sessions' readers, the websocket senders. Every frame then reaches the browser late, although the console
keeps up with the reading. A reader calls `FairShare.tick()` (or `due()`, then `give_way()`) once per unit
of work (an HTTP chunk, a stdio line); it gives way to the loop once `slice_s` has passed since it last did
(checked every `every` ticks).

A time slice, not a count: a server that flushes each SSE event as its own HTTP chunk makes a chunk one
frame, and yielding per chunk cost a loop turn per frame (the loop's own work, and every ready callback run
again) at 17,000 frames a second. A few milliseconds of reading between turns keep the timers on time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# The longest a reader runs before the rest of the loop gets a turn. Everything a flood delays waits up to
# one slice per loop turn it needs (the progress flush, then the websocket send), so this bounds that wait.
# 2 ms (it was 5): at most 500 turns a second, each some tens of microseconds; the console's CPU per
# notification did not move measurably (2.5 s per 50,000 either way, noisy machine).
SLICE_S = 0.002


class FairShare:
    def __init__(self, every: int = 1, slice_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._every = max(1, every)
        self._slice = SLICE_S if slice_s is None else slice_s  # read when made: tests may set SLICE_S
        self._clock = clock
        self._count = 0
        self._since = clock()
        self.yields = 0  # how often this reader gave way (tests count it)

    def due(self) -> bool:
        """Count one unit of work; True when the reader should give way now (then it awaits `give_way`).

        Plain, not a coroutine: the per-chunk check is a call and a clock read, not a coroutine made and
        awaited for every chunk of a flood."""
        self._count += 1
        if self._count < self._every:
            return False
        self._count = 0
        return self._clock() - self._since >= self._slice

    async def give_way(self) -> None:
        self.yields += 1
        await asyncio.sleep(0)
        self._since = self._clock()

    async def tick(self) -> None:
        """`due` and `give_way` in one, for a reader where a coroutine per unit of work costs nothing much."""
        if self.due():
            await self.give_way()
