"""The 2026-07-28 request headers: value encoding, x-mcp-header validity, and which headers a POST carries."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from app.mcp.headers import decode_value, encode_value, param_headers, request_headers


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


@pytest.mark.parametrize("value", ["us-west1", "execute_sql", "a b c", "tab\tinside", "~!@#$%^&*()", "x"])
def test_encode_value_sends_plain_ascii_as_is(value: str) -> None:
    assert encode_value(value) == value


@pytest.mark.parametrize("value", [" leading", "trailing ", "\tleading-tab", "trailing-tab\t", " "])
def test_encode_value_base64_encodes_leading_or_trailing_whitespace(value: str) -> None:
    assert encode_value(value) == b64(value)


@pytest.mark.parametrize("value", ["Zürich", "東京", "emoji 🙂", "caf\u00e9"])
def test_encode_value_base64_encodes_non_ascii_as_utf8(value: str) -> None:
    assert encode_value(value) == b64(value)


@pytest.mark.parametrize("value", ["line\nbreak", "carriage\rreturn", "nul\x00", "bell\x07", "del\x7f"])
def test_encode_value_base64_encodes_control_characters(value: str) -> None:
    assert encode_value(value) == b64(value)


@pytest.mark.parametrize("value", ["=?base64?aGk=?=", "=?base64??="])
def test_encode_value_base64_encodes_a_value_that_already_looks_like_the_sentinel(value: str) -> None:
    encoded = encode_value(value)
    assert encoded == b64(value)
    assert decode_value(encoded) == value


@pytest.mark.parametrize("value, text", [(42, "42"), (-7, "-7"), (0, "0"), (2**53 - 1, "9007199254740991")])
def test_encode_value_writes_integers_in_decimal(value: int, text: str) -> None:
    assert encode_value(value) == text


def test_encode_value_writes_booleans_as_true_and_false() -> None:
    assert encode_value(True) == "true"
    assert encode_value(False) == "false"


@pytest.mark.parametrize("value", ["plain", " padded ", "Zürich", "=?base64?x?=", "a\r\nb", "", "\t"])
def test_decode_value_undoes_encode_value(value: str) -> None:
    assert decode_value(encode_value(value)) == value


def test_decode_value_returns_a_broken_sentinel_unchanged() -> None:
    assert decode_value("=?base64?not base64!?=") == "=?base64?not base64!?="
    assert decode_value("plain") == "plain"


def tool(**props: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": props}}


def test_param_headers_maps_each_annotated_argument_to_its_header_name() -> None:
    mapping, problem = param_headers(tool(region={"type": "string", "x-mcp-header": "Region"},
                                          count={"type": "integer", "x-mcp-header": "Count"},
                                          dry={"type": "boolean", "x-mcp-header": "Dry-Run"},
                                          plain={"type": "string"}))
    assert problem is None
    assert mapping == {"region": "Region", "count": "Count", "dry": "Dry-Run"}


def test_param_headers_is_empty_for_a_tool_without_a_schema() -> None:
    assert param_headers({"name": "t"}) == ({}, None)
    assert param_headers({"name": "t", "inputSchema": {"type": "object"}}) == ({}, None)


@pytest.mark.parametrize("name", ["", "Has Space", "New\nLine", "Region\n", "Colon:", "Ünï", "(paren)", 5, None])
def test_param_headers_reports_an_invalid_header_token(name: Any) -> None:
    mapping, problem = param_headers(tool(a={"type": "string", "x-mcp-header": name}))
    assert mapping == {}
    assert problem is not None and "not a valid header token" in problem


def test_param_headers_reports_duplicate_header_names_case_insensitively() -> None:
    mapping, problem = param_headers(tool(a={"type": "string", "x-mcp-header": "Region"},
                                          b={"type": "string", "x-mcp-header": "region"}))
    assert mapping == {}
    assert problem is not None and "not unique" in problem


@pytest.mark.parametrize("kind", ["object", "array", "null", None])
def test_param_headers_reports_a_non_primitive_type(kind: Any) -> None:
    sub: dict[str, Any] = {"x-mcp-header": "Thing"}
    if kind is not None:
        sub["type"] = kind
    mapping, problem = param_headers(tool(a=sub))
    assert mapping == {}
    assert problem is not None and "needs type string, integer or boolean" in problem


def test_param_headers_reports_a_number_typed_property() -> None:
    mapping, problem = param_headers(tool(a={"type": "number", "x-mcp-header": "Ratio"}))
    assert mapping == {}
    assert problem is not None


def test_request_headers_always_carry_the_protocol_version_and_method() -> None:
    assert request_headers("tools/list", {}, "2026-07-28") == {"MCP-Protocol-Version": "2026-07-28",
                                                              "Mcp-Method": "tools/list"}
    assert request_headers("ping", {"name": "ignored"}, "2026-07-28") == {"MCP-Protocol-Version": "2026-07-28",
                                                                         "Mcp-Method": "ping"}


@pytest.mark.parametrize("method, params, name", [
    ("tools/call", {"name": "execute_sql"}, "execute_sql"),
    ("prompts/get", {"name": "greeting"}, "greeting"),
    ("resources/read", {"uri": "file:///etc/hosts", "name": "not this"}, "file:///etc/hosts"),
])
def test_request_headers_add_mcp_name_for_the_three_named_methods(method: str, params: dict, name: str) -> None:
    assert request_headers(method, params, "2026-07-28")["Mcp-Name"] == name


def test_request_headers_encode_a_non_ascii_name() -> None:
    assert request_headers("tools/call", {"name": "wetter für"}, "v")["Mcp-Name"] == b64("wetter für")


def test_request_headers_add_mcp_param_only_for_present_non_null_arguments() -> None:
    arg_headers = {"region": "Region", "count": "Count", "flag": "Flag", "missing": "Missing"}
    params = {"name": "t", "arguments": {"region": "us-west1", "count": 3, "flag": None}}
    headers = request_headers("tools/call", params, "2026-07-28", arg_headers)
    assert headers["Mcp-Param-Region"] == "us-west1"
    assert headers["Mcp-Param-Count"] == "3"
    assert "Mcp-Param-Flag" not in headers
    assert "Mcp-Param-Missing" not in headers


def test_request_headers_encode_false_and_zero_rather_than_dropping_them() -> None:
    params = {"name": "t", "arguments": {"flag": False, "count": 0}}
    headers = request_headers("tools/call", params, "v", {"flag": "Flag", "count": "Count"})
    assert headers["Mcp-Param-Flag"] == "false"
    assert headers["Mcp-Param-Count"] == "0"


def test_request_headers_add_no_mcp_param_for_other_methods() -> None:
    headers = request_headers("prompts/get", {"name": "p", "arguments": {"region": "x"}}, "v", {"region": "Region"})
    assert not any(h.startswith("Mcp-Param-") for h in headers)


def test_a_value_is_plain_exactly_when_every_character_is_a_tab_or_printable_ascii() -> None:
    for ch in map(chr, range(0x250)):
        plain = ch == "\t" or 0x20 <= ord(ch) <= 0x7E
        encoded = encode_value(f"a{ch}b")
        assert (encoded == f"a{ch}b") is plain, repr(ch)
