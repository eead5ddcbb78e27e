"""The lint by revision: a 2025-11-25 connection is held to the rules both revisions share, and a malformed result
(a non-boolean isError, a result on an HTTP error status) is a finding in either."""

from __future__ import annotations

from app.mcp.lint import Linter
from app.mcp.lint.checks import notification_problems
from app.mcp.lint.rules import LEGACY, MODERN, RULES, rules_for
from tests.unit.test_lint import incoming, out, rules

CALL = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


def test_a_legacy_result_without_result_type_is_no_finding_of_a_legacy_connection() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}
    assert rules(Linter(LEGACY), out("a", request), incoming("a", answer)) == []
    assert "result.type-missing" in rules(Linter(MODERN), out("a", request), incoming("a", answer))


def test_a_legacy_result_is_checked_against_its_own_revisions_wire_type() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"tools": "not a list"}}
    assert rules(Linter(LEGACY), out("a", request), incoming("a", answer)) == ["frame.schema"]


def test_settling_on_legacy_drops_what_the_probe_showed_under_the_modern_rules() -> None:
    linter = Linter()
    probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    refused = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    assert rules(linter, out("p", probe), incoming("p", refused, 200)) == ["http.error-status"]
    linter.settle(LEGACY)
    assert linter.findings == []
    assert all(RULES[rule].holds_for(LEGACY) for rule in linter.checked)
    server_request = {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}
    assert rules(linter, incoming(None, server_request)) == []  # servers may ask in 2025-11-25


def test_the_legacy_rule_set_is_the_shared_rules_and_the_modern_one_is_all() -> None:
    assert set(rules_for(MODERN)) == set(RULES)
    legacy = set(rules_for(LEGACY))
    assert {"frame.schema", "result.is-error", "http.result-status", "response.unmatched-id"} <= legacy
    assert not legacy & {"result.type-missing", "server.request", "listen.ack-first", "headers.echo"}


def test_a_string_is_error_is_a_finding_in_either_revision() -> None:
    for version in (MODERN, LEGACY):
        answer = {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "isError": "true",
                                                        "content": []}}
        assert "result.is-error" in rules(Linter(version), out("c", CALL), incoming("c", answer)), version


def test_a_boolean_is_error_is_clean() -> None:
    answer = {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "isError": True, "content": []}}
    assert rules(Linter(), out("c", CALL), incoming("c", answer)) == []


def test_a_result_on_http_500_is_a_finding_and_on_200_is_not() -> None:
    answer = {"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "content": []}}
    assert rules(Linter(), out("c", CALL), incoming("c", answer, 500)) == ["http.result-status"]
    assert rules(Linter(), out("d", {**CALL, "id": 6}), incoming("d", {**answer, "id": 6}, 200)) == []


def test_task_notifications_are_taken_on_their_revision_and_must_name_a_task() -> None:
    task = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": None}
    assert notification_problems("notifications/tasks/status", task, "2025-11-25") == []
    assert notification_problems("notifications/tasks", {**task, "ttlMs": None}, "2026-07-28") == []
    assert notification_problems("notifications/tasks/status", {"status": "working"}, "2025-11-25") == [
        ("frame.schema", "notifications/tasks/status names no task (params.taskId)")]
    assert notification_problems("notifications/tasks/status", task, "2026-07-28")[0][0] == "frame.schema"
