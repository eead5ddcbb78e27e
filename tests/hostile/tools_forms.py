"""Hostile forms: schema property names, prompt arguments and input requests that try to take over the page's ids,
plus results and questions that carry active content.

- `named_result`: an inputSchema whose property names are the suffixes the page gives a tool's own parts
  (`result`, `json`, `log`, a sibling's `-help`). Its result is the text `named_result answered`.
- `deep_schema`: an inputSchema nested `DEPTH` objects deep (a tools/list no honest server sends, but valid JSON).
- `active_content`: a result with an embedded text/html resource, an SVG image holding script, and a
  resource link to a javascript: URI.
- `deep_result`: a result whose structuredContent is nested `n` objects deep.
- `nested_args`: an object holding an object, an array of objects, an array of integers and an enum; its result is
  the arguments it received as sorted JSON (what went on the wire, as the server read it).
- `huge_schema`: `HUGE` string properties; it answers with how many arguments it got.
- `ask_huge`: one round of `n` (default `ASKED`) form input requests whose schemas have `HUGE` fields each (64 of
  them made a 52.5 MB page when every field rendered); answered, it says how many answers came and what the first
  one's last field held.
- `ask_url`: an input request (URL mode) whose URL is a javascript: URI, one whose URL is a data: URI, and
  a URL and a form request whose message and URL carry a right-to-left override.

Loaded by name (`--tools forms`), the module also lists a prompt whose argument is named `result`, and
answers prompts/get with the text `prompt answered`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.hostile.forms_sizes import ASKED, HUGE
from tests.hostile.target import Ctx, Tool, complete, text

RLO = "\u202e"
DEPTH = 450  # objects, each two levels of JSON: 900 in all, near what the console's decoder takes
sys.setrecursionlimit(10_000)  # so this process can itself encode the deep schema
SVG = ("PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiPjxzY3JpcHQ+YWxlcnQoMik8"
       "L3NjcmlwdD48L3N2Zz4=")  # <svg ... onload="alert(1)"><script>alert(2)</script></svg>


async def named_result(ctx: Ctx) -> None:
    await ctx.reply(text("named_result answered"))


def _deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"d": schema}}
    return schema


async def deep_schema(ctx: Ctx) -> None:
    await ctx.reply(text("deep answered"))


async def deep_result(ctx: Ctx) -> None:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(int(ctx.args.get("n", 900))):
        value = {"d": value}
    await ctx.reply({**text(f"deep {ctx.args.get('n')}"), "structuredContent": value})


async def active_content(ctx: Ctx) -> None:
    await ctx.reply(complete([
        {"type": "resource", "resource": {"uri": "ui://x", "mimeType": "text/html",
                                          "text": "<script>window.__pwned=1</script><img src=x onerror=alert(3)>"}},
        {"type": "image", "mimeType": "image/svg+xml", "data": SVG},
        {"type": "resource_link", "uri": "javascript:alert(4)", "name": "click me"},
        {"type": "text", "text": "active answered"},
    ]))


async def ask_url(ctx: Ctx) -> None:
    if ctx.params.get("inputResponses"):
        await ctx.reply(text("url answered"))
        return
    await ctx.reply({"resultType": "input_required", "requestState": "s1", "inputRequests": {
        "bidi": {"method": "elicitation/create", "params": {
            "mode": "url", "message": f"Sign in at {RLO}moc.knab", "elicitationId": "e0",
            "url": f"https://evil.example/{RLO}moc.knab.www//:sptth"}},
        "ask": {"method": "elicitation/create", "params": {
            "mode": "form", "message": f"Pay {RLO}exe.pdf", "requestedSchema": {"type": "object", "properties": {}}}},
        "js": {"method": "elicitation/create", "params": {"mode": "url", "message": "open <b>me</b>",
                                                          "url": "javascript:alert(5)", "elicitationId": "e1"}},
        "data": {"method": "elicitation/create", "params": {"mode": "url", "message": "or me",
                                                            "url": "data:text/html,<script>alert(6)</script>",
                                                            "elicitationId": "e2"}},
    }})


async def nested_args(ctx: Ctx) -> None:
    await ctx.reply(text(json.dumps(ctx.args, sort_keys=True)))


async def huge_schema(ctx: Ctx) -> None:
    await ctx.reply(text(f"huge got {len(ctx.args)}"))


NESTED = {"type": "object", "required": ["note"], "properties": {
    "note": {"type": "object", "description": "The note", "required": ["title"], "properties": {
        "title": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "flags": {"type": "object", "properties": {"pinned": {"type": "boolean"}}}}},
    "tags": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/Tag"}},
    "ids": {"type": "array", "items": {"type": "integer"}},
    "mode": {"type": "string", "enum": ["fast", "slow"]},
    "a.b": {"type": "string", "description": "a name with a dot, beside an object named a"},
    "a": {"type": "object", "properties": {"b": {"type": "string"}}},
}, "$defs": {"Tag": {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "weight": {"type": "number"}}}}}
_HUGE = {"type": "object", "properties": {f"f{i:04d}": {"type": "string", "description": f"field {i}"}
                                          for i in range(HUGE)}}

async def ask_huge(ctx: Ctx) -> None:
    answers = ctx.params.get("inputResponses")
    if isinstance(answers, dict):
        first = answers.get("q00") or {}
        last = (first.get("content") or {}).get(f"f{HUGE - 1:04d}")
        await ctx.reply(text(f"answers {len(answers)}, q00 last field {last!r}"))
        return
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Fill in", "requestedSchema": _HUGE}}
    asked = int(ctx.args.get("n", ASKED))
    await ctx.reply({"resultType": "input_required", "requestState": "huge",
                     "inputRequests": {f"q{i:02d}": ask for i in range(asked)}})


_CLASH = {"type": "object", "properties": {
    "result": {"type": "string"}, "json": {"type": "string"}, "log": {"type": "string"},
    "a": {"type": "string"}, "a-help": {"type": "string", "description": "the help of a, spoofed"},
}}

TOOLS = [
    Tool("named_result", named_result, {"description": "Properties named like the page's own parts",
                                        "inputSchema": _CLASH}),
    Tool("deep_schema", deep_schema, {"description": "A schema nested very deep", "inputSchema": _deep(DEPTH)}),
    Tool("deep_result", deep_result, {"description": "A result nested n deep",
                                      "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
    Tool("nested_args", nested_args, {"description": "Nested objects and arrays; echoes its arguments",
                                      "inputSchema": NESTED}),
    Tool("huge_schema", huge_schema, {"description": f"{HUGE} string fields", "inputSchema": _HUGE}),
    Tool("ask_huge", ask_huge, {"description": f"n (default {ASKED}) form requests of {HUGE} fields each",
                                "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
    Tool("active_content", active_content, {"description": "Embedded HTML, SVG with script, a javascript: link"}),
    Tool("ask_url", ask_url, {"description": "Asks to open javascript: and data: URLs"}),
]


async def prompts_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "prompts": [
        {"name": "clash", "description": "An argument named result",
         "arguments": [{"name": "result", "required": False}]}]})


async def prompts_get(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete",
                     "messages": [{"role": "user", "content": {"type": "text", "text": "prompt answered"}}]})


METHODS = {"prompts/list": prompts_list, "prompts/get": prompts_get}
CAPABILITIES = {"prompts": {"listChanged": False}}
