"""Closing a stdio transport: what the server wrote last is kept, and what it left running ends with it.

Each server here is a real child process. A server's last words are often the reason it stopped ("fatal: …",
written without a newline just before it exits); lost on close, the stderr panel showed nothing of why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.mcp.stdio import StdioTransport
from app.mcp.wire import WireEvent

DEADLINE_S = 10.0
LAST_WORDS = "last words without newline"


def _stderr_lines(recorded: list[WireEvent]) -> list[str]:
    """The stderr lines recorded as lines (not the redraws of a line still unfinished)."""
    return [ev.raw for ev in recorded if ev.direction == "stderr" and ev.signal != "stderr_unfinished"]


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


# Writes its last words without a newline, says on stdout that it did, and waits to be closed.
SPEAKS_THEN_WAITS = textwrap.dedent(f"""
    import sys, time
    sys.stderr.write("first line\\n{LAST_WORDS}")
    sys.stderr.flush()
    print("spoken", flush=True)
    time.sleep(300)
""")


async def test_a_stderr_line_without_newline_from_a_server_still_running_is_kept_as_a_line_when_it_is_closed(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", SPEAKS_THEN_WAITS], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        await _until(lambda: any(ev.direction == "in" and ev.raw == "spoken" for ev in recorded), "stdout 'spoken'")
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert _stderr_lines(recorded) == ["first line", LAST_WORDS]


# Writes a burst of stderr lines and its last words, says so on stdout and waits: close() comes while some of the
# burst may still be in the pipe, not yet read.
BURSTS_THEN_WAITS = textwrap.dedent(f"""
    import sys, time
    sys.stderr.write("".join(f"line {{i}}\\n" for i in range(5000)) + "{LAST_WORDS}")
    sys.stderr.flush()
    print("spoken", flush=True)
    time.sleep(300)
""")


async def test_stderr_lines_still_in_the_pipe_when_the_transport_is_closed_are_all_recorded() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", BURSTS_THEN_WAITS], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        await _until(lambda: any(ev.direction == "in" and ev.raw == "spoken" for ev in recorded), "stdout 'spoken'")
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert _stderr_lines(recorded) == [f"line {i}" for i in range(5000)] + [LAST_WORDS]


# Writes its last words without a newline and exits by itself.
SPEAKS_THEN_EXITS = textwrap.dedent(f"""
    import sys
    sys.stderr.write("{LAST_WORDS}")
    sys.stderr.flush()
    sys.exit(4)
""")


async def test_the_last_stderr_line_of_a_server_that_exited_by_itself_is_kept_even_when_closed_as_its_exit_is_seen(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", SPEAKS_THEN_EXITS], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        # Closed the moment its exit is known (a reconnect does that), not once its stderr is read to the end.
        await _until(lambda: not transport.alive, "the server's exit")
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert _stderr_lines(recorded) == [LAST_WORDS]
    assert transport.returncode == 4


async def test_the_last_stderr_line_is_kept_when_closed_the_instant_the_servers_exit_is_seen() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", SPEAKS_THEN_EXITS], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while transport.alive and time.monotonic() < deadline:
            await asyncio.sleep(0)  # no pause: its stderr reader gets no head start on the close
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    assert _stderr_lines(recorded) == [LAST_WORDS]


# Leaves a daemon that holds its stderr for good and that nothing can trace back to it (double fork, a session of
# its own, an empty environment), then writes its last words without a newline and waits: its stderr never ends.
LEAVES_AN_UNTRACEABLE_DAEMON = textwrap.dedent(f"""
    import os, sys, time
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, f"{{os.getpid()}}\\n".encode())
            os.execve("/bin/sleep", ["sleep", "300"], {{}})
        os._exit(0)
    pid = os.read(r, 64).decode().strip()
    print(f"daemon {{pid}}", flush=True)
    sys.stderr.write("{LAST_WORDS}")
    sys.stderr.flush()
    time.sleep(300)
