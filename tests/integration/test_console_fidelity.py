"""What the console sends stays exactly right: ids never repeat, capabilities are not lost,
unknown result types are not taken as success, and nothing non-JSON goes out."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import JSON, Console, Seen, TinyHttp


def _tiny_mcp(tiny_http: TinyHttp, call_result: dict[str, Any]) -> Any:
    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        if body["method"] == "server/discover":
            return 200, "application/json", TinyHttp.result(body["id"], TinyHttp.discover(capabilities={"tools": {}}))
        if body["method"] == "tools/list":
            tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"type": "number"}}}}
            return 200, "application/json", TinyHttp.result(body["id"], {"resultType": "complete", "tools": [tool]})
        return 200, "application/json", TinyHttp.result(body["id"], call_result)
    return tiny_http.start(handler)


async def test_an_unknown_result_type_ends_the_operation_as_invalid_not_complete(
        console: Console, tiny_http: TinyHttp) -> None:
    server = _tiny_mcp(tiny_http, {"resultType": "incomplete", "inputRequests": {}})
    s = await console.connect(kind="http", url=server.url)
    reply = await console.call_tool(s["id"], "t", x="1")
    assert reply["status"] == "error"
    assert "unknown resultType 'incomplete'" in reply["operation"]["message"]
    assert "pre-release" in reply["operation"]["message"]


async def test_a_number_too_large_for_json_is_refused_and_nothing_is_sent(
        console: Console, tiny_http: TinyHttp) -> None:
    server = _tiny_mcp(tiny_http, {"resultType": "complete", "content": []})
    s = await console.connect(kind="http", url=server.url)
    before = len(server.requests)
    response = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "t", "arg.x": "1e400"},
                                       headers=JSON)
    assert response.json()["sent"] is False
    response = await console.http.post(f"/sessions/{s['id']}/tools/call",
                                       data={"tool": "t", "mode": "json", "json": '{"x": NaN}'}, headers=JSON)
    assert response.json()["sent"] is False
    assert len(server.requests) == before


async def test_json_rpc_ids_go_on_after_a_reconnect(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    first = await console.call_tool(s["id"], "echo", text="before")
    session = console.manager.sessions[s["id"]]
    await session.close()
    response = await console.http.post(f"/sessions/{s['id']}/reconnect")
    assert response.status_code == 303
    again = await console.settled(s["id"])
    assert again["status"] == "connected"
    second = await console.call_tool(s["id"], "echo", text="after")
    assert second["id"] > first["id"]
    ids = [e["id"] for e in (await console.session(s["id"]))["timeline"] if e.get("kind") == "exchange"]
    assert len(ids) == len(set(ids)), "a JSON-RPC id was used twice in one session"


async def test_toggling_capabilities_keeps_what_the_checkboxes_do_not_show(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    caps = '{"sampling": {"tools": {}}, "elicitation": {"form": {}}, "extensions": {"x.example/ext": {}}}'
    response = await console.http.post(f"/sessions/{s['id']}/capabilities", data={"mode": "json", "caps_json": caps},
                                       headers=JSON)
    assert response.json()["problems"] == []
    response = await console.http.post(f"/sessions/{s['id']}/capabilities",
                                       data={"cap": ["sampling", "elicitation.url"]}, headers=JSON)
    assert response.json()["client_capabilities"] == {
        "sampling": {"tools": {}}, "elicitation": {"url": {}}, "extensions": {"x.example/ext": {}}}
