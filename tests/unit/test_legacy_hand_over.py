"""An answer a 2025-11-25 server sends on its standalone GET stream instead of the request's own is the request's,
whether or not the request's stream can be resumed."""

from __future__ import annotations

import json

import httpx

from app.mcp.http import HttpTransport
from app.mcp.jsonrpc import parse_frame

ANSWER = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": []}})


async def test_an_answer_handed_over_from_the_get_stream_is_taken_when_the_posts_stream_ends_unresumable() -> None:
    def server(_request: httpx.Request) -> httpx.Response:
        # Primed without an id (nothing to resume from), then closed before the answer.
        return httpx.Response(200, content=b"data: \n\n", headers={"Content-Type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
        transport = HttpTransport("http://127.0.0.1:1/mcp", http, lambda _e: None)
        message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
        exchange = await transport.open(message, {"MCP-Protocol-Version": "2025-11-25"}, "k1")
        assert transport.hand_over(parse_frame(ANSWER))  # as the standalone stream does with an answer in flight
        frames = [frame async for frame in exchange.frames()]
        await exchange.aclose()
    assert [(f.kind, f.id) for f in frames] == [("response", 7)]
