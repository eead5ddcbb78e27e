"""Behaviours for the store quota tests: answers as large as asked, and a well-behaved echo."""

from __future__ import annotations

from tests.hostile.target import Ctx, Tool, text


async def bulk(ctx: Ctx) -> None:
    """Answers with `size` bytes of text: a target filling the console's store."""
    size = max(0, min(int(ctx.args.get("size", 1000)), 4_000_000))
    await ctx.reply(text("x" * size))


async def echo(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.args.get("text", ""))))


TOOLS = [
    Tool("bulk", bulk, {"description": "Answers with `size` bytes.",
                        "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}}),
    Tool("store_echo", echo, {"description": "Says back what it was given.",
                              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
]
