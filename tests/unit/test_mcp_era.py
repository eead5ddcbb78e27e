"""The era seam: the 2026-07-28 strategy stamps what the client always stamped and refuses server requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from app.mcp.client import ClientConfig, McpClient
from app.mcp.era import (
    META_CAPS,
    META_INFO,
    META_LOG_LEVEL,
    META_VERSION,
    ModernEra,
    ServerAnswer,
    ServerRequestVerdict,
)
from app.mcp.jsonrpc import Frame, parse_frame
from app.mcp.memory import MemoryTransport


def test_modern_era_stamps_version_info_and_capabilities_on_every_request() -> None:
    meta = ModernEra().meta({"name": "c"}, {"roots": {}}, progress_token="p1", log_level="debug")
    assert meta == {META_VERSION: "2026-07-28", META_INFO: {"name": "c"}, META_CAPS: {"roots": {}},
                    "progressToken": "p1", META_LOG_LEVEL: "debug"}


def test_modern_era_leaves_out_progress_token_and_log_level_when_not_asked() -> None:
    meta = ModernEra().meta({}, {}, progress_token=None, log_level=None)
    assert "progressToken" not in meta and META_LOG_LEVEL not in meta


def test_modern_era_headers_name_the_method_and_the_tool() -> None:
    headers = ModernEra().headers("tools/call", {"name": "echo", "arguments": {}}, None)
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert headers["Mcp-Method"] == "tools/call" and headers["Mcp-Name"] == "echo"


def test_modern_era_flags_a_server_request_and_asks_nobody() -> None:
    frame = parse_frame('{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}')
    verdict = ModernEra().on_server_request(frame)
    assert not verdict.ask_caller and verdict.refusal is None
    assert verdict.warning is not None and "sampling/createMessage" in verdict.warning


def test_a_server_answer_becomes_a_response_or_an_error_with_the_request_id() -> None:
    assert ServerAnswer(result={"roots": []}).message(7) == {"jsonrpc": "2.0", "id": 7, "result": {"roots": []}}
    assert ServerAnswer(error={"code": -1, "message": "no"}).message("a")["error"]["code"] == -1


# --- the client through the seam, on the in-memory transport ----------------------------------------


async def asks_for_roots_then_answers(message: dict[str, Any], _headers: dict[str, str]) -> AsyncIterator[str]:
    yield '{"jsonrpc":"2.0","id":"s1","method":"roots/list","params":{}}'
    await asyncio.sleep(0)
    yield json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"resultType": "complete", "content": []}})


class AskingEra(ModernEra):
    """An era that hands server requests to the caller (what an older revision does)."""

    def on_server_request(self, frame: Frame) -> ServerRequestVerdict:
        return ServerRequestVerdict(warning=None, ask_caller=True)


async def test_the_modern_era_records_a_server_request_as_a_warning_and_sends_nothing_back() -> None:
    transport = MemoryTransport(asks_for_roots_then_answers)
    client = McpClient(transport, ClientConfig(client_info={}, capabilities=dict))
    reply = await client.request("tools/call", {"name": "x"})
    assert reply.ok and any("roots/list" in w for w in reply.warnings)
    assert transport.answers == []


async def test_an_era_that_asks_the_caller_sends_the_answer_back_with_the_servers_request_id() -> None:
    transport = MemoryTransport(asks_for_roots_then_answers)
    asked = asyncio.Event()

    async def answerer(frame: Frame, _key: str) -> ServerAnswer:
        asked.set()
        return ServerAnswer(result={"roots": [{"uri": "file:///w"}]})

    client = McpClient(transport, ClientConfig(client_info={}, capabilities=dict, era=AskingEra(), answerer=answerer))
    reply = await client.request("tools/call", {"name": "x"})
    await asyncio.wait_for(asked.wait(), 5)
    for _ in range(100):  # the answer runs beside the stream; let it finish
        if transport.answers:
            break
        await asyncio.sleep(0.01)
    assert reply.ok and not reply.warnings
    assert transport.answers == [{"jsonrpc": "2.0", "id": "s1", "result": {"roots": [{"uri": "file:///w"}]}}]
