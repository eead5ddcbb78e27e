"""Process-wide settings for a serving console, made once the app has started (`tune_for_serving`).

Only `app/cli.py serve` calls this: tests, the headless commands and a script driving `app.mcp` keep
Python's defaults.
"""

from __future__ import annotations

import gc

# Allocations between two young collections (Python's default is 700). A progress flood makes a few dozen
# short-lived objects per frame (its dicts, the wire record, the batch row) that live until the batch is
# handed to the store; at 700 many of them are still alive when a young collection runs, are promoted, and
# so count towards the next full collection. 10,000 is ~1 MB of young objects: a young collection stays
# well under a millisecond.
GEN0_THRESHOLD = 10_000


def tune_for_serving() -> None:
    """Keep the collector's full passes short and rare once the console is up.

    Why: a full (gen-2) collection walks every tracked object, and after start-up that is mostly what
    never dies (modules, FastAPI's routes and pydantic models, Jinja's compiled templates). Measured
    during a 50,000-notification progress flood: one gen-2 pass took 86 ms with nothing to collect, a
    stall of the event loop that shows up whole in the browser's progress delay. `gc.freeze()` moves
    everything alive now into the permanent generation, which no collection walks; later full passes
    only see what the console made since.
    """
    gc.collect()  # what start-up left as garbage is freed first, not frozen for the life of the process
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
