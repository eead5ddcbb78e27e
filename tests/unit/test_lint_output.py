"""The outputSchema rule for 2025-11-25 sessions (app/mcp/lint/output.py), fed wire events as a session records them."""

from __future__ import annotations

import json
from typing import Any

from app.mcp.jsonrpc import parse_frame
from app.mcp.lint.output import LEGACY_SPEC, OutputLint
from app.mcp.wire import WireEvent

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def out(key: str, request_id: int, method: str, params: dict[str, Any]) -> WireEvent:
    raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    return WireEvent("out", raw, parse_frame(raw), exchange=key)


def back(key: str, request_id: Any, result: Any) -> WireEvent:
    raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
    return WireEvent("in", raw, parse_frame(raw), exchange=key)


def listed(lint: OutputLint, *tools: dict[str, Any]) -> None:
    assert lint.observe(out("k1", 1, "tools/list", {}), 1) == []
    assert lint.observe(back("k1", 1, {"tools": list(tools)}), 2) == []


def call(lint: OutputLint, key: str, name: str, result: Any, request_id: int = 5) -> list[Any]:
    lint.observe(out(key, request_id, "tools/call", {"name": name}), 3)
    return lint.observe(back(key, request_id, result), 4)


def test_a_result_that_breaks_the_schema_or_lacks_structured_content_is_a_finding() -> None:
    lint = OutputLint()
    listed(lint, {"name": "count", "inputSchema": {}, "outputSchema": SCHEMA})
    [finding] = call(lint, "k2", "count", {"content": [], "structuredContent": {"n": "seven"}})
    assert finding.rule == "tools.structured-content" and finding.severity == "error"
    assert finding.exchange == "k2" and finding.seq == 4 and finding.spec_url == LEGACY_SPEC
    assert "'seven' is not of type 'integer'" in finding.message
    [missing] = call(lint, "k3", "count", {"content": []}, request_id=6)
    assert "sent no structuredContent" in missing.message


def test_a_matching_result_an_error_result_and_a_tool_without_schema_are_clean() -> None:
    lint = OutputLint()
    listed(lint, {"name": "count", "outputSchema": SCHEMA}, {"name": "plain"})
    assert call(lint, "k2", "count", {"content": [], "structuredContent": {"n": 7}}) == []
    assert call(lint, "k3", "count", {"content": [], "isError": True}, request_id=6) == []
    assert call(lint, "k4", "plain", {"content": []}, request_id=7) == []
    assert call(lint, "k5", "unlisted", {"content": []}, request_id=8) == []


def test_odd_frames_find_nothing_and_raise_nothing() -> None:
    lint = OutputLint()
    listed(lint, {"name": "count", "outputSchema": SCHEMA}, "not a tool", {"name": 3})
    lint.observe(out("k2", 5, "tools/call", {"name": "count"}), 3)
    assert lint.observe(back("k2", 99, {"content": []}), 4) == []  # another request's id
    assert lint.observe(back("k2", 5, ["not", "an", "object"]), 5) == []
    raw = "not json"
    assert lint.observe(WireEvent("in", raw, parse_frame(raw), exchange="k2"), 6) == []
    assert lint.observe(WireEvent("transport", "", None, exchange="k2", note="closed"), 7) == []
