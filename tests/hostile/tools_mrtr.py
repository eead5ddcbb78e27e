"""Hostile Multi Round-Trip Requests: an input_required round asking for thousands of inputs at once, one that
asks again forever (rotating its requestState), and input requests of the wrong shapes."""

from __future__ import annotations

from tests.hostile.target import Ctx, Tool


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


TOOLS = [Tool("many_inputs", many_inputs), Tool("forever", forever)]
