"""Fewer cyclic garbage collections while a bulk job allocates (an import of a session file).

An import of 100,000 entries makes some 400,000 rows, each a few containers (a parsed dict, tuples) that live
for the length of a chunk: enough to survive the young generation, so with the interpreter's default threshold
(a collection every 700 allocations) the collector runs thousands of times and, as they pile into the old
generation, keeps walking the whole heap of a console process. That was some 1.5 CPU-s of a 12 CPU-s import.
Nothing in an import makes reference cycles, so collecting less often while it runs costs no memory to speak
of; reference counting frees its rows as before.

The threshold is process-wide: the scope raises the young generation's threshold while at least one bulk job
runs (counted, so two imports on two worker threads neither fight nor restore it early) and puts back what it
found when the last one ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_THRESHOLD = 100_000  # allocations between young collections while a bulk job runs (default 700)

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] = gc.get_threshold()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the young generation collected every BULK_THRESHOLD allocations."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gen0, gen1, gen2 = _saved
            if 0 < gen0 < BULK_THRESHOLD:  # 0 means collection is off: left as it is
                gc.set_threshold(BULK_THRESHOLD, gen1, gen2)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                gc.set_threshold(*_saved)
