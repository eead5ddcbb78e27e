"""Live request feedback: progress coalesced per token, per-request log lines, stderr in batches.

A server may send thousands of progress notifications a second; the browser needs a few dozen.
Within a short window the latest value wins; the final value always arrives (flush on finish).
Log lines are kept up to a byte budget per entry, then only counted; stderr lines travel in
batches (one event, one websocket message, for many lines) and the stored ones are capped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from app.mcp.jsonrpc import Frame
from app.mcp.transport import REPLACED

# "" means: ask for no logs (without the _meta key the server must send none).
LOG_LEVELS = ("", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
Emit = Callable[[str, dict[str, Any]], Any]
LOG_DATA_KEEP_CHARS = 8192  # one log line's data as kept for display; the wire record has it whole
PROGRESS_MESSAGE_KEEP_CHARS = 2000
STDERR_LINE_KEEP_CHARS = 2000
STDERR_WINDOW_S = 0.1
STDERR_BATCH_LINES = 200
STDERR_DROPPED_EVERY_S = 1.0  # past the cap, the dropped count is re-announced at most this often
# A redraw of the unfinished line (a progress bar) goes out at most this often on its own; with lines, at once.
STDERR_CURRENT_EVERY_S = 0.5


# Where to cut a text at most N characters in so that no value the owner typed is cut in two: the kept head of one
# is masked nowhere (the mask looks for whole values), and a link holder read it (`Scrubber.safe_cut`).
CutGuard = Callable[[str, int], int]


class ProgressCoalescer:
    def __init__(self, emit: Emit, window_s: float = 0.05, guard: CutGuard | None = None) -> None:
        self._emit = emit
        self._window = window_s
        self._guard = guard
        # The latest frame per target and its count: its event data is made when it is emitted (one in hundreds).
        self._latest: dict[str, tuple[Frame, int]] = {}
        self._counts: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None

    def offer(self, target: str, frame: Frame) -> None:
        count = self._counts[target] = self._counts.get(target, 0) + 1
        self._latest[target] = (frame, count)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._window, self.flush)

    def flush(self, target: str | None = None) -> None:
        """Emit what is pending (for one target, or all). Called by the timer and on request end."""
        if target is None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            pending, self._latest = self._latest, {}
        else:
            one = self._latest.pop(target, None)
            pending = {target: one} if one else {}
        for name, (frame, count) in pending.items():
            params = frame.params
            self._emit("progress", {"target": name, "progress": params.get("progress"), "total": params.get("total"),
                                    "message": _cut(params.get("message"), PROGRESS_MESSAGE_KEEP_CHARS, self._guard),
                                    "count": count, "token": params.get("progressToken")})

    def done(self, target: str) -> None:
        self.flush(target)
        self._counts.pop(target, None)


def _cut(value: Any, keep: int, guard: CutGuard | None = None) -> Any:
    if isinstance(value, str) and len(value) > keep:
        if guard is not None:
            keep = guard(value, keep)
        return value[:keep] + f" … [{len(value) - keep} more characters not kept]"
    return value


def log_data(target: str, frame: Frame, guard: CutGuard | None = None) -> dict[str, Any]:
    """One log line as the timeline keeps it: its data cut to LOG_DATA_KEEP_CHARS, with a marker."""
    params = frame.params
    data = params.get("data")
    if not isinstance(data, str) and len(frame.raw) > LOG_DATA_KEEP_CHARS:
        data = json.dumps(data, ensure_ascii=False, default=str)  # too big to keep as structure: cut its text
    return {"target": target, "level": _cut(params.get("level"), 40), "logger": _cut(params.get("logger"), 200),
            "data": _cut(data, LOG_DATA_KEEP_CHARS, guard)}


class NotificationBudget:
    """Bytes of log lines kept per entry: past the budget, lines are counted but neither stored nor pushed."""

    def __init__(self, emit: Emit, limit: int) -> None:
        self._emit = emit
        self._limit = limit
        self._used: dict[str, int] = {}
        self._dropped: dict[str, tuple[int, int]] = {}

    def take(self, target: str, size: int) -> bool:
        """True when a notification of `size` bytes may be kept for `target`."""
        used = self._used.get(target, 0)
        if target not in self._dropped and used + size <= self._limit:
            self._used[target] = used + size
            return True
        count, total = self._dropped.get(target, (0, 0))
        self._dropped[target] = (count + 1, total + size)
        return False

    def done(self, target: str) -> None:
        """The entry's request is over: say once what was not kept."""
        self._used.pop(target, None)
        dropped = self._dropped.pop(target, None)
        if dropped is None:
            return
        count, total = dropped
        self._emit("log", {"target": target, "level": "warning", "logger": "mcp-console",
                           "data": f"{count} more notifications, {total / 1024 / 1024:.1f} MB, not kept "
                                   f"(past {self._limit} bytes for this entry; setting max_entry_notification_bytes)"})


