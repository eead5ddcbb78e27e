"""The console as a process, as the browser tests run it: stopping it stops everything it started."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import STOP_TIMEOUT_S, RunningConsole, wait_until

pytestmark = pytest.mark.browser


def test_stopping_the_console_with_sigterm_also_stops_its_demo_server(tmp_path: Path) -> None:
    running = RunningConsole(tmp_path)
    assert running.demo_port_open()
    left: set[int] = set()
    try:
        left = running.terminate()
        assert not left, f"the console exited but left these processes running: {sorted(left)}"
        assert wait_until(lambda: not running.demo_port_open(), STOP_TIMEOUT_S), "the demo port is still open"
    finally:
        running.kill_all(left)
