"""Says back the very bytes that reached the target: a request's body (HTTP) or line (stdio) and its HTTP head,
base64-encoded, so a test can hold them beside what the console recorded as sent. The same tool goes by a long
non-ASCII name (Mcp-Name) and with an argument that becomes a header (x-mcp-header, Mcp-Param-Region)."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.hostile.target import Ctx, Tool, text

LONG_NAME = "wire_echo_" + "\u00e9" * 3000


async def wire_echo(ctx: Ctx) -> None:
    out: Any = ctx._out
    said = {"body": base64.b64encode(out.received).decode(), "head": base64.b64encode(out.received_head).decode()}
    await ctx.reply(text(json.dumps(said)))


TOOLS = [
    Tool("wire_echo", wire_echo, {"description": "Says back the bytes of the request as they arrived."}),
    Tool(LONG_NAME, wire_echo, {"description": "The same, by a name of 3,010 characters."}),
    Tool("wire_echo_header", wire_echo, {"inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}),
]

ODD_URIS = ["file:///notes.txt ", " file:///lead", "file:///caf\u00e9 \u2713", "file:///two\r\nlines",
            "=?base64?aGk=?=", "x" * 4000]


async def list_resources(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "resources": [{"uri": uri, "name": f"odd {i}"}
                                                              for i, uri in enumerate(ODD_URIS)]})


async def read_resource(ctx: Ctx) -> None:
    out: Any = ctx._out
    said = {"body": base64.b64encode(out.received).decode(), "head": base64.b64encode(out.received_head).decode()}
    await ctx.reply({"resultType": "complete", "contents": [
        {"uri": str(ctx.params.get("uri")), "mimeType": "application/json", "text": json.dumps(said)}]})


METHODS = {"resources/list": list_resources, "resources/read": read_resource}
CAPABILITIES = {"resources": {}}


async def deep(ctx: Ctx) -> None:
    depth, copies = int(ctx.args.get("depth", 900)), int(ctx.args.get("copies", 1))
    nested = "[" * depth + "]" * depth
    await ctx.reply({"resultType": "complete", "content": [], "structuredContent": {"deep": json.loads(
        "[" + ",".join([nested] * copies) + "]")}})


TOOLS.append(Tool("deep", deep, {"description": "Answers with `copies` values nested `depth` levels deep."}))
