"""Readers that share the event loop.

An awaited read whose data is already buffered returns without suspending, so a reader with a backlog
(a server flooding thousands of notifications a second) can run for seconds without letting anything
else in the process run: timers (the progress coalescer's flush), other sessions' readers, the
websocket senders. Every frame then reaches the browser late, although the console keeps up with the
reading. A reader calls `FairShare.tick()` once per unit of work (an HTTP chunk, a stdio line); every
`every` ticks it yields to the loop once, which costs one loop iteration.
"""

from __future__ import annotations

import asyncio


class FairShare:
    def __init__(self, every: int = 1) -> None:
        self._every = max(1, every)
        self._count = 0
        self.yields = 0  # how often this reader gave way (tests count it)

    async def tick(self) -> None:
        self._count += 1
        if self._count >= self._every:
            self._count = 0
            self.yields += 1
            await asyncio.sleep(0)
