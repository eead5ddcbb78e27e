"""`mcp-console call` speaks either era: Auto probes server/discover and falls back to 2025-11-25 initialize."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import child_env
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 90.0
__all__ = ["legacy_url"]


def mcp_console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_call_in_auto_falls_back_to_initialize_on_a_legacy_http_server(legacy_url: str) -> None:
    done = mcp_console("call", legacy_url, "echo", "--arg", "text=hello legacy")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["content"][0]["text"] == "hello legacy"


def test_call_answers_a_legacy_servers_elicitation_request_from_a_file(legacy_url: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"server-request": {"action": "accept", "content": {"name": "Ada"}}}))
    done = mcp_console("call", legacy_url, "ask", "--elicit", str(answers))
    assert done.returncode == 0, done.stderr
    said = json.loads(json.loads(done.stdout)["result"]["content"][0]["text"])
    assert said["result"] == {"action": "accept", "content": {"name": "Ada"}}  # the whole response it got back


def test_call_forced_legacy_over_stdio_initializes_and_calls(tmp_path: Path) -> None:
    done = mcp_console("call", "--stdio", shlex.join(LEGACY_STDIO), "echo", "--arg", "text=over stdio",
                       "--era", "legacy")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "over stdio"


def test_call_in_auto_stays_modern_on_the_demo_server(demo_url: str) -> None:
    done = mcp_console("call", demo_url, "echo", "--arg", "text=modern")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["resultType"] == "complete"