class StderrBatcher:
    """Collects stderr lines and records one event per window (or per STDERR_BATCH_LINES lines).

    Adding a line costs a list append: nothing is rendered or published per line, so a server
    that writes thousands of lines a second cannot delay the timeline. Past `max_lines` stored
    lines, lines are only counted; the count is shown as "N lines dropped". The line the server is still
    drawing (`current`, a progress bar redrawn with \r) is one value, replaced: every event carries it, a redraw
    alone makes an event at most every STDERR_CURRENT_EVERY_S, and a line that ends clears it.
    """

    def __init__(self, emit: Emit, max_lines: int, stored: int = 0, dropped: int = 0,
                 guard: CutGuard | None = None) -> None:
        self._emit = emit
        self._max = max_lines
        self._guard = guard
        self.stored = stored
        self.dropped = dropped
        self._lines: list[str] = []
        self._announced = dropped
        self._announced_at = 0.0
        self._current = ""  # what a terminal shows now of the line not yet ended ("" for none)
        self._current_news = False  # changed since the last event
        self._current_at = -STDERR_CURRENT_EVERY_S  # loop time of the last event that carried a change of it
        self._timer: asyncio.TimerHandle | None = None

    def add(self, line: str, cut: str | None = None) -> None:
        """One line; `cut` says what the transport did not keep of it (a line past its bound), shown after it, or
        only that its bytes were not all UTF-8 (shown as U+FFFD): then no "…", the transport kept all of it."""
        if self._current:  # it ended: this line is what it became
            self._current, self._current_news = "", True
        if self.stored + len(self._lines) >= self._max:
            self.dropped += 1
        else:
            kept = _cut(line, STDERR_LINE_KEEP_CHARS, self._guard)
            self._lines.append(kept if not cut else f"{kept} [{cut}]" if cut.startswith(REPLACED) else
                               f"{kept} … [{cut}]")
            if len(self._lines) >= STDERR_BATCH_LINES:
                self.flush()
                return
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(STDERR_WINDOW_S, self._tick)

    def current(self, line: str, cut: str | None = None) -> None:
        """What a terminal shows now of the line not yet ended; replaces the one before (nothing is stored per
        redraw)."""
        kept = _cut(line, STDERR_LINE_KEEP_CHARS, self._guard)
        self._current, self._current_news = f"{kept} … [{cut}]" if cut else kept, True
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(STDERR_WINDOW_S, self._tick)

    def new_process(self) -> None:
        """The server was started again: the line its last process left unfinished shows no more."""
        if self._current:
            self.current("")

    def _tick(self) -> None:
        self._timer = None
        self.flush(final=False)

    def flush(self, final: bool = True) -> None:
        """Record what is pending. Past the cap the dropped count goes out at most once a second (always when final)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        news = self.dropped != self._announced
        due = final or now - self._announced_at >= STDERR_DROPPED_EVERY_S
        redraw_at = self._current_at + STDERR_CURRENT_EVERY_S  # when a redraw alone may go out
        redraw = self._current_news and (final or now >= redraw_at)
        if not self._lines and not (news and due) and not redraw:
            if (news or self._current_news) and self._timer is None:  # come back for the count, or the redraw
                wait = max(redraw_at - now, STDERR_WINDOW_S) if self._current_news and not news else STDERR_WINDOW_S
                self._timer = loop.call_later(wait, self._tick)
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        lines, self._lines = self._lines, []
        self.stored += len(lines)
        if news and due:
            self._announced, self._announced_at = self.dropped, loop.time()
        if self._current_news:
            self._current_news, self._current_at = False, now
        self._emit("stderr", {"lines": lines, "dropped": self._announced, "current": self._current})
        if self.dropped != self._announced and self._timer is None:
            # The count was not due with this event (lines, or a redraw, took it out): come back for it.
            self._timer = loop.call_later(STDERR_WINDOW_S, self._tick)
