"""List-change floods: loaded by name (`--tools churn`), the module answers subscriptions/listen by acknowledging,
then sending `CHANGES` notifications/tools/list_changed back to back, and as many notifications/resources/updated
for its one resource `URI`. It counts the tools/list and resources/read requests it gets (the tools
`lists_served` and `reads_served` answer with those counts), and how many of one kind it was answering at once at
most (`most_at_once`; each answer takes `ANSWER_S`, so overlapping requests show).
A console that re-lists (or re-reads) once per notification makes one small frame cost a whole round trip, a
timeline event and a push to every tab, thousands of times.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tests.hostile.target import Ctx, Tool, text

SUB = "io.modelcontextprotocol/subscriptionId"
CHANGES = 2000
URI = "churn://r"
ANSWER_S = 0.005


async def listen(ctx: Ctx) -> None:
    sid = ctx.id
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": {SUB: sid}, "notifications": {"toolsListChanged": True}}})
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUB: sid}}}
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
               "params": {"_meta": {SUB: sid}, "uri": URI}}
    for _ in range(CHANGES):
        await ctx.event(changed)
        await ctx.event(updated)
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"_meta": {SUB: sid}, "level": "info", "logger": "churn", "data": "flood sent"}})
    await ctx.cancelled.wait()


def counted(kind: str) -> Callable[[Callable[[Ctx], Awaitable[None]]], Callable[[Ctx], Awaitable[None]]]:
    """Counts the requests of a kind, and the most of them answered at once."""
    def wrap(handler: Callable[[Ctx], Awaitable[None]]) -> Callable[[Ctx], Awaitable[None]]:
        async def run(ctx: Ctx) -> None:
            state = ctx.state
            state[kind] = state.get(kind, 0) + 1
            state[f"{kind}-now"] = state.get(f"{kind}-now", 0) + 1
            state["most"] = max(state.get("most", 0), state[f"{kind}-now"])
            try:
                await asyncio.sleep(ANSWER_S)  # a server that takes a moment: requests sent together overlap here
                await handler(ctx)
            finally:
                state[f"{kind}-now"] -= 1
        return run
    return wrap


@counted("lists")
async def tools_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "tools": [t.listed() for t in ctx.server.tools.values()]})


async def resources_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "resources": [{"uri": URI, "name": "churning"}]})


@counted("reads")
async def resources_read(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "contents": [{"uri": URI, "text": f"read {ctx.state['reads']}"}]})


async def lists_served(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.state.get("lists", 0))))


async def reads_served(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.state.get("reads", 0))))


async def most_at_once(ctx: Ctx) -> None:
    await ctx.reply(text(str(ctx.state.get("most", 0))))


TOOLS = [Tool("lists_served", lists_served), Tool("reads_served", reads_served), Tool("most_at_once", most_at_once)]
METHODS = {"subscriptions/listen": listen, "tools/list": tools_list, "resources/list": resources_list,
           "resources/read": resources_read}
CAPABILITIES = {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": False}}
