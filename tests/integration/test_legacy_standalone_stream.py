"""The 2025-11-25 standalone GET stream: opened after initialize, routed like any session message, resumed
with Last-Event-ID after a drop, and left alone when the server answers 405."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.conftest import Console, Seen, TinyHttp, eventually

LIST_CHANGED = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def legacy_tiny(tiny_http: TinyHttp, get_answers: list[tuple[int, str, bytes]]) -> Any:
    """A tiny legacy server: refuses server/discover, initializes, lists tools (one more each time), and
    answers its GETs with `get_answers` in turn (each SSE body ends, which is a drop), then 405."""
    listed = {"n": 0}

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        if seen.method == "GET":
            return get_answers.pop(0) if get_answers else (405, "text/plain", b"")
        if seen.method == "DELETE":
            return 200, "text/plain", b""
        message = seen.json()
        method, rid = message.get("method"), message.get("id")
        if method == "server/discover":
            return 400, "application/json", TinyHttp.error(None, -32000, "Bad Request: Server not initialized")
        if method == "initialize":
            return 200, "application/json", TinyHttp.result(rid, {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "tiny-legacy", "version": "0"}})
        if method == "tools/list":
            listed["n"] += 1
            tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(listed["n"])]
            return 200, "application/json", TinyHttp.result(rid, {"tools": tools})
        return 202, "application/json", b""  # notifications

    return tiny_http.start(handler)


def sse(event_id: str, data: str) -> tuple[int, str, bytes]:
    return 200, "text/event-stream", f"id: {event_id}\ndata: {data}\n\n".encode()


async def test_a_dropped_standalone_stream_is_reopened_with_the_last_event_id_and_its_list_changes_refresh(
        console: Console, tiny_http: TinyHttp) -> None:
    server = legacy_tiny(tiny_http, [sse("e1", LIST_CHANGED), sse("e2", LIST_CHANGED)])
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]

    def gets() -> list[Seen]:
        return [r for r in server.requests if r.method == "GET"]

    async def three_gets() -> list[Seen] | None:
        return gets() if len(gets()) >= 3 else None

    seen = await eventually(three_gets, what="the GET stream to be reopened twice")
    assert [g.headers.get("accept") for g in seen[:3]] == ["text/event-stream"] * 3
    assert [g.headers.get("last-event-id") for g in seen[:3]] == [None, "e1", "e2"]
    assert all(g.headers.get("mcp-protocol-version") == "2025-11-25" for g in seen[:3])

    async def refreshed() -> list[Any] | None:
        tools = (await console.session(s["id"]))["lists"]["tools"]
        return tools if len(tools) >= 2 else None

    await eventually(refreshed, what="a list_changed from the GET stream to refresh the tools")

    async def told_405() -> bool:
        timeline = (await console.session(s["id"]))["timeline"]
        return any("no standalone GET stream (HTTP 405)" in str(e.get("message")) and e.get("level") == "info"
                   for e in timeline)

    await eventually(told_405, what="the 405 that ends the stream to be noted")
    assert len(gets()) == 3, "a 405 is final: no more GETs"
    warnings = [e for e in (await console.session(s["id"]))["timeline"]
                if e.get("kind") == "notice" and "list_changed" in str(e.get("raw"))]
    assert not warnings, "a session message is no stray"
