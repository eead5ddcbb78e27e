"""A serving console marks itself not dumpable, so a server it starts (running as its user, not root) cannot read
the console's environment (the owner token; in a team, Redis's and PostgreSQL's passwords and the team secret)
from /proc. The stand-in console here is a small Python process with a secret in its environment; its child tries
to read `/proc/<parent>/environ` as any started server could."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")

PARENT = """
import subprocess, sys
from hardening import keep_secrets_from_children
if sys.argv[1] == "hardened":
    assert keep_secrets_from_children()
child = "import os\\ntry:\\n    data = open(f'/proc/{os.getppid()}/environ', 'rb').read()\\n" \\
        "    print('READ' if b'the-team-secret' in data else 'NOT-THERE')\\n" \\
        "except PermissionError:\\n    print('REFUSED')\\n"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout.strip())
"""


def _as_unprivileged() -> tuple[str, dict[str, object]]:
    """The Python to run and how. As root (CI), both processes run as `nobody` (root reads any process's /proc,
    whatever its marks) with the system's Python: the test's own may sit where `nobody` cannot read."""
    if os.getuid() != 0:
        return sys.executable, {}
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if python is None or not os.access(python, os.X_OK):
        pytest.skip("running as root with no system python3 to run as nobody")
    nobody = pwd.getpwnam("nobody")
    return python, {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


def run_parent(mode: str) -> str:
    python, how = _as_unprivileged()
    # The module alone, in a folder anyone may read: the checkout may sit where `nobody` cannot.
    folder = Path(tempfile.mkdtemp(prefix="mcp-hardening-"))
    try:
        folder.chmod(0o755)
        shutil.copy(ROOT / "app" / "hardening.py", folder / "hardening.py")
        (folder / "hardening.py").chmod(0o644)
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(folder),
               "MCP_CONSOLE_TEAM_SECRET": "the-team-secret"}
        done = subprocess.run([python, "-c", PARENT, mode], env=env, cwd="/", capture_output=True, text=True,
                              timeout=60, **how)  # type: ignore[call-overload]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.strip())


def test_a_started_process_cannot_read_a_hardened_consoles_environment() -> None:
    assert run_parent("hardened") == "REFUSED"


def test_without_the_mark_it_could_which_is_why_the_console_sets_it() -> None:
    assert run_parent("plain") == "READ"
