"""A listen stream that floods: acknowledged, then `LISTEN_BURST` notifications/tools/list_changed in one burst,
then held open until the console stops listening."""

from __future__ import annotations

from tests.hostile.target import Ctx, Tool

SUB = "io.modelcontextprotocol/subscriptionId"
LISTEN_BURST = 1000


async def listen(ctx: Ctx) -> None:
    meta = {SUB: ctx.id}
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}})
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}}
    for _ in range(LISTEN_BURST):
        await ctx.event(changed)
    await ctx.cancelled.wait()


TOOLS: list[Tool] = []
METHODS = {"subscriptions/listen": listen}
CAPABILITIES = {"tools": {"listChanged": True}}
