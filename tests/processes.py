"""Whether a process a test started (or a server it started) is gone: one place for the tests that check it."""

from __future__ import annotations

import asyncio
import os
import time


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def wait_gone(pid: int, within_s: float) -> bool:
    """True once the process is gone, False if it still runs after `within_s` (polled, not slept through)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        await asyncio.sleep(0.02)
    return gone(pid)
