"""Finding and signalling a stdio server's descendants: only processes found under it, each while it is the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.mcp import descendants
from tests.processes import gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

DEADLINE_S = 10.0

# Starts a grandchild in a session of its own (through a child that stays) and prints both pids when both run.
TREE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c",
        "import os, subprocess, sys, time\\n"
        "g = subprocess.Popen([sys.executable, '-c',"
        " 'import os, time; os.setsid(); print(flush=True); time.sleep(60)'], stdout=subprocess.PIPE)\\n"
        "g.stdout.readline()\\n"
        "print(os.getpid(), g.pid, flush=True)\\n"
        "time.sleep(60)\\n"], stdout=subprocess.PIPE, text=True)
    print(child.stdout.readline().strip(), flush=True)
    time.sleep(60)
""")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait(DEADLINE_S)


def test_a_processes_descendants_include_a_grandchild_that_called_setsid_and_no_process_outside_its_tree(
        sleeper: subprocess.Popen[bytes]) -> None:
    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    found: descendants.Found = {}
    try:
        assert root.stdout is not None
        child, grandchild = map(int, root.stdout.readline().split())
        found = descendants.descendants(root.pid, descendants.start_time(root.pid))
        assert set(found) == {child, grandchild}
        assert sleeper.pid not in found  # a sibling: started by the same parent, not by the root
    finally:
        descendants.send(found, signal.SIGKILL)
        root.kill()
        root.wait(DEADLINE_S)


def test_a_root_that_is_no_longer_the_process_that_started_has_no_descendants(
        sleeper: subprocess.Popen[bytes]) -> None:
    started = descendants.start_time(sleeper.pid)
    assert started is not None
    # The test's own pid with the sleeper's start time stands for a pid reused since: its children are not looked at.
    assert descendants.descendants(os.getpid(), started) == {}
    assert sleeper.pid in descendants.descendants(os.getpid(), descendants.start_time(os.getpid()))


def test_a_pid_whose_start_time_has_changed_since_it_was_found_is_not_signalled(
        sleeper: subprocess.Popen[bytes]) -> None:
    started = descendants.start_time(sleeper.pid)
    assert started is not None
    descendants.send({sleeper.pid: started + 1}, signal.SIGKILL)  # as if the pid now held another process
    assert sleeper.poll() is None
    assert descendants.living({sleeper.pid: started + 1}) == {}
    descendants.send({sleeper.pid: started}, signal.SIGKILL)
    assert sleeper.wait(DEADLINE_S) == -signal.SIGKILL


def test_signalling_a_descendant_that_is_gone_in_between_is_no_error(sleeper: subprocess.Popen[bytes]) -> None:
    found = {sleeper.pid: descendants.start_time(sleeper.pid) or 0}
    sleeper.kill()
    sleeper.wait(DEADLINE_S)
    assert gone(sleeper.pid)
    descendants.send(found, signal.SIGTERM)
    assert descendants.living(found) == {}


def test_without_proc_nothing_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(descendants, "PROC", tmp_path / "no-proc")
    assert descendants.start_time(1) is None
    assert descendants.descendants(1, None) == {}


def test_processes_carrying_the_mark_are_found_wherever_they_went_and_one_without_it_is_not(
        sleeper: subprocess.Popen[bytes]) -> None:
    mark = descendants.new_mark()
    # Its own session, and no parent link to anything the test walks: only the mark in its environment says whose.
    carrier = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                               env={**os.environ, descendants.MARK_ENV: mark})
    try:
        found = descendants.marked(mark)
        assert carrier.pid in found and found[carrier.pid] == descendants.start_time(carrier.pid)
        assert sleeper.pid not in found
        assert descendants.marked(mark, exclude=carrier.pid) == {}
        assert carrier.pid not in descendants.marked(descendants.new_mark())
    finally:
        carrier.kill()
        carrier.wait(DEADLINE_S)
