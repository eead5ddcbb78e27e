"""The connection doctor (app/mcp/doctor) against real targets, each started by its test on 127.0.0.1 and stopped
by it: which step fails, what it says, what it says to do, and that the steps after it are skipped; the demo
server passes every step over HTTP and over stdio. Then the console: a failed connect runs it and the session's
JSON twin has the check list; the owner can run it on a connected session at any time."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.mcp.doctor import Report, diagnose
from tests.integration.conftest import REPO_ROOT, eventually
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
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url
from tests.processes import wait_gone

if TYPE_CHECKING:
    from tests.integration.conftest import Console

__all__ = ["legacy_url"]
TIMEOUT_S = 10.0


def statuses(report: Report) -> dict[str, str]:
    return {check.name: check.status for check in report.checks}


def step(report: Report, name: str) -> Any:
    return next(check for check in report.checks if check.name == name)


def assert_failed_at(report: Report, name: str) -> None:
    """`name` is the first failed step, and every step after it is skipped (but a stdio process's stderr and exit
    code, which are read whatever came before)."""
    names = [c.name for c in report.checks]
    failed = report.failed
    assert failed is not None and failed.name == name, report.to_dict()
    assert failed.fix, "a failed step says what to do"
    after = report.checks[names.index(name) + 1:]
    assert all(c.status == "skipped" and f"{name} failed" in c.detail for c in after
               if c.name not in ("stderr", "exit code")), report.to_dict()
    assert not report.passed


async def test_the_demo_server_over_http_passes_every_step(demo_url: str) -> None:
    report = await diagnose(url=demo_url, timeout_s=TIMEOUT_S)
    assert report.passed, report.to_dict()
    assert statuses(report) == {"name resolution": "ok", "TCP connect": "ok", "TLS": "skipped", "HTTP answer": "ok",
                                "CORS for browser hosts": "warn", "server/discover": "ok", "initialize": "ok",
                                "era chosen": "ok"}
    assert "HTTP 200, application/json" in step(report, "HTTP answer").detail
    assert "mcp-console-demo" in step(report, "server/discover").detail
    assert "2025-11-25" in step(report, "initialize").detail
    assert step(report, "era chosen").detail.startswith("2026-07-28")


async def test_the_demo_server_over_stdio_passes_every_step_and_is_left_running_nowhere() -> None:
    events: list[Any] = []
    report = await diagnose(argv=DEMO_STDIO, timeout_s=TIMEOUT_S, events=events)
    assert report.passed, report.to_dict()
    assert [c.status for c in report.checks] == ["ok"] * 8, report.to_dict()
    assert step(report, "first stdout line").detail.startswith("JSON-RPC: {")
    assert "still running" in step(report, "exit code").detail
    pids = [int(e.note.split()[2].rstrip(":")) for e in events if e.signal == "process_started"]
    assert len(pids) == 2  # discover's process and initialize's (a fresh one, as a fallback would have)
    for pid in pids:
        assert await wait_gone(pid, 10.0), f"the doctor left pid {pid} running"


async def test_a_2025_11_25_server_over_http_passes_with_discover_not_served_and_the_era_falling_back(
        legacy_url: str) -> None:
    report = await diagnose(url=legacy_url, timeout_s=TIMEOUT_S)
    assert report.passed, report.to_dict()
    assert statuses(report)["server/discover"] == "warn" and "not served" in step(report, "server/discover").detail
    assert statuses(report)["initialize"] == "ok"
    era = step(report, "era chosen")
    assert era.status == "ok" and era.detail.startswith("2025-11-25 (the initialize handshake)")


async def test_a_2025_11_25_server_over_stdio_passes_with_the_era_falling_back() -> None:
    report = await diagnose(argv=LEGACY_STDIO, timeout_s=TIMEOUT_S)
    assert report.passed, report.to_dict()
    assert step(report, "era chosen").detail.startswith("2025-11-25")


async def test_a_refused_port_fails_at_tcp_connect_and_skips_the_rest() -> None:
    with refused_port() as port:
        report = await diagnose(url=f"http://127.0.0.1:{port}/mcp", timeout_s=TIMEOUT_S)
    assert_failed_at(report, "TCP connect")
    assert "refused" in step(report, "TCP connect").detail
    assert f"Nothing listens on port {port}" in step(report, "TCP connect").fix


async def test_a_self_signed_certificate_fails_at_tls_and_is_named_as_such(tmp_path: Path) -> None:
    with serving(html_page, tls=self_signed_tls(tmp_path)) as served:
        report = await diagnose(url=served.url, timeout_s=TIMEOUT_S)
    assert_failed_at(report, "TLS")
    tls = step(report, "TLS")
    assert "self-signed" in tls.detail
    assert "SSL_CERT_FILE" in tls.fix


async def test_an_html_page_fails_at_the_http_answer_with_the_endpoint_to_look_for() -> None:
    with serving(html_page) as served:
        report = await diagnose(url=served.url, timeout_s=TIMEOUT_S)
    assert_failed_at(report, "HTTP answer")
    answer = step(report, "HTTP answer")
    assert "HTTP 200, text/html" in answer.detail and "an HTML page" in answer.detail
    assert "/mcp" in answer.fix


async def test_a_404_fails_at_the_http_answer_after_initialize_is_refused_too() -> None:
    with serving(not_found) as served:
        report = await diagnose(url=served.url, timeout_s=TIMEOUT_S)
        methods = list(served.methods)
    assert_failed_at(report, "HTTP answer")
    assert "HTTP 404" in step(report, "HTTP answer").detail
    assert "path" in step(report, "HTTP answer").fix
    assert methods == ["POST", "POST"]  # server/discover, then initialize (a 2025-11-25 server may 404 the first)


async def test_a_401_fails_at_the_http_answer_with_its_challenge_and_metadata_url() -> None:
    metadata = "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
    with serving(locked(metadata)) as served:
        report = await diagnose(url=served.url, timeout_s=TIMEOUT_S)
    assert_failed_at(report, "HTTP answer")
    answer = step(report, "HTTP answer")
    assert "HTTP 401" in answer.detail and "Bearer challenge" in answer.detail and "scope=files:read" in answer.detail
    assert f"protected resource metadata is at {metadata}" in answer.fix
    assert "OAuth" in answer.fix


async def test_a_stdio_command_that_exits_at_once_fails_with_its_stderr_and_exit_code() -> None:
    report = await diagnose(argv=EXITS_AT_ONCE, timeout_s=TIMEOUT_S)
    assert_failed_at(report, "first stdout line")
    assert statuses(report)["process started"] == "ok"
    assert "fatal: API_KEY is not set" in step(report, "stderr").detail
    assert "code 3" in step(report, "exit code").detail and step(report, "exit code").status == "fail"


async def test_a_command_not_on_path_fails_at_the_first_step() -> None:
    report = await diagnose(argv=["no-such-mcp-server-here", "--stdio"], timeout_s=TIMEOUT_S)
    assert_failed_at(report, "command found")
    assert "not on PATH" in step(report, "command found").detail


async def _doctor_done(console: Console, session_id: str) -> dict[str, Any]:
    async def ran() -> dict[str, Any] | None:
        s = await console.session(session_id)
        doctor = s.get("doctor") or {}
        return s if doctor.get("report") and not doctor.get("running") else None

    result: dict[str, Any] = await eventually(ran, what="the doctor's report")
    return result


async def test_a_failed_connect_runs_the_doctor_and_the_json_twin_has_the_failed_step(console: Console) -> None:
    with refused_port() as port:
        s = await console.connect(kind="http", url=f"http://127.0.0.1:{port}/mcp", headers="")
        assert s["status"] == "failed"
        s = await _doctor_done(console, s["id"])
    report = s["doctor"]["report"]
    assert report["passed"] is False
    failed = next(c for c in report["checks"] if c["status"] == "fail")
    assert failed["name"] == "TCP connect" and failed["fix"]
    notices = [e for e in s["timeline"] if e["kind"] == "notice" and "doctor: TCP connect failed" in e["message"]]
    assert notices


async def test_the_owner_runs_the_doctor_on_a_connected_session(console: Console, demo_url: str) -> None:
    session_id = await console.connected_http(demo_url)
    response = await console.http.post(f"/sessions/{session_id}/doctor")
    assert response.status_code == 303
    s = await _doctor_done(console, session_id)
    assert s["doctor"]["report"]["passed"] is True
    assert s["status"] == "connected"  # the doctor's requests went on connections of their own
    page = await console.http.get(f"/sessions/{session_id}")
    assert "Run the doctor" in page.text and "every step passed" in page.text


async def test_a_failed_stdio_connect_runs_the_doctor_and_its_report_keeps_a_typed_secret_masked(
        console: Console) -> None:
    command = shlex.join([*EXITS_AT_ONCE, "--api-key", "sk-live-doctor-secret-42"])
    s = await console.connect(kind="stdio", command=command, cwd=str(REPO_ROOT))
    assert s["status"] == "failed"
    s = await _doctor_done(console, s["id"])
    report = s["doctor"]["report"]
    assert report["kind"] == "stdio"
    assert next(c for c in report["checks"] if c["status"] == "fail")["name"] == "first stdout line"
    assert "fatal: API_KEY is not set" in next(c for c in report["checks"] if c["name"] == "stderr")["detail"]
    assert "sk-live-doctor-secret-42" not in json.dumps(s)
