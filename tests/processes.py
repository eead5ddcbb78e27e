"""A process a test started: stopping it, and whether it (or a server it started) is gone. One place for the tests
that start processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from typing import Any


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


def stop(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `timeout_s`; waits for it either way (no zombie left)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