""")


async def test_the_last_stderr_line_is_kept_and_close_is_bounded_when_a_daemon_left_behind_holds_stderr_open(
) -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", LEAVES_AN_UNTRACEABLE_DAEMON], recorded.append,
                               shutdown_grace_s=0.5)
    await transport.start()
    daemon = 0
    try:
        await _until(lambda: any(ev.direction == "stderr" and LAST_WORDS in ev.raw for ev in recorded),
                     "the last words, unfinished")
        daemon = next(int(ev.raw.split()[1]) for ev in recorded if ev.direction == "in" and ev.raw.startswith("daemon"))
        await asyncio.wait_for(transport.close(), DEADLINE_S)
        assert _stderr_lines(recorded) == [LAST_WORDS]
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(transport.close(), DEADLINE_S)
        if daemon:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, signal.SIGKILL)


def _ended(pid: int) -> bool:
    """The process is gone, or a zombie waiting for a parent that reaps it (pid 1 of a container may never)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat.rpartition(b")")[2].split()[0] in (b"Z", b"X")


async def _until_ended(pid: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while not _ended(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return _ended(pid)


async def _close_after_it_exited(script: str) -> int:
    """Starts `script` (it names a process it left behind on stdout, then exits by itself), closes the transport
    only once that exit is seen, and returns the pid it named."""
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", script], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    try:
        await _until(lambda: not transport.alive, "the server's exit")
        left = next(int(ev.raw.split()[1]) for ev in recorded if ev.direction == "in" and ev.raw.startswith("left"))
        assert not _ended(left), "what it left behind was to outlive it until the close"
    finally:
        await asyncio.wait_for(transport.close(), DEADLINE_S)
    return left


# Starts a child in its own process group (as any subprocess is) and exits by itself, leaving it running.
EXITS_LEAVING_A_CHILD_IN_ITS_GROUP = textwrap.dedent("""
    import subprocess, sys
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    print(f"left {child.pid}", flush=True)
""")


# Leaves a daemon by the double fork (a session of its own, re-parented once the middle process exits), with the
# environment it was given, and exits by itself.
EXITS_LEAVING_A_DAEMON = textwrap.dedent("""
    import os, sys
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.write(w, f"{os.getpid()}\\n".encode())
            os.execvp("sleep", ["sleep", "300"])
        os._exit(0)
    print(f"left {os.read(r, 64).decode().strip()}", flush=True)
""")


@pytest.mark.parametrize("script", [EXITS_LEAVING_A_CHILD_IN_ITS_GROUP, EXITS_LEAVING_A_DAEMON],
                         ids=["a child in its process group", "a daemon in a session of its own"])
async def test_closing_a_server_that_already_exited_ends_what_it_left_behind(script: str) -> None:
    left = 0
    try:
        left = await _close_after_it_exited(script)
        assert await _until_ended(left), f"{left}, which it left behind, outlived the close"
    finally:
        if left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(left, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    """Any process in the group: asked of the kernel at once (a scan of /proc misses a process that changes its pid
    faster than the scan goes)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Leaves a daemon (a session of its own, deaf to SIGTERM) that forks and exits every 20 ms, so it has a new pid
# each time anyone looks; the server names its session (the daemon's process group) and runs on until closed.
HOPPING_DAEMON = textwrap.dedent("""
    import os, signal, sys, time
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        os.write(w, f"{os.getpid()}\\n".encode())
        if os.fork():
            os._exit(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only a SIGKILL ends it
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        end = time.time() + 60
        while time.time() < end:
            time.sleep(0.02)
            if os.fork():
                os._exit(0)
        os._exit(0)
    print(f"left {os.read(r, 64).decode().strip()}", flush=True)
    time.sleep(300)
""")


async def test_closing_a_server_ends_a_daemon_it_left_that_changes_its_pid_every_few_milliseconds() -> None:
    recorded: list[WireEvent] = []
    transport = StdioTransport([sys.executable, "-c", HOPPING_DAEMON], recorded.append, shutdown_grace_s=0.5)
    await transport.start()
    group = 0
    try:
        await _until(lambda: any(ev.direction == "in" and ev.raw.startswith("left") for ev in recorded),
                     "stdout 'left'")
        group = next(int(ev.raw.split()[1]) for ev in recorded if ev.direction == "in" and ev.raw.startswith("left"))
        assert _group_alive(group)
        await asyncio.wait_for(transport.close(), DEADLINE_S)
        await _until(lambda: not _group_alive(group), "the hopping daemon to be gone after the close")
    finally:
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
