"""Odd but legal bytes on the wire, so a test can hold what the console shows and exports beside what was sent.

- `say`: the whole HTTP answer is the test's: `parts` (base64), written one at a time with a pause between them so
  they arrive as separate chunks (an SSE line split across reads). `@@ID@@` in a part becomes the request's id.
- `say_line` (stdio): the answer is the line `line` (base64), written to stdout as those very bytes.
- `key_echo`: the same for an `inputRequests` key (a roots/list request under the JSON text `key`).
- `odd_keys`: form questions keyed by ODD_KEYS (NUL, LF, CR, a lone surrogate); the retry's keys come back.
- `state_echo`: an `input_required` round with only a `requestState` (the JSON text `state`, spelled exactly as
  given, escapes and all; with `repeat`, the string made of `state` repeated that many times); the retry is
  answered with the bytes of the request that carried it back (base64).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any

from tests.hostile.target import Ctx, Tool, text

PAUSE_S = 0.05  # between parts: long enough that each is its own read on the console's side


async def say(ctx: Ctx) -> None:
    out: Any = ctx._out
    rid = json.dumps(ctx.id).encode()
    for i, part in enumerate(ctx.args.get("parts", [])):
        if i:
            await asyncio.sleep(PAUSE_S)
        out.w.write(base64.b64decode(part).replace(b"@@ID@@", rid))
        await out.w.drain()
    out.done = True


async def say_line(ctx: Ctx) -> None:
    """stdio: the line `line` (base64) written to stdout as bytes, as the answer."""
    line = base64.b64decode(str(ctx.args.get("line", ""))).replace(b"@@ID@@", json.dumps(ctx.id).encode())
    sys.stdout.flush()
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


async def key_echo(ctx: Ctx) -> None:
    """An `input_required` round asking roots/list under the key spelled by the JSON text `key`; the retry is
    answered with the bytes of the request that carried the answer (base64)."""
    out: Any = ctx._out
    if "inputResponses" not in ctx.params:
        key = str(ctx.args.get("key", '"k"'))
        await ctx._out.final('{"jsonrpc":"2.0","id":' + json.dumps(ctx.id) + ',"result":{"resultType":'
                             '"input_required","inputRequests":{' + key + ':{"method":"roots/list"}}}}')
        return
    await ctx.reply(text(json.dumps({"body": base64.b64encode(out.received).decode()})))


ODD_KEYS = ["nul\u0000here", "line\nbreak", "cr\rlf", "lone\ud800"]  # inputRequests keys a page cannot carry as is


async def odd_keys(ctx: Ctx) -> None:
    """An `input_required` round of form questions keyed by ODD_KEYS; the retry is answered with the
    inputResponses keys it carried, as JSON text (escaped, so a lone surrogate survives the trip)."""
    responses = ctx.params.get("inputResponses")
    if responses is None:
        ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Fine?", "requestedSchema": {
            "type": "object", "properties": {}}}}
        await ctx.reply({"resultType": "input_required", "inputRequests": {key: ask for key in ODD_KEYS}})
        return
    await ctx.reply(text(json.dumps(sorted(responses))))


async def state_echo(ctx: Ctx) -> None:
    out: Any = ctx._out
    if "requestState" not in ctx.params:
        state = str(ctx.args.get("state", '"s"'))
        if "repeat" in ctx.args:  # a state bigger than the console takes as typed arguments
            state = '"' + state * int(ctx.args["repeat"]) + '"'
        await ctx._out.final('{"jsonrpc":"2.0","id":' + json.dumps(ctx.id) + ',"result":{"resultType":'
                             '"input_required","requestState":' + state + "}}")
        return
    await ctx.reply(text(json.dumps({"body": base64.b64encode(out.received).decode()})))


async def typed_echo(ctx: Ctx) -> None:
    out: Any = ctx._out
    await ctx.reply(text(json.dumps({"body": base64.b64encode(out.received).decode()})))


TYPED = {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
                                          "b": {"type": "boolean"}, "any": {}, "e": {"enum": ["1", 1, "x"]}}}

TOOLS = [
    Tool("typed_echo", typed_echo, {"description": "Says back the request's bytes; its arguments are typed.",
                                    "inputSchema": TYPED}),
    Tool("say_line", say_line, {"inputSchema": {"type": "object", "properties": {"line": {"type": "string"}}}}),
    Tool("key_echo", key_echo, {"inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}}),
    Tool("odd_keys", odd_keys),
    Tool("say", say, {"inputSchema": {"type": "object", "properties": {"parts": {"type": "array"}}}}),
    Tool("state_echo", state_echo, {"inputSchema": {"type": "object", "properties": {
        "state": {"type": "string"}, "repeat": {"type": "integer"}}}}),
]
