"""Never corrupt what is sent: the bytes that reach the hostile target (it says them back, `tools_wire`) are the
bytes the console's wire record shows as sent, over HTTP and stdio, for arguments that are easy to mangle; and
what cannot be sent as JSON text in UTF-8 is not sent, and not recorded as sent."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from app.mcp.headers import decode_value
from tests.hostile.fixtures import HostileUrl, hostile_argv
from tests.integration.conftest import JSON, Console

ODD_ARGUMENTS = {
    "non-ASCII": '{"text": "caf\\u00e9 \\u2713 \\ud83d\\ude00 \\u202e\\u200b"}',
    "huge integers": '{"big": 123456789012345678901234567890, "neg": -98765432109876543210}',
    "floats": '{"a": 1e16, "b": -0.0, "c": 1.5e-7, "d": 0.1}',
    "control characters in keys": '{"a\\u0000b": 1, "line\\nbreak": 2, "tab\\there": 3, "\\u007f": 4}',
    "nested": '{"deep": [[[{"x": [null, true, false, ""]}]]]}',
}


async def _session(console: Console, transport: str, hostile_http: Callable[..., HostileUrl]) -> str:
    if transport == "http":
        return await console.connected_http(hostile_http("wire"))
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("wire")))
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def _call_json(console: Console, sid: str, tool: str, arguments: str) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call",
                                       data={"tool": tool, "mode": "json", "json": arguments}, headers=JSON)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _sent(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in entry["wire"] if w["direction"] == "out"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("arguments", list(ODD_ARGUMENTS.values()), ids=list(ODD_ARGUMENTS))
async def test_odd_arguments_reach_the_target_as_the_wire_record_shows_them_sent(
        console: Console, hostile_http: Callable[..., HostileUrl], transport: str, arguments: str) -> None:
    sid = await _session(console, transport, hostile_http)
    reply = await _call_json(console, sid, "wire_echo", arguments)
    assert reply["ok"], reply
    said = json.loads(reply["result"]["content"][0]["text"])
    arrived = base64.b64decode(said["body"])
    entry = await console.entry(sid, reply["key"])
    (sent,) = _sent(entry)
    assert arrived == sent["raw"].encode("utf-8")
    assert json.loads(arrived)["params"]["arguments"] == json.loads(arguments)  # what was meant, exactly
    if transport == "http":  # every header recorded is a header that went (names and values as sent)
        head = base64.b64decode(said["head"]).decode("latin-1").split("\r\n")[1:]
        went = {tuple(line.split(": ", 1)) for line in head if line}
        recorded = {(name, value) for name, value in sent["headers"]}
        assert went == recorded  # names in the case they went with


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_lone_surrogate_in_the_arguments_is_not_sent_and_not_recorded_as_sent(
        console: Console, hostile_http: Callable[..., HostileUrl], transport: str) -> None:
    # Valid JSON text (the escape \ud800) with no UTF-8 form once decoded: it cannot go out unchanged.
    sid = await _session(console, transport, hostile_http)
    reply = await _call_json(console, sid, "wire_echo", '{"text": "\\ud800"}')
    assert not reply["ok"], reply
    entry = await console.entry(sid, reply["key"])
    assert _sent(entry) == [], entry["wire"]
    notes = " ".join(str(w.get("note") or "") for w in entry["wire"])
    assert "surrogate" in notes, entry["wire"]
    after = await _call_json(console, sid, "wire_echo", '{"text": "fine"}')  # the session goes on
    assert after["ok"], after


def _head(said: dict[str, Any]) -> dict[str, str]:
    lines = base64.b64decode(said["head"]).decode("latin-1").split("\r\n")[1:]
    return {name: value for name, value in (line.split(": ", 1) for line in lines if line)}


@pytest.mark.parametrize(("tool", "arguments"), [
    ("long name", "{}"),
    ("wire_echo_header", '{"region": "caf\\u00e9 \\u2713"}'),
    ("wire_echo_header", '{"region": "  padded  "}'),
    ("wire_echo_header", '{"region": "=?base64?looks encoded?="}'),
])
async def test_names_and_annotated_arguments_become_headers_the_target_reads_back_as_recorded(
        console: Console, hostile_http: Callable[..., HostileUrl], tool: str, arguments: str) -> None:
    from tests.hostile.tools_wire import LONG_NAME
    name = LONG_NAME if tool == "long name" else tool
    sid = await console.connected_http(hostile_http("wire"))
    reply = await _call_json(console, sid, name, arguments)
    assert reply["ok"], reply
    said = json.loads(reply["result"]["content"][0]["text"])
    (sent,) = _sent(await console.entry(sid, reply["key"]))
    went = _head(said)
    assert went == dict(sent["headers"])
    assert decode_value(went["Mcp-Name"]) == name
    if tool == "wire_echo_header":
        assert decode_value(went["Mcp-Param-Region"]) == json.loads(arguments)["region"]


async def test_a_lone_surrogate_in_an_argument_that_becomes_a_header_is_not_sent_and_says_why(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("wire"))
    reply = await _call_json(console, sid, "wire_echo_header", '{"region": "\\ud800"}')
    assert not reply["ok"], reply
    entry = await console.entry(sid, reply["key"])
    assert _sent(entry) == [], entry["wire"]
    after = await _call_json(console, sid, "wire_echo_header", '{"region": "fine"}')
    assert after["ok"], after


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("index", range(6), ids=["trailing space", "leading space", "non-ASCII", "CRLF",
                                                 "sentinel look-alike", "4,000 characters"])
async def test_a_listed_resource_with_an_odd_uri_is_read_by_exactly_that_uri(
        console: Console, hostile_http: Callable[..., HostileUrl], transport: str, index: int) -> None:
    from tests.hostile.tools_wire import ODD_URIS
    uri = ODD_URIS[index]
    sid = await _session(console, transport, hostile_http)
    listed = [r["uri"] for r in (await console.session(sid))["lists"]["resources"]]
    assert uri in listed
    response = await console.http.post(f"/sessions/{sid}/resources/read", data={"uri": uri}, headers=JSON)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["ok"], reply
    said = json.loads(reply["result"]["contents"][0]["text"])
    arrived = base64.b64decode(said["body"])
    assert json.loads(arrived)["params"]["uri"] == uri
    (sent,) = _sent(await console.entry(sid, reply["key"]))
    assert arrived == sent["raw"].encode("utf-8")
    if transport == "http":
        went = _head(said)
        assert went == dict(sent["headers"]) and decode_value(went["Mcp-Name"]) == uri


async def test_an_answer_nested_hundreds_deep_is_shown_without_indenting_it_into_megabytes(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # Indented, a value nested 900 deep is 900 times its size (each level a line, each line its depth's indent):
    # 36 KB of brackets became a 65 MB answer that took the console 5 s to render (every session waited), and a
    # 16 MB message would take gigabytes. Past a bound the value is shown compact instead: every byte still there.
    sid = await console.connected_http(hostile_http("wire"))
    arguments = {"depth": 900, "copies": 20}
    response = await console.http.post(f"/sessions/{sid}/tools/call",
                                       data={"tool": "deep", "mode": "json", "json": json.dumps(arguments)})
    assert response.status_code == 200
    assert len(response.content) < 2_000_000, len(response.content)
    reply = await _call_json(console, sid, "deep", json.dumps(arguments))
    page = await console.http.get(f"/sessions/{sid}/entries/{reply['key']}")
    assert page.status_code == 200 and len(page.content) < 2_000_000, len(page.content)
    nested = "[" * 900 + "]" * 900
    assert nested in page.text  # shown whole, compact


def test_an_ordinary_value_is_still_shown_indented() -> None:
    from app.mcp.jsonrpc import pretty
    from app.web.render import to_json
    value = {"a": [1, {"b": "c"}], "d": {"e": {"f": [True, None]}}}
    assert to_json(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert pretty(json.dumps(value)) == json.dumps(value, indent=2, ensure_ascii=False)
