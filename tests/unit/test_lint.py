"""The lint engine fed wire events by hand: the rules no target can break, and the docs agreeing with the table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.mcp.jsonrpc import encode, parse_frame
from app.mcp.lint import RULES, Linter, engine
from app.mcp.wire import WireEvent

ROOT = Path(__file__).resolve().parents[2]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def out(key: str, message: dict[str, Any], headers: list[tuple[str, str]] | None = None) -> WireEvent:
    raw = encode(message)
    return WireEvent(direction="out", raw=raw, frame=parse_frame(raw), exchange=key, headers=headers)


def status(key: str, code: int, ctype: str = "application/json") -> WireEvent:
    return WireEvent(direction="transport", raw="", exchange=key, http_status=code,
                     headers=[("content-type", ctype)], note=f"HTTP {code}")


def incoming(key: str | None, message: dict[str, Any], code: int | None = 200) -> WireEvent:
    raw = json.dumps(message)
    return WireEvent(direction="in", raw=raw, frame=parse_frame(raw), exchange=key, http_status=code)


def rules(linter: Linter, *events: WireEvent) -> list[str]:
    return [finding.rule for event in events for finding in linter.observe(event)]


def test_request_headers_that_do_not_echo_the_body_are_found() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "_meta": META}}
    headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list"), ("Mcp-Name", "sub")]
    assert rules(Linter(), out("x1", message, headers)) == ["headers.echo", "headers.echo"]


def test_headers_that_echo_the_body_are_clean() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "_meta": META}}
    headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "add")]
    assert rules(Linter(), out("x1", message, headers)) == []


def test_a_notification_post_answered_with_200_is_found_and_202_is_clean() -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    assert rules(Linter(), out("n1", cancel, []), status("n1", 200)) == ["http.notification-status"]
    assert rules(Linter(), out("n2", cancel, []), status("n2", 202)) == []


def test_input_required_on_a_list_method_is_found() -> None:
    linter = Linter()
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": META}}
    answer = {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required", "requestState": "abc"}}
    assert rules(linter, out("x3", request), incoming("x3", answer)) == ["result.input-required-method"]


def test_a_clean_exchange_yields_no_finding() -> None:
    linter = Linter()
    request = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": META}}
    answer = {"jsonrpc": "2.0", "id": 4, "result": {"resultType": "complete", "tools": [
        {"name": "ok", "inputSchema": {"type": "object"}}], "ttlMs": 0, "cacheScope": "private"}}
    assert rules(linter, out("x4", request), status("x4", 200), incoming("x4", answer)) == []
    assert "cache.fields" in linter.checked


def test_a_bug_in_a_check_becomes_a_lint_internal_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any) -> list[Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine.checks, "result_problems", broken)
    linter = Linter()
    request = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": META}}
    found = rules(linter, out("x5", request), incoming("x5", {"jsonrpc": "2.0", "id": 5, "result": {}}))
    assert found == ["lint.internal"]


def test_every_finding_carries_its_rule_severity_and_spec_link() -> None:
    linter = Linter()
    finding = linter.observe(incoming(None, {"jsonrpc": "2.0", "id": 77, "result": {}}))[0]
    assert finding.rule == "response.unmatched-id"
    assert finding.severity == RULES[finding.rule].severity
    assert finding.spec_url.startswith("https://modelcontextprotocol.io/specification/2026-07-28/")
    assert finding.seq == 1


def test_the_recorder_wrapper_records_first_then_reports_findings() -> None:
    kept: list[WireEvent] = []
    found: list[str] = []
    record = Linter().recorder(kept.append, lambda f: found.append(f.rule))
    record(incoming(None, {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}))
    assert len(kept) == 1
    assert found == ["server.request"]


def test_every_rule_id_is_documented_and_every_documented_id_is_a_rule() -> None:
    docs = (ROOT / "docs" / "lint-rules.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z.-]+)` \|", docs, flags=re.MULTILINE))
    assert documented == set(RULES)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    assert "mcp-console call" in readme and "docs/guide.md" in readme
    assert "mcp-console check" in guide
    assert "lint-rules.md" in guide


def test_a_tool_name_ending_in_a_newline_breaks_the_naming_rule() -> None:
    from app.mcp.lint.checks import tool_problems
    assert [rule for rule, _ in tool_problems({"name": "search\n"})] == ["tools.name"]
    assert tool_problems({"name": "search"}) == []
