"""Live request feedback: progress coalesced per token, and per-request log lines.

A server may send thousands of progress notifications a second; the browser needs a few dozen.
Within a short window the latest value wins; the final value always arrives (flush on finish).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.mcp.jsonrpc import Frame

# "" means: ask for no logs (without the _meta key the server must send none).
LOG_LEVELS = ("", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
Emit = Callable[[str, dict[str, Any]], Any]


class ProgressCoalescer:
    def __init__(self, emit: Emit, window_s: float = 0.05) -> None:
        self._emit = emit
        self._window = window_s
        self._latest: dict[str, dict[str, Any]] = {}
        self._counts: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None

    def offer(self, target: str, frame: Frame) -> None:
        params = frame.params
        self._counts[target] = self._counts.get(target, 0) + 1
        self._latest[target] = {"target": target, "progress": params.get("progress"), "total": params.get("total"),
                                "message": params.get("message"), "count": self._counts[target],
                                "token": params.get("progressToken")}
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
        for data in pending.values():
            self._emit("progress", data)

    def done(self, target: str) -> None:
        self.flush(target)
        self._counts.pop(target, None)


def log_data(target: str, frame: Frame) -> dict[str, Any]:
    params = frame.params
    return {"target": target, "level": params.get("level"), "logger": params.get("logger"),
            "data": params.get("data")}
