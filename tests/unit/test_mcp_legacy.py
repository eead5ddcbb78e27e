"""The 2025-11-25 era and handshake on the in-memory transport: what is stamped, negotiated and answered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from app.mcp.client import ClientConfig, McpClient, Reply
from app.mcp.era import META_VERSION, LegacyEra, ServerAnswer
from app.mcp.errors import ProcessExited, RpcError
from app.mcp.handshake import HandshakeFailed, discover_not_served, initialize
from app.mcp.jsonrpc import Frame, parse_frame
from app.mcp.memory import MemoryTransport

INIT_RESULT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "old"},
               "instructions": "be kind"}


def legacy_client(transport: Any, answerer: Any = None) -> McpClient:
    return McpClient(transport, ClientConfig(client_info={"name": "c", "version": "1"},
                                             capabilities=lambda: {"elicitation": {}}, era=LegacyEra(),
                                             answerer=answerer))


async def legacy_server(message: dict[str, Any], _headers: dict[str, str]) -> AsyncIterator[str]:
    if message["method"] == "initialize":
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": INIT_RESULT})
    else:
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})


def test_legacy_era_stamps_only_the_progress_token() -> None:
    era = LegacyEra()
    assert era.meta({"name": "c"}, {"roots": {}}, progress_token="p1", log_level="debug") == {"progressToken": "p1"}
    assert era.meta({"name": "c"}, {}, progress_token=None, log_level=None) == {}


def test_legacy_era_sends_the_version_header_only_after_negotiation() -> None:
    era = LegacyEra()
    assert era.headers("initialize", {}, None) == {}
    era.negotiate("2025-06-18")
    assert era.headers("tools/call", {"name": "x"}, None) == {"MCP-Protocol-Version": "2025-06-18"}
    assert era.headers("initialize", {}, None) == {}


def test_legacy_era_asks_the_caller_for_elicitation_sampling_and_roots_and_answers_ping_itself() -> None:
    era = LegacyEra()
    for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
        verdict = era.on_server_request(parse_frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method})))
        assert verdict.ask_caller and verdict.warning is None
    ping = era.on_server_request(parse_frame('{"jsonrpc":"2.0","id":2,"method":"ping"}'))
    assert not ping.ask_caller and ping.refusal == ServerAnswer(result={})
    other = era.on_server_request(parse_frame('{"jsonrpc":"2.0","id":3,"method":"weird/thing"}'))
    assert other.refusal is not None and other.refusal.error is not None and other.refusal.error["code"] == -32601


async def test_initialize_negotiates_down_then_sends_initialized_and_stamps_the_version() -> None:
    transport = MemoryTransport(legacy_server)
    client = legacy_client(transport)
    negotiated = await initialize(client)
    assert negotiated.protocol_version == "2025-06-18" and negotiated.server_info == {"name": "old"}
    assert "2025-11-25" in negotiated.note and "2025-06-18" in negotiated.note
    (init, init_headers), (initialized, _) = transport.sent[0], transport.sent[1]
    assert init["params"] == {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                              "clientInfo": {"name": "c", "version": "1"}}
    assert "MCP-Protocol-Version" not in init_headers
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    reply = await client.request("tools/list", {})
    message, headers = transport.sent[-1]
    assert reply.ok and reply.warnings == []  # no resultType is no fault in 2025-11-25
    assert "_meta" not in message["params"] and headers["MCP-Protocol-Version"] == "2025-06-18"


async def test_initialize_refuses_a_version_the_console_does_not_speak() -> None:
    async def future_server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2099-01-01"}})

    client = legacy_client(MemoryTransport(future_server))
    try:
        await initialize(client)
    except HandshakeFailed as exc:
        assert "2099-01-01" in str(exc)
    else:
        raise AssertionError("a version we do not speak must fail the handshake")


async def test_a_legacy_server_request_is_answered_with_its_own_id_on_the_exchange() -> None:
    async def eliciting(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield '{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?"}}'
        while not transport.answers:
            await asyncio.sleep(0.01)
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}})

    asked: list[Frame] = []

    async def answerer(frame: Frame, _key: str) -> ServerAnswer:
        asked.append(frame)
        return ServerAnswer(result={"action": "accept", "content": {"name": "Ada"}})

    transport = MemoryTransport(eliciting)
    reply = await asyncio.wait_for(legacy_client(transport, answerer).request("tools/call", {"name": "ask"}), 5)
    assert reply.ok and asked[0].method == "elicitation/create"
    assert transport.answers == [{"jsonrpc": "2.0", "id": "e1",
                                  "result": {"action": "accept", "content": {"name": "Ada"}}}]


async def test_a_server_request_with_nobody_to_ask_is_refused_not_left_hanging() -> None:
    async def sampling(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield '{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}'
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    transport = MemoryTransport(sampling)
    await legacy_client(transport).request("tools/call", {"name": "x"})
    assert transport.answers[0]["id"] == 9 and transport.answers[0]["error"]["code"] == -32601


def _reply(error: Exception) -> Reply:
    reply = Reply(key="k", id=1, method="server/discover", params={}, sent=0.0)
    reply.error = error  # type: ignore[assignment]
    return reply


def test_discover_not_served_names_each_fallback_signal() -> None:
    assert "HTTP 400" in (discover_not_served(_reply(RpcError(-32000, "x", None, 400))) or "")
    assert "-32601" in (discover_not_served(_reply(RpcError(-32601, "Method not found"))) or "")
    assert discover_not_served(_reply(RpcError(-32000, "Bad Request: Server not initialized"))) is not None
    assert "stdio" in (discover_not_served(_reply(ProcessExited("the server process exited (code 1)"))) or "")


def test_discover_not_served_ignores_a_success_and_an_ordinary_error() -> None:
    ok = Reply(key="k", id=1, method="server/discover", params={}, sent=0.0, result={META_VERSION: "x"})
    assert discover_not_served(ok) is None
    assert discover_not_served(_reply(RpcError(-32603, "internal", None, 500))) is None


async def test_http_keeps_the_session_id_from_initialize_sends_it_and_deletes_it_on_close() -> None:
    import httpx

    from app.mcp.http import HttpTransport

    seen: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE":
            return httpx.Response(200)
        if request.method == "GET":
            return httpx.Response(405)  # no standalone stream (its GET is not what this test counts)
        body = json.loads(request.content)
        if "id" not in body:
            return httpx.Response(202)
        headers = {"Mcp-Session-Id": "sess-1"} if body["method"] == "initialize" else {}
        result = INIT_RESULT if body["method"] == "initialize" else {"tools": []}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result}, headers=headers)

    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
        transport = HttpTransport("http://127.0.0.1:1/mcp", http, lambda _e: None)
        client = legacy_client(transport)
        await initialize(client)
        await client.request("tools/list", {})
        await client.close()
    init, initialized, listed, deleted = [r for r in seen if r.method != "GET"]
    assert "mcp-session-id" not in init.headers
    assert initialized.headers["mcp-session-id"] == "sess-1" == listed.headers["mcp-session-id"]
    assert listed.headers["mcp-protocol-version"] == "2025-06-18"
    assert deleted.method == "DELETE" and deleted.headers["mcp-session-id"] == "sess-1"
