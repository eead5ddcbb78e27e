"""McpClient against the core's in-memory transport: a Python async generator plays the server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from app.mcp.client import ClientConfig, McpClient
from app.mcp.errors import (
    ConnectFailed,
    McpError,
    ProtocolViolation,
    RequestCancelled,
    RequestTimedOut,
    RpcError,
)
from app.mcp.jsonrpc import Frame
from app.mcp.memory import MemoryTransport
from app.mcp.wire import WireEvent

CLIENT_INFO = {"name": "mcp-console-tests", "version": "0.0.1"}
WAIT_S = 2.0  # an upper bound for things that should happen at once; never a sleep


def result(message: dict[str, Any], body: dict[str, Any] | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"],
                       "result": {"resultType": "complete"} if body is None else body})


def notify(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})


async def ok_handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
    yield result(message)


def make_client(handler: Any = ok_handler, caps: Callable[[], dict[str, Any]] | None = None,
                timeout_s: float = 5.0, **transport_kw: Any) -> tuple[McpClient, MemoryTransport]:
    transport = MemoryTransport(handler, **transport_kw)
    config = ClientConfig(client_info=CLIENT_INFO, capabilities=caps or (lambda: {}), idle_timeout_s=timeout_s)
    return McpClient(transport, config), transport


async def test_every_request_carries_the_2026_07_28_meta_with_client_info_and_capabilities() -> None:
    client, transport = make_client(caps=lambda: {"elicitation": {"form": {}}})
    await client.request("tools/list")
    await client.request("tools/call", {"name": "echo", "arguments": {}})
    assert len(transport.sent) == 2
    for message, _ in transport.sent:
        meta = message["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"] == CLIENT_INFO
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {"form": {}}}
        assert message["jsonrpc"] == "2.0"


async def test_capabilities_are_read_per_request_so_a_change_shows_in_the_next_request() -> None:
    caps: dict[str, Any] = {}
    client, transport = make_client(caps=lambda: dict(caps))
    await client.request("tools/list")
    caps["sampling"] = {}
    await client.request("tools/list")
    seen = [m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] for m, _ in transport.sent]
    assert seen == [{}, {"sampling": {}}]


async def test_client_meta_wins_over_caller_meta_but_keeps_the_callers_other_keys() -> None:
    client, transport = make_client()
    await client.request("tools/call", {"name": "t", "_meta": {"io.modelcontextprotocol/protocolVersion": "1999",
                                                               "traceparent": "00-abc-01"}},
                         progress_token="tok-1")
    meta = transport.sent[0][0]["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["traceparent"] == "00-abc-01"
    assert meta["progressToken"] == "tok-1"


async def test_request_ids_are_unique_across_sequential_and_concurrent_requests() -> None:
    client, transport = make_client()
    await client.request("ping")
    await client.request("ping")
    replies = await asyncio.gather(*(client.request("ping") for _ in range(20)))
    ids = [m["id"] for m, _ in transport.sent]
    assert len(ids) == 22
    assert len(set(ids)) == 22
    assert all(r.ok for r in replies)
    assert len({r.key for r in replies}) == 20


async def test_request_headers_carry_method_and_name() -> None:
    client, transport = make_client()
    await client.request("tools/list")
    await client.request("resources/read", {"uri": "demo://readme"})
    (_, list_headers), (_, read_headers) = transport.sent
    assert list_headers == {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    assert read_headers["Mcp-Method"] == "resources/read"
    assert read_headers["Mcp-Name"] == "demo://readme"


async def test_learn_tools_adds_mcp_param_headers_to_later_tools_calls() -> None:
    seen: list[dict[str, str]] = []

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        seen.append(headers)
        yield result(message)

    client, _ = make_client(handler)
    call = {"name": "execute_sql", "arguments": {"sql": "select 1", "region": "us-west1"}}
    await client.request("tools/call", call)
    client.learn_tools([{"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
        "sql": {"type": "string"}, "region": {"type": "string", "x-mcp-header": "Region"}}}}])
    await client.request("tools/call", call)
    assert "Mcp-Param-Region" not in seen[0]
    assert seen[1]["Mcp-Param-Region"] == "us-west1"
    assert seen[1]["Mcp-Name"] == "execute_sql"
    assert seen[1]["Mcp-Method"] == "tools/call"


async def test_learn_tools_records_tools_that_break_the_header_rules_and_forgets_them_once_fixed() -> None:
    client, _ = make_client()
    bad = {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "Same"}, "b": {"type": "string", "x-mcp-header": "same"}}}}
    client.learn_tools([bad, {"name": 5}])
    assert "bad" in client.invalid_tools
    assert "bad" not in client.tool_headers
    fixed = {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "Same"}}}}
    client.learn_tools([fixed])
    assert client.invalid_tools == {}
    assert client.tool_headers["bad"] == {"a": "Same"}


@pytest.mark.parametrize("code, name", [(-32020, "HeaderMismatch"), (-32021, "MissingRequiredClientCapability"),
                                        (-32022, "UnsupportedProtocolVersion"), (-32602, "Invalid params"),
                                        (-31999, None)])
async def test_a_json_rpc_error_becomes_an_rpc_error_with_its_code_and_name(code: int, name: str | None) -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"],
                          "error": {"code": code, "message": "nope", "data": {"supported": ["2026-07-28"]}}})

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert isinstance(reply.error, RpcError)
    assert reply.error.code == code
    assert reply.error.name == name
    assert reply.error.message == "nope"
    assert reply.error.data == {"supported": ["2026-07-28"]}
    assert reply.result is None
    assert not reply.ok
    assert reply.warnings == []


async def test_notifications_before_the_response_land_in_the_reply_and_the_callback_in_order() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        token = message["params"]["_meta"]["progressToken"]
        yield notify("notifications/progress", {"progressToken": token, "progress": 1})
        yield notify("notifications/message", {"level": "info", "data": "halfway"})
        yield result(message, {"resultType": "complete", "content": []})

    received: list[Frame] = []
    client, _ = make_client(handler)
    reply = await client.request("tools/call", {"name": "slow"}, progress_token="p1",
                                 on_notification=received.append)
    assert reply.ok
    assert [f.method for f in reply.notifications] == ["notifications/progress", "notifications/message"]
    assert received == list(reply.notifications)
    assert reply.warnings == []
    assert reply.first_byte is not None and reply.finished is not None
    assert reply.sent <= reply.first_byte <= reply.finished


async def test_a_malformed_frame_before_the_response_adds_a_warning_and_the_reply_still_completes() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield "{this is not json"
        yield result(message)

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert reply.ok
    assert reply.result == {"resultType": "complete"}
    assert len(reply.warnings) == 1
    assert reply.warnings[0].startswith("malformed frame")
    assert list(reply.notifications) == []


async def test_a_response_with_a_different_id_is_flagged_and_not_taken_as_the_answer() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": "someone-else", "result": {"resultType": "complete"}})

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert any("does not match request id" in w for w in reply.warnings)
    assert not reply.ok and "carried id 'someone-else'" in str(reply.error)


async def test_a_server_sent_request_is_kept_with_a_warning() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": 99, "method": "roots/list"})
        yield result(message)

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert reply.ok
    assert [f.method for f in reply.notifications] == ["roots/list"]
    assert any("server sent a request" in w for w in reply.warnings)


async def test_a_stream_that_ends_without_a_response_gives_a_protocol_violation() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield notify("notifications/progress", {"progressToken": 1, "progress": 1})

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert isinstance(reply.error, ProtocolViolation)
    assert len(reply.notifications) == 1


async def test_a_result_that_is_not_an_object_gives_a_protocol_violation() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": [1, 2]})

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert isinstance(reply.error, ProtocolViolation)
    assert reply.result is None


async def test_a_handler_that_never_answers_gives_request_timed_out() -> None:
    never = asyncio.Event()

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        await never.wait()
        yield result(message)

    client, _ = make_client(handler, timeout_s=30)
    reply = await asyncio.wait_for(client.request("tools/list", idle_timeout_s=0.2), WAIT_S)
    assert isinstance(reply.error, RequestTimedOut)
    assert "0.2" in str(reply.error)
    assert client.inflight() == []


async def test_the_configured_timeout_applies_when_the_request_gives_none() -> None:
    never = asyncio.Event()

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        await never.wait()
        yield result(message)

    client, _ = make_client(handler, timeout_s=0.2)
    reply = await asyncio.wait_for(client.request("tools/list"), WAIT_S)
    assert isinstance(reply.error, RequestTimedOut)


async def test_a_result_without_result_type_warns_and_counts_as_complete() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"tools": []})

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert reply.ok
    assert reply.result_type == "complete"
    assert len(reply.warnings) == 1
    assert "resultType" in reply.warnings[0]


async def test_a_complete_result_type_gives_no_warning() -> None:
    client, _ = make_client()
    reply = await client.request("tools/list")
    assert reply.result_type == "complete"
    assert reply.warnings == []


async def test_an_unknown_result_type_warns() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "incomplete"})

    client, _ = make_client(handler)
    reply = await client.request("tools/call", {"name": "t"})
    assert reply.result_type == "incomplete"
    assert any("unknown resultType 'incomplete'" in w for w in reply.warnings)


async def test_input_required_on_tools_list_warns() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "input_required", "requestState": "s"})

    client, _ = make_client(handler)
    listed = await client.request("tools/list")
    called = await client.request("tools/call", {"name": "t"})
    assert any("input_required is not allowed on tools/list" in w for w in listed.warnings)
    assert called.result_type == "input_required"
    assert called.warnings == []


async def test_cancel_during_a_request_ends_it_with_request_cancelled_and_the_transport_sees_the_cancel() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield notify("notifications/progress", {"progressToken": 1, "progress": 1})
        await release.wait()
        yield notify("notifications/progress", {"progressToken": 1, "progress": 2})
        yield result(message)

    client, transport = make_client(handler)
    task = asyncio.create_task(client.request("tools/call", {"name": "slow"}, key="op-1",
                                              on_notification=lambda _frame: started.set()))
    await asyncio.wait_for(started.wait(), WAIT_S)
    assert client.inflight() == ["op-1"]
    assert await client.cancel("op-1", "user pressed stop") is True
    release.set()
    reply = await asyncio.wait_for(task, WAIT_S)
    assert isinstance(reply.error, RequestCancelled)
    assert str(reply.error) == "user pressed stop"
    assert reply.result is None
    assert len(reply.notifications) == 1  # nothing after the cancel is taken
    assert transport.cancelled == ["user pressed stop"]
    assert client.inflight() == []


async def test_cancel_ends_a_request_promptly_even_when_the_server_stays_silent() -> None:
    started, never = asyncio.Event(), asyncio.Event()

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield notify("notifications/progress", {"progressToken": 1, "progress": 1})
        await never.wait()
        yield result(message)

    client, transport = make_client(handler, timeout_s=30)
    task = asyncio.create_task(client.request("tools/call", {"name": "slow"}, key="op-1",
                                              on_notification=lambda _frame: started.set()))
    await asyncio.wait_for(started.wait(), WAIT_S)
    await client.cancel("op-1")
    reply = await asyncio.wait_for(task, 0.5)
    assert isinstance(reply.error, RequestCancelled)
    assert transport.cancelled == ["cancelled by the user"]


async def test_cancel_of_an_unknown_key_returns_false() -> None:
    client, transport = make_client()
    assert await client.cancel("nothing") is False
    assert transport.cancelled == []


async def test_a_refusing_transport_gives_connect_failed_in_the_reply() -> None:
    client, transport = make_client(refuse=True)
    reply = await client.request("tools/list")
    assert isinstance(reply.error, ConnectFailed)
    assert not reply.ok
    assert reply.finished is not None
    assert transport.sent == []


@pytest.mark.parametrize("frames", [
    [],
    ["not json"],
    ['{"jsonrpc":"2.0","id":1,"result":"text"}'],
    ['{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}'],
    ['[{"jsonrpc":"2.0","id":1,"result":{}}]'],
    ['{"jsonrpc":"2.0","method":"notifications/message","params":"weird"}'],
])
async def test_request_never_raises_an_mcp_error_whatever_the_server_sends(frames: list[str]) -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        for frame in frames:
            yield frame

    client, _ = make_client(handler)
    try:
        reply = await client.request("tools/list")
    except McpError as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"request() raised {exc!r}")
    assert isinstance(reply.error, McpError)


async def test_an_id_less_error_that_is_not_an_object_does_not_crash_the_request() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield '{"jsonrpc":"2.0","error":"boom"}'

    client, _ = make_client(handler)
    reply = await client.request("tools/list")
    assert isinstance(reply.error, McpError)


async def test_wire_events_are_recorded_in_both_directions_with_the_exchange_key() -> None:
    events: list[WireEvent] = []

    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield "garbage"
        yield result(message)

    client, _ = make_client(handler, record=events.append)
    reply = await client.request("tools/call", {"name": "t"}, key="k7")
    assert reply.ok
    assert [(e.direction, e.exchange) for e in events] == [("out", "k7"), ("in", "k7"), ("in", "k7")]
    assert events[0].frame is not None and events[0].frame.kind == "request"
    assert ("Mcp-Name", "t") in (events[0].headers or [])
    assert events[1].raw == "garbage" and events[1].frame is not None and events[1].frame.kind == "invalid"


async def test_an_error_with_a_null_id_on_the_requests_own_stream_is_taken_as_its_answer() -> None:
    async def handler(message: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32000, "message": "Bad Request: Server not initialized"}})

    client, _ = make_client(handler)
    reply = await client.request("server/discover")
    assert reply.error is not None and "Server not initialized" in str(reply.error)
    assert any("id null" in w for w in reply.warnings), reply.warnings


async def test_a_server_message_outside_any_request_reaches_the_session_sink_or_gets_the_eras_answer() -> None:
    from app.mcp.era import LegacyEra
    from app.mcp.jsonrpc import parse_frame

    seen: list[Frame] = []
    transport = MemoryTransport(ok_handler)
    era = LegacyEra()
    era.negotiate("2025-11-25")
    McpClient(transport, ClientConfig(client_info=CLIENT_INFO, capabilities=lambda: {}, era=era,
                                      on_session_notification=seen.append))
    assert transport.on_server_message is not None, "the client wires itself to its transport"
    transport.on_server_message(parse_frame('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'))
    assert [f.method for f in seen] == ["notifications/tools/list_changed"]
    transport.on_server_message(parse_frame('{"jsonrpc":"2.0","id":"p1","method":"ping"}'))
    for _ in range(100):
        if transport.sent:
            break
        await asyncio.sleep(0.01)
    [(answer, headers)] = transport.sent
    assert answer == {"jsonrpc": "2.0", "id": "p1", "result": {}}
    assert headers == {"MCP-Protocol-Version": "2025-11-25"}
