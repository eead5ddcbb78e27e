"""The console against the real demo server process over Streamable HTTP, driven through its routes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.integration.conftest import Console, Seen, TinyHttp

PROTOCOL = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
JSON = {"Accept": "application/json"}
HTML = {"Accept": "text/html", "HX-Request": "true"}


async def _connected(console: Console, demo_url: str) -> dict[str, Any]:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return s


def _header(event: dict[str, Any], name: str) -> str | None:
    return next((v for k, v in event["headers"] or [] if k.lower() == name.lower()), None)


def _outgoing_post(wire: list[dict[str, Any]]) -> dict[str, Any]:
    [out] = [w for w in wire if w["direction"] == "out"]
    return out


async def test_connecting_shows_server_info_versions_capabilities_and_instructions(
        console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    server = s["server"]
    assert server["info"]["name"] == "mcp-console-demo"
    assert PROTOCOL in server["supportedVersions"]
    assert {"tools", "resources", "prompts"} <= set(server["capabilities"])
    assert isinstance(server["instructions"], str) and "profile_form" in server["instructions"]
    assert s["status_message"] == ""
    assert s["transport"] == "http" and s["target"] == demo_url


async def test_connecting_fetches_non_empty_lists_of_every_kind(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    for key in ("tools", "resources", "resourceTemplates", "prompts"):
        assert s["lists"][key], f"{key} is empty"
    names = {t["name"] for t in s["lists"]["tools"]}
    assert {"add", "echo", "fail", "regional", "html_trap"} <= names
    assert "demo://readme" in {r["uri"] for r in s["lists"]["resources"]}


async def test_calling_add_sends_integers_and_validates_structured_content(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "add", a="2", b="40")
    arguments = reply["params"]["arguments"]
    assert arguments == {"a": 2, "b": 40}
    assert type(arguments["a"]) is int and type(arguments["b"]) is int
    assert reply["ok"] is True and reply["error"] is None
    assert reply["result"]["structuredContent"] == {"sum": 42}
    assert reply["output_validation"]["valid"] is True


async def test_timeline_has_one_finished_entry_per_exchange_with_timing_and_size(
        console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "add", a="2", b="40")
    timeline = (await console.session(s["id"]))["timeline"]
    keys = [e["key"] for e in timeline]
    assert len(keys) == len(set(keys)), "an entry appears more than once"
    exchanges = [e for e in timeline if e["kind"] == "exchange"]
    assert sorted(e["method"] for e in exchanges if e["method"] != "tools/call") == sorted(
        ["server/discover", "tools/list", "resources/list", "resources/templates/list", "prompts/list"])
    for e in exchanges:
        assert e["status"] == "ok", e
        assert isinstance(e["id"], int)
        assert isinstance(e["duration_ms"], float) and e["duration_ms"] > 0
        assert e["bytes_in"] > 0
        assert e["http_status"] == 200
    # The call is on the timeline once: as its own exchange, or as the one round of an operation.
    calls = [e for e in timeline if e["method"] == "tools/call"]
    assert len(calls) == 1 and calls[0]["name"] == "add"
    assert set(await console.shown_statuses(s["id"], reply["key"])) <= {"ok", "complete"}


async def test_entry_json_of_a_tool_call_has_its_exchange_snapshot(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "add", a="2", b="40")
    entry = (await console.entry(s["id"], reply["key"]))["entry"]
    assert entry is not None
    assert entry["method"] == "tools/call" and entry["name"] == "add" and entry["id"] == reply["id"]
    assert entry["status"] == "ok"
    assert isinstance(entry["duration_ms"], float) and entry["duration_ms"] > 0
    assert entry["bytes_in"] > 0 and entry["http_status"] == 200


async def test_entry_wire_shows_the_post_with_mcp_headers_and_meta(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "add", a="2", b="40")
    detail = await console.entry(s["id"], reply["key"])
    out = _outgoing_post(detail["wire"])
    assert out["exchange"] == reply["key"]
    assert _header(out, "MCP-Protocol-Version") == PROTOCOL
    assert _header(out, "Mcp-Method") == "tools/call"
    assert _header(out, "Mcp-Name") == "add"
    body = json.loads(out["raw"])
    assert body["method"] == "tools/call" and body["id"] == reply["id"]
    assert body["params"]["_meta"][META_VERSION] == PROTOCOL
    assert body["params"]["arguments"] == {"a": 2, "b": 40}
    incoming = [w for w in detail["wire"] if w["direction"] == "in"]
    assert incoming and incoming[-1]["kind"] == "response" and incoming[-1]["http_status"] == 200


async def test_regional_sends_the_mcp_param_region_header(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "regional", region="eu-west", query="q")
    assert reply["ok"] is True, reply["error"]
    out = _outgoing_post((await console.entry(s["id"], reply["key"]))["wire"])
    assert _header(out, "Mcp-Param-Region") == "eu-west"
    assert "Mcp-Param-Region header: 'eu-west'" in reply["result"]["content"][0]["text"]


async def test_fail_tool_gives_an_is_error_result_not_a_json_rpc_error(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "fail", message="it broke on purpose")
    assert reply["error"] is None
    assert reply["result"]["isError"] is True
    assert reply["result"]["content"][0]["text"] == "it broke on purpose"
    html = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "fail"}, headers=HTML)
    assert "isError" in html.text


async def test_fail_tool_call_is_marked_tool_error_on_the_timeline(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "fail")
    assert "tool_error" in await console.shown_statuses(s["id"], reply["key"])


async def test_html_trap_is_raw_in_json_but_escaped_in_the_html_fragment(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "html_trap")
    assert "<script>alert(1)</script>" in reply["result"]["content"][0]["text"]

    response = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "html_trap"},
                                       headers=HTML)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "<b>not bold</b>" not in html


async def test_reading_a_resource_and_getting_a_prompt_work(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    read = await console.http.post(f"/sessions/{s['id']}/resources/read", data={"uri": "demo://readme"},
                                   headers=JSON)
    assert read.status_code == 200
    body = read.json()
    assert body["ok"] is True
    [content] = body["result"]["contents"]
    assert content["uri"] == "demo://readme" and content["text"].startswith("# MCP Console demo server")

    prompt = await console.http.post(f"/sessions/{s['id']}/prompts/get", data={"prompt": "greet", "arg.name": "Ada"},
                                     headers=JSON)
    assert prompt.status_code == 200
    body = prompt.json()
    assert body["ok"] is True
    assert body["params"]["arguments"] == {"name": "Ada"}
    assert "Ada" in body["result"]["messages"][0]["content"]["text"]

    timeline = (await console.session(s["id"]))["timeline"]
    named = {(e["method"], e["name"]): e["status"] for e in timeline}
    assert named[("resources/read", "demo://readme")] in ("ok", "complete")
    assert named[("prompts/get", "greet")] in ("ok", "complete")


async def test_unknown_tool_on_the_demo_server_gives_json_rpc_error_32602(console: Console, demo_url: str) -> None:
    s = await _connected(console, demo_url)
    reply = await console.call_tool(s["id"], "no_such_tool")
    assert reply["ok"] is False
    assert reply["error"] is not None and reply["error"]["code"] == -32602


async def test_a_json_rpc_32602_error_is_shown_in_the_reply_error(console: Console, tiny_http: TinyHttp) -> None:
    # The console's side of the unknown-tool case, against a server that answers as the spec says.
    def handler(seen: Seen) -> tuple[int, str, bytes]:
        message = seen.json()
        if message["method"] == "server/discover":
            return 200, "application/json", tiny_http.result(message["id"], tiny_http.discover())
        name = message["params"].get("name")
        return 200, "application/json", tiny_http.error(message["id"], -32602, f"Unknown tool: {name}")

    server = tiny_http.start(handler)
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected", s["status_message"]
    reply = await console.call_tool(s["id"], "no_such_tool")
    assert reply["ok"] is False and reply["result"] is None
    assert reply["error"]["code"] == -32602
    assert reply["error"]["name"] == "Invalid params"
    assert "Unknown tool: no_such_tool" in reply["error"]["message"]
    assert "error" in await console.shown_statuses(s["id"], reply["key"])
    [incoming] = [w for w in (await console.entry(s["id"], reply["key"]))["wire"] if w["direction"] == "in"]
    assert incoming["kind"] == "error" and json.loads(incoming["raw"])["error"]["code"] == -32602

    html = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "no_such_tool"},
                                   headers=HTML)
    assert "-32602" in html.text and "Invalid params" in html.text
