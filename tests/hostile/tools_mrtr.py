"""Hostile Multi Round-Trip Requests: one key asked again every round (a new question each time); a round asking
for thousands of inputs at once, one that asks again forever (rotating its requestState); keys that are markup,
a bidi override and quotes; and progress on a request's stream under another request's token."""

from __future__ import annotations

import asyncio

from tests.hostile.target import Ctx, Tool, text


def _ask(i: int) -> dict[str, object]:
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": f"Question {i}?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}


async def many_inputs(ctx: Ctx) -> None:
    count = int(ctx.args.get("count", 5000))
    await ctx.reply({"resultType": "input_required", "inputRequests": {f"q{i}": _ask(i) for i in range(count)},
                     "requestState": "s"})


async def forever(ctx: Ctx) -> None:
    rounds = int(ctx.params.get("requestState") or 0) + 1
    await ctx.reply({"resultType": "input_required", "requestState": str(rounds)})


async def same_key(ctx: Ctx) -> None:
    """Asks under the one key "q" every round, a new question each time (keys are the server's to reuse), and
    takes its time over a retry, so a second tab's answer to the old question arrives while the new one is
    being asked. Three rounds, then it echoes the last answer."""
    rounds = int(ctx.params.get("requestState") or 0)
    given = (ctx.params.get("inputResponses") or {}).get("q")
    if rounds >= 1:
        await asyncio.sleep(0.5)  # the server thinking: the window in which the other tab's answer lands
    if rounds >= 3:
        await ctx.reply(text(f"last answer: {given}"))
        return
    await ctx.reply({"resultType": "input_required", "inputRequests": {"q": _ask(rounds + 1)},
                     "requestState": str(rounds + 1)})


ODD_KEYS = ["<b>bold</b>", "\u202eevil", 'say "hi" & go']


async def odd_keys(ctx: Ctx) -> None:
    """Asks under keys that are markup, a bidi override and quotes: keys are the server's strings, shown as data."""
    await ctx.reply({"resultType": "input_required", "inputRequests": {k: _ask(i) for i, k in enumerate(ODD_KEYS)},
                     "requestState": "s"})


async def foreign_progress(ctx: Ctx) -> None:
    await ctx.progress(1, 100, "mine")
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"progressToken": "someone-else", "progress": 99, "total": 100, "message": "not mine"}})
    await ctx.reply(text("done"))


TOOLS = [Tool("same_key", same_key), Tool("odd_keys", odd_keys),
         Tool("foreign_progress", foreign_progress), Tool("many_inputs", many_inputs), Tool("forever", forever)]
