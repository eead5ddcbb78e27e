"""Well-behaved tools, so a test can show the console still works around the hostile ones."""

from __future__ import annotations

from tests.hostile.target import Ctx, Tool, text


async def echo(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.args.get("text", ""))))


TOOLS = [
    Tool("echo", echo, {"description": "Says back what it was given.",
                        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
]
