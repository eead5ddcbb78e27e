"""The stderr line a server is still drawing (a progress bar redrawn with \r): one live value, replaced, not a
line per redraw; the batcher sends it at most every STDERR_CURRENT_EVERY_S, and a line that ends clears it."""

from __future__ import annotations

import asyncio
from typing import Any

from app.console.live import STDERR_CURRENT_EVERY_S, StderrBatcher

DEADLINE_S = 5.0


async def test_a_thousand_redraws_of_the_unfinished_stderr_line_make_a_few_events_that_end_with_the_latest() -> None:
    emitted: list[dict[str, Any]] = []
    got = asyncio.Event()

    def emit(_kind: str, data: dict[str, Any]) -> None:
        emitted.append(data)
        got.set()

    batcher = StderrBatcher(emit, max_lines=100)
    for i in range(1000):
        batcher.current(f"{i / 10:.1f}%")
    await asyncio.wait_for(got.wait(), DEADLINE_S)
    assert emitted == [{"lines": [], "dropped": 0, "current": "99.9%"}]
    batcher.current("100%")
    batcher.add("100% done")  # the line ended: it is a line now, and nothing is unfinished
    batcher.flush()
    assert emitted[-1] == {"lines": ["100% done"], "dropped": 0, "current": ""}
    assert batcher.stored == 1


async def test_redraws_after_one_was_sent_wait_out_the_interval_then_go_as_one_event() -> None:
    emitted: list[tuple[float, dict[str, Any]]] = []
    two = asyncio.Event()
    loop = asyncio.get_running_loop()

    def emit(_kind: str, data: dict[str, Any]) -> None:
        emitted.append((loop.time(), data))
        if len(emitted) == 2:
            two.set()

    batcher = StderrBatcher(emit, max_lines=100)
    batcher.current("1%")
    batcher.flush()
    for i in range(2, 50):
        batcher.current(f"{i}%")
    await asyncio.wait_for(two.wait(), DEADLINE_S)
    (first, _), (second, data) = emitted
    assert data["current"] == "49%" and data["lines"] == []
    assert second - first >= STDERR_CURRENT_EVERY_S * 0.9


async def test_a_new_process_clears_the_line_the_one_before_left_unfinished() -> None:
    emitted: list[dict[str, Any]] = []
    batcher = StderrBatcher(lambda _kind, data: emitted.append(data), max_lines=100)
    batcher.new_process()
    batcher.flush()
    assert emitted == []  # nothing was unfinished: no event
    batcher.current("40%")
    batcher.flush()
    batcher.new_process()
    batcher.flush()
    assert [data["current"] for data in emitted] == ["40%", ""]


async def test_past_the_line_cap_a_redraw_that_goes_out_first_does_not_hold_back_the_last_dropped_count() -> None:
    counted = asyncio.Event()
    emitted: list[dict[str, Any]] = []

    def emit(_kind: str, data: dict[str, Any]) -> None:
        emitted.append(data)
        if data["dropped"] == 2:
            counted.set()

    batcher = StderrBatcher(emit, max_lines=1)
    batcher.add("kept")
    batcher.add("dropped")
    batcher.flush()  # the count (1) just went out: the next one waits out STDERR_DROPPED_EVERY_S
    batcher.add("dropped too")
    batcher.current("50%")  # due at once: it goes out first, with the count as it was
    await asyncio.wait_for(counted.wait(), DEADLINE_S)
    assert [(data["dropped"], data["current"]) for data in emitted[1:]] == [(1, "50%"), (2, "50%")]
