"""What a serving console does to its own process so that the servers it starts cannot read its secrets.

A stdio server runs as the console's user. It gets none of the console's `MCP_CONSOLE_*` variables
(`app/mcp/stdio.py inherited_env`), but on Linux a process may read `/proc/<pid>/environ` and the memory of
any other process of its user: the console's environment holds the owner token and, in a team, the Redis and
PostgreSQL passwords and the team secret. A process marked not dumpable (`prctl(PR_SET_DUMPABLE, 0)`) has those
files owned by root, and is refused to ptrace by its user's other processes, so a started server (not running as
root) reads neither. It also means no core file; a debugger needs root. The mark does not pass to the programs
the console starts (`execve` resets it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
log = logging.getLogger("mcp_console.hardening")


def _prctl() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function = libc.prctl
    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    function.restype = ctypes.c_int
    return function


def keep_secrets_from_children() -> bool:
    """Mark this process not dumpable (Linux); whether it is now. Elsewhere nothing is done (False)."""
    prctl = _prctl()
    if prctl is None:
        return False
    if prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("could not mark the console process not dumpable (errno %d): a server it starts could read "
                    "its environment from /proc", ctypes.get_errno())
        return False
    return bool(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)


def die_with_parent() -> None:
    """In a child before it runs its program (`preexec_fn`, Linux): the kernel sends it SIGTERM when the process
    that started it dies, a `kill -9` included. Elsewhere nothing is done: the parent stops it when it can."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
