"""The processes a stdio server started, and theirs: found while it runs, so that closing it can end them too.

A process-group kill misses a descendant that called setsid() or setpgid() (a daemon's double fork, a tool's
worker); once the server is gone such a process is re-parented and nothing links it to the server any more. So the
tree is read from /proc (each process's parent in /proc/<pid>/stat) while the server still runs. Each process found
is kept with its start time: a pid is signalled only while the same process still holds it, never one reused since.
Where there is no /proc (not Linux) nothing is found, and closing does what the process-group kill does.

The tree alone misses a daemon whose middle process has exited (re-parented before any walk saw it), and everything
once the server itself has exited: its children are re-parented at its exit, before the console can notice it. So
the server is also started with a mark in its environment (MARK_ENV, a random value per start) that its descendants
inherit; `marked` finds the processes whose environment carries it. A process that replaced its environment (an
exec with a clean one) carries no mark: after its server has exited, nothing attributes it, and it is left alone,
unless it is in the process group of a session a marked process made for itself (setsid): that whole group is
ended on close, since everything in such a session descends from the server (see `marked`'s `sessions`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from pathlib import Path

PROC = Path("/proc")
# Fields of /proc/<pid>/stat after the command name (which is in parentheses and may hold anything, ")" too).
_STATE, _PPID, _PGRP, _SESSION, _STARTTIME = 0, 1, 2, 3, 19

Found = dict[int, int]  # pid -> its start time (clock ticks after boot), which tells a reused pid apart
# Not MCP_CONSOLE_*: that prefix names the console's own settings, and none of them reaches a server (stdio.py).
MARK_ENV = "STARTED_BY_MCP_CONSOLE"


def new_mark() -> str:
    """A value for MARK_ENV, one per server started: unguessable, so no process carries it by chance."""
    return secrets.token_hex(16)


def _stat(pid: int | str) -> list[str] | None:
    try:
        text = (PROC / str(pid) / "stat").read_bytes()
    except OSError:  # gone in between, or not ours to read
        return None
    _, _, rest = text.rpartition(b")")
    fields = rest.decode("ascii", errors="replace").split()
    return fields if len(fields) > _STARTTIME else None


def start_time(pid: int) -> int | None:
    """When the process `pid` started (what `descendants` checks it by); None when it is gone or there is no /proc."""
    fields = _stat(pid)
    return int(fields[_STARTTIME]) if fields is not None else None


def descendants(pid: int, started: int | None) -> Found:
    """Every living descendant of `pid` (its children, theirs, and so on), whatever their group or session; none
    unless `pid` is still the process that started at `started` (an exited server's pid may be another's by now)."""
    if started is None or start_time(pid) != started:
        return {}
    children: dict[int, list[tuple[int, int]]] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat(name)
        if fields is None or fields[_STATE] in ("Z", "X"):
            continue
        children.setdefault(int(fields[_PPID]), []).append((int(name), int(fields[_STARTTIME])))
    found: Found = {}
    todo = [pid]
    while todo:
        for child, started in children.get(todo.pop(), ()):
            if child not in found and child != pid:
                found[child] = started
                todo.append(child)
    return found


def marked(mark: str, exclude: int | None = None, sessions: set[int] | None = None) -> Found:
    """Every living process (but `exclude`) whose environment carries MARK_ENV=`mark`: what a server started, and
    theirs, wherever they went since (another session, re-parented to init). Only our own processes can be read.

    `sessions`, when given, gets the sessions such processes made for themselves (setsid), read in the same look
    at each: their process group is the session's, and everything in it descends from its leader (no process can
    join another session). Killing that group (`kill_groups`) ends at once a daemon that forks anew and exits,
    whatever pid it is on by then; a pid found is often gone before its signal arrives."""
    needle = f"{MARK_ENV}={mark}".encode()
    ours = os.getsid(0)
    found: Found = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return {}
    for name in names:
        if not name.isdigit() or int(name) == exclude:
            continue
        try:
            environ = (PROC / name / "environ").read_bytes()
        except OSError:  # gone in between, or another user's
            continue
        if needle not in environ.split(b"\0"):
            continue
        fields = _stat(name)
        if fields is not None and fields[_STATE] not in ("Z", "X"):
            found[int(name)] = int(fields[_STARTTIME])
            group, session = int(fields[_PGRP]), int(fields[_SESSION])
            if sessions is not None and group == session and session not in (ours, 0, 1):
                sessions.add(group)
    return found


def living(found: Found) -> Found:
    """Those of `found` still running as the same process (not exited, not a zombie, pid not reused)."""
    alive: Found = {}
    for pid, started in found.items():
        fields = _stat(pid)
        if fields is not None and fields[_STATE] not in ("Z", "X") and int(fields[_STARTTIME]) == started:
            alive[pid] = started
    return alive


def kill_groups(groups: set[int]) -> None:
    """SIGKILL each process group, right after a scan found it living: a group's id is not reused while any
    process is in it."""
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def send(found: Found, sig: signal.Signals) -> None:
    """Signal each of `found` that is still the process found; one that is gone in between is fine."""
    for pid, started in found.items():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            _send(pid, started, sig)


def _send(pid: int, started: int, sig: signal.Signals) -> None:
    # Through a pidfd where there is one: opened first, it holds the process that had the pid then, so a start
    # time checked after it is that process's, and no reuse can come between the check and the signal.
    pidfd_open = getattr(os, "pidfd_open", None)
    send_signal = getattr(signal, "pidfd_send_signal", None)
    fd = -1
    if pidfd_open is not None and send_signal is not None:
        with contextlib.suppress(OSError):
            fd = pidfd_open(pid)
    try:
        if pid not in living({pid: started}):
            return
        if fd >= 0 and send_signal is not None:
            send_signal(fd, sig)
        else:
            os.kill(pid, sig)
    finally:
        if fd >= 0:
            os.close(fd)
