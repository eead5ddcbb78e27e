"""What a CI job's `mcp-console call` must not take for a success, and what it must say: a 403 with its challenge, a
string `isError`, a result on HTTP 500; an MRTR round asking for roots; a tool that says the request's head back
(its Authorization header and URL), so a secret the server echoes is seen to be masked in the output."""

from __future__ import annotations

import json
from typing import Any

from tests.hostile.target import Ctx, Tool, complete, text

CHALLENGE = 'Bearer error="insufficient_scope", scope="tools:write", resource_metadata="http://127.0.0.1/prm"'


async def forbidden(ctx: Ctx) -> None:
    await ctx.raw_http(403, json.dumps({"error": "insufficient_scope"}), "application/json",
                       {"WWW-Authenticate": CHALLENGE})


async def is_error_string(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": "the disk is full"}], isError="true"))


async def result_on_500(ctx: Ctx) -> None:
    body = {"jsonrpc": "2.0", "id": ctx.id, "result": text("all is well (says the body)")}
    await ctx.raw_http(500, json.dumps(body), "application/json")


async def ask_roots(ctx: Ctx) -> None:
    given = (ctx.params.get("inputResponses") or {}).get("where")
    if given is not None:
        await ctx.reply(text(json.dumps(given)))
        return
    await ctx.reply({"resultType": "input_required", "requestState": "roots-1",
                     "inputRequests": {"where": {"method": "roots/list"}}})


async def say_head(ctx: Ctx) -> None:
    """The request's head as it arrived (request line and headers): an echo of every credential sent."""
    out: Any = ctx._out
    await ctx.reply(text(out.received_head.decode("latin-1")))


TOOLS = [
    Tool("forbidden", forbidden, {"description": "Answers HTTP 403 with a WWW-Authenticate challenge."}),
    Tool("is_error_string", is_error_string, {"description": "A result whose isError is the string \"true\"."}),
    Tool("result_on_500", result_on_500, {"description": "A JSON-RPC result on HTTP 500."}),
    Tool("ask_roots", ask_roots, {"description": "Asks for the client's roots (MRTR), then says what it got."}),
    Tool("say_head", say_head, {"description": "Says the request's HTTP head back, credentials and all."}),
]
