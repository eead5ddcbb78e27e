"""A tool list that shifts under the person: loaded by name (`--tools shifting`), the module answers tools/list
itself, with one list the first time and another on every later call (the console's Refresh lists).

First: `keep`, `renamed_from` and `dup`, each with one string property `text`.
Later: `keep` as it was, `renamed_to` instead of `renamed_from`, `dup` listed twice (another description each
time), and `BULK` more tools `bulk_0`… with long descriptions.
"""

from __future__ import annotations

from typing import Any

from tests.hostile.target import Ctx, Tool, text

BULK = 5000
_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


async def echo_text(ctx: Ctx) -> None:
    await ctx.reply(text(f"{ctx.params.get('name')} got {ctx.args.get('text')}"))


def _tool(name: str, description: str = "") -> dict[str, Any]:
    return {"name": name, "description": description or f"{name} echoes text", "inputSchema": _TEXT}


def _first() -> list[dict[str, Any]]:
    return [_tool("keep"), _tool("renamed_from"), _tool("dup")]


def _later() -> list[dict[str, Any]]:
    bulk = [_tool(f"bulk_{i}", f"bulk tool {i} " + "lorem ipsum " * 40) for i in range(BULK)]
    return [_tool("keep"), _tool("renamed_to"), _tool("dup", "the first dup"), _tool("dup", "the second dup"),
            *bulk]


async def tools_list(ctx: Ctx) -> None:
    listed = ctx.state.get("listed", 0)
    ctx.state["listed"] = listed + 1
    await ctx.reply({"resultType": "complete", "tools": _first() if listed == 0 else _later()})


TOOLS = [Tool(name, echo_text) for name in ("keep", "renamed_from", "renamed_to", "dup")]
METHODS = {"tools/list": tools_list}
