"""`mcp-console doctor` as a CI job runs it (`python -m app doctor …`): the check list on stdout (or --json), exit 0
when no step failed and 1 when one did, against the same real targets as tests/integration/test_doctor.py."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import REPO_ROOT, child_env, mcp_console
from tests.integration.doctor_targets import (
    DEMO_STDIO,
    EXITS_AT_ONCE,
    html_page,
    locked,
    not_found,
    refused_port,
    self_signed_tls,
    serving,
)


def doctor_json(*args: str) -> tuple[int, dict[str, Any]]:
    done = mcp_console("doctor", *args, "--json")
    return done.returncode, json.loads(done.stdout)


def failed_step(report: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["status"] == "fail")


def test_doctor_on_the_demo_server_over_http_prints_every_step_passed_and_exits_0(demo_url: str) -> None:
    done = mcp_console("doctor", demo_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"doctor: {demo_url}"
    assert "✓ ok      era chosen: 2026-07-28" in done.stdout
    assert done.stdout.rstrip().endswith("every step passed, 1 with a warning")  # CORS: the demo allows no browser host


def test_doctor_on_the_demo_server_over_stdio_exits_0_with_every_step_ok() -> None:
    code, report = doctor_json("--stdio", shlex.join(DEMO_STDIO))
    assert code == 0, report
    assert report["kind"] == "stdio" and report["passed"] is True
    assert {c["status"] for c in report["checks"]} == {"ok"}


def test_doctor_on_a_refused_port_exits_1_and_says_what_to_do() -> None:
    with refused_port() as port:
        done = mcp_console("doctor", f"http://127.0.0.1:{port}/mcp")
    assert done.returncode == 1
    assert "✗ fail    TCP connect: 127.0.0.1:" in done.stdout and "refused the connection" in done.stdout
    assert f"fix: Nothing listens on port {port}" in done.stdout
    assert "- skipped server/discover: not run: TCP connect failed" in done.stdout
    assert done.stdout.rstrip().endswith("failed at: TCP connect")


def test_doctor_on_a_self_signed_certificate_exits_1_at_tls(tmp_path: Path) -> None:
    with serving(html_page, tls=self_signed_tls(tmp_path)) as served:
        code, report = doctor_json(served.url)
    assert code == 1
    assert failed_step(report)["name"] == "TLS" and "self-signed" in failed_step(report)["detail"]


def test_doctor_on_an_html_page_exits_1_at_the_http_answer() -> None:
    with serving(html_page) as served:
        code, report = doctor_json(served.url)
    assert code == 1
    assert failed_step(report)["name"] == "HTTP answer" and "an HTML page" in failed_step(report)["detail"]


def test_doctor_on_a_404_exits_1_at_the_http_answer() -> None:
    with serving(not_found) as served:
        code, report = doctor_json(served.url)
    assert code == 1
    assert failed_step(report)["name"] == "HTTP answer" and "HTTP 404" in failed_step(report)["detail"]


def test_doctor_on_a_401_exits_1_with_the_challenge_and_masks_a_typed_token() -> None:
    metadata = "http://127.0.0.1:9/.well-known/oauth-protected-resource"
    with serving(locked(metadata)) as served:
        done = mcp_console("doctor", served.url, "--header", "Authorization: Bearer sk-live-doctor-0123", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failed = failed_step(report)
    assert failed["name"] == "HTTP answer" and "HTTP 401" in failed["detail"]
    assert metadata in failed["fix"]
    assert "sk-live-doctor-0123" not in done.stdout + done.stderr


def test_doctor_on_a_stdio_command_that_exits_at_once_exits_1_with_its_stderr_and_code() -> None:
    done = mcp_console("doctor", "--stdio", shlex.join(EXITS_AT_ONCE))
    assert done.returncode == 1
    assert "✗ fail    first stdout line: the process exited before writing a line on stdout" in done.stdout
    assert "stderr: fatal: API_KEY is not set" in done.stdout
    assert "exit code: the server process exited (code 3)" in done.stdout


def test_doctor_without_a_target_exits_2_not_1_which_says_a_step_failed() -> None:
    done = mcp_console("doctor")
    assert done.returncode == 2
    assert "give a URL, --stdio CMD or --config FILE" in done.stderr


def test_doctor_takes_a_server_of_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "app.demo",
                                                                                              "--stdio"],
                                                         "cwd": str(REPO_ROOT)}}}))
    done = subprocess.run([sys.executable, "-m", "app", "doctor", "--config", str(config), "--server", "demo"],
                          cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every step passed" in done.stdout
