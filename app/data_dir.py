"""One console process per data directory: its SQLite store, its public name and the demo's key are one process's.

Two consoles on one directory both restored its sessions, wrote events under the same sequence numbers (each
overwrote the other's rows) and could send a waiting operation's retry twice. A team shares PostgreSQL, not a data
directory, so only the embedded store takes the lock. The lock is the kernel's (`flock`): it goes with the process,
`kill -9` included, so a crashed console never leaves a directory locked.
"""

from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Windows: no lock, as before
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "console.lock"
_held: dict[str, int] = {}  # lock path → its descriptor, held for the life of the process


def hold(data_dir: Path) -> None:
    """Take the directory for this process, or exit saying which process has it."""
    if fcntl is None:
        return
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = data_dir / LOCK_FILE
    key = str(path.resolve())
    if key in _held:
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by the servers the console starts
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        who = f" (pid {other})" if other.isdigit() else ""
        raise SystemExit(f"Another MCP Console{who} is using the data directory {data_dir}: stop it first, or give "
                         "this one a directory of its own (--data-dir).") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode("ascii"))
    _held[key] = fd
