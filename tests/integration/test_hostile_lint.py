"""`mcp-console check` and `mcp-console call` as real processes: against the demo server (clean) and the hostile
target's lint module (every rule it breaks is found, with its id, in the report and in the JUnit file)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.mcp.lint import RULES
from tests.hostile.fixtures import hostile_argv
from tests.integration.conftest import free_port, mcp_console

# What the hostile target's lint module commits over HTTP (tools_lint.py), one rule each.
HTTP_RULES = {"cache.fields", "tools.x-mcp-header", "tools.name", "result.type-missing", "result.type-unknown",
              "frame.schema", "response.unmatched-id", "server.request", "http.error-status", "error.retired-code",
              "http.request-accepted", "frame.malformed", "sse.framing", "tools.structured-content",
              "request-state.plaintext", "listen.ack-first", "listen.granted-superset", "listen.subscription-id",
              "listen.request-scoped"}
# What only stdio shows: the transport keeps reading after a final response or a cancel.
STDIO_RULES = {"progress.after-final", "progress.after-cancel", "response.after-cancel"}




def junit_cases(path: Path) -> dict[str, ET.Element]:
    suite = ET.parse(path).getroot()
    assert suite.tag == "testsuite"
    return {case.attrib["name"]: case for case in suite.iter("testcase")}


def rules_of(report: dict[str, Any]) -> set[str]:
    return {finding["rule"] for finding in report["findings"]}


def test_demo_server_is_clean_under_check(demo_url: str, tmp_path: Path) -> None:
    junit = tmp_path / "demo.xml"
    done = mcp_console("check", demo_url, "--junit", str(junit), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0, report["findings"]
    assert report["findings"] == []
    cases = junit_cases(junit)
    assert set(cases) == set(RULES)
    assert not any(case.find("failure") is not None for case in cases.values())
    assert "listen.ack-first" in report["rules_checked"]  # the demo offers list changes: a listen stream ran


def test_check_finds_every_rule_the_hostile_target_breaks_over_http(
        hostile_http: Callable[..., str], tmp_path: Path) -> None:
    url = hostile_http("lint")
    junit = tmp_path / "hostile.xml"
    done = mcp_console("check", url, "--call-tools", "all", "--timeout", "1", "--junit", str(junit), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert rules_of(report) >= HTTP_RULES, HTTP_RULES - rules_of(report)
    cases = junit_cases(junit)
    failed = {name for name, case in cases.items() if case.find("failure") is not None}
    # tools.name and the two other warnings stay below the default --fail-on error
    assert {r for r in HTTP_RULES if RULES[r].severity == "error"} <= failed
    assert "tools.name" not in failed
    assert all(f["spec_url"].startswith("https://modelcontextprotocol.io/specification/2026-07-28/")
               for f in report["findings"])


def test_check_fails_on_warnings_when_asked(hostile_http: Callable[..., str]) -> None:
    done = mcp_console("check", hostile_http("lint"), "--fail-on", "warning", "--json")
    assert done.returncode == 1
    assert {"tools.name", "cache.fields"} <= rules_of(json.loads(done.stdout))


def test_check_over_stdio_finds_frames_after_the_final_response_and_after_a_cancel() -> None:
    command = " ".join(hostile_argv("lint"))
    done = mcp_console("check", "--stdio", command, "--call-tools", "all", "--timeout", "1", "--settle", "1",
                       "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert rules_of(report) >= STDIO_RULES, STDIO_RULES - rules_of(report)


def test_check_exits_2_when_the_server_cannot_be_reached() -> None:
    done = mcp_console("check", f"http://127.0.0.1:{free_port()}/mcp")
    assert done.returncode == 2
    assert "could not connect" in done.stdout


def test_call_prints_the_result_as_json_and_writes_a_har(demo_url: str, tmp_path: Path) -> None:
    har = tmp_path / "call.har"
    done = mcp_console("call", demo_url, "add", "--arg", "a=2", "--arg", "b=5", "--har", str(har))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["result"]["resultType"] == "complete"
    assert "7" in json.dumps(out["result"]["content"])
    entries = json.loads(har.read_text())["log"]["entries"]
    call = next(e for e in entries if e["_mcp"]["method"] == "tools/call")
    assert json.loads(call["request"]["postData"]["text"])["params"]["arguments"] == {"a": 2, "b": 5}
    assert {"name": "Mcp-Name", "value": "add"} in [
        {"name": h["name"].title() if h["name"].lower() == "mcp-name" else h["name"], "value": h["value"]}
        for h in call["request"]["headers"]]
    assert call["response"]["status"] == 200


def test_call_answers_elicitation_with_defaults_and_exits_nonzero_on_a_tool_error(
        hostile_http: Callable[..., str]) -> None:
    url = hostile_http("lint")
    done = mcp_console("call", url, "plaintext_state", "--elicit", "defaults")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "confirmed"
    assert mcp_console("call", url, "retired_code").returncode == 1


def test_call_answers_from_a_file_of_answers(demo_url: str, tmp_path: Path) -> None:
    listed = json.loads(mcp_console("call", demo_url, "two_step", "--elicit", "decline").stdout)
    assert "declin" in json.dumps(listed["result"]).lower()
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({}))
    done = mcp_console("call", demo_url, "two_step", "--elicit", str(answers))
    assert done.returncode in (0, 1)
    assert "result" in json.loads(done.stdout)
