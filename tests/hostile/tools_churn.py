"""List-change floods: loaded by name (`--tools churn`), the module answers subscriptions/listen by acknowledging,
then sending `CHANGES` notifications/tools/list_changed back to back, and it counts the tools/list requests it
gets (the tool `lists_served` answers with that count). A console that re-lists once per notification makes one
small frame cost a whole tools/list round trip, a timeline event and a push to every tab, thousands of times.
"""

from __future__ import annotations

from tests.hostile.target import Ctx, Tool, text

SUB = "io.modelcontextprotocol/subscriptionId"
CHANGES = 2000


async def listen(ctx: Ctx) -> None:
    sid = ctx.id
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": {SUB: sid}, "notifications": {"toolsListChanged": True}}})
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUB: sid}}}
    for _ in range(CHANGES):
        await ctx.event(changed)
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"_meta": {SUB: sid}, "level": "info", "logger": "churn", "data": "flood sent"}})
    await ctx.cancelled.wait()


async def tools_list(ctx: Ctx) -> None:
    ctx.state["lists"] = ctx.state.get("lists", 0) + 1
    await ctx.reply({"resultType": "complete", "tools": [t.listed() for t in ctx.server.tools.values()]})


async def lists_served(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.state.get("lists", 0))))


TOOLS = [Tool("lists_served", lists_served)]
METHODS = {"subscriptions/listen": listen, "tools/list": tools_list}
CAPABILITIES = {"tools": {"listChanged": True}}
