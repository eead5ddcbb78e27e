"""Hostile details: a tool, a resource, a resource template and a prompt that declare every field the spec gives
them, with markup in every string, so a test can see each field shown and none of it obeyed; and tools whose
results break their outputSchema.

- `every_field`: title, annotations (all four hints declared, one of them the non-default), icons (a drawable PNG
  data: URI, an SVG data: URI, an https: URL and a javascript: URI), outputSchema, `_meta` with an MCP Apps
  `ui.resourceUri`, and `execution.taskSupport`. It answers with structuredContent that matches its outputSchema.
- `odd_hints`: a read-only tool that still declares destructiveHint (which then does not apply) and an
  openWorldHint that is not a boolean.
- `no_structured`: declares an outputSchema and answers with no structuredContent.
- `wrong_structured`: declares an outputSchema and answers with structuredContent that breaks it.

Loaded by name (`--tools details`), the module also answers resources/list, resources/templates/list and
prompts/list with one item each that declares every field, and prompts/get with the text `details prompt`.
"""

from __future__ import annotations

from typing import Any

from tests.hostile.target import Ctx, Tool, complete, text

B = "<b>bold</b><script>window.__pwned=1</script>"  # in every string the target sends
IMG = "<img src=x onerror=window.__pwned=2>"
# A 1×1 transparent PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
SVG = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiLz4="
ICONS = [
    {"src": f"data:image/png;base64,{PNG}", "mimeType": "image/png", "sizes": ["1x1", f"any{B}"], "theme": "light"},
    {"src": f"data:image/svg+xml;base64,{SVG}", "mimeType": "image/svg+xml"},
    {"src": f"https://icons.invalid/i.png?{B}", "mimeType": f"image/png{B}", "theme": f"dark{IMG}"},
    {"src": "javascript:window.__pwned=3"},
]
META = {"ui": {"resourceUri": f"ui://every/{B}"}, "vendor/note": f"meta {B}"}
OUTPUT = {"type": "object", "properties": {"n": {"type": "integer", "description": f"a count {B}"}},
          "required": ["n"]}


async def every_field(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": '{"n": 7}'}], structuredContent={"n": 7}))


async def no_structured(ctx: Ctx) -> None:
    await ctx.reply(text("no structured content here"))


async def wrong_structured(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": '{"n": "seven"}'}], structuredContent={"n": "seven"}))


TOOLS = [
    Tool("every_field", every_field, {
        "title": f"Every field {B}",
        "description": f"First line of the description {B}\nA second line {IMG}",
        "annotations": {"title": f"annotated title {B}", "readOnlyHint": False, "destructiveHint": False,
                        "idempotentHint": True, "openWorldHint": False},
        "icons": ICONS, "outputSchema": OUTPUT, "_meta": META, "execution": {"taskSupport": "optional"},
    }),
    Tool("odd_hints", every_field, {
        "description": f"Hints that do not apply {IMG}",
        "annotations": {"readOnlyHint": True, "destructiveHint": True, "openWorldHint": f"yes {B}"},
        "execution": {"taskSupport": f"sometimes {B}"}, "outputSchema": OUTPUT,
    }),
    Tool("no_structured", no_structured, {"description": "Promises structured output, sends none",
                                          "outputSchema": OUTPUT}),
    Tool("wrong_structured", wrong_structured, {"description": "Promises an integer n, sends a string",
                                                "outputSchema": OUTPUT}),
]

RESOURCE: dict[str, Any] = {
    "uri": "details://every", "name": f"every {B}", "title": f"Every resource {B}",
    "description": f"A resource with every field {IMG}", "mimeType": f"text/plain{B}", "size": 123456,
    "annotations": {"audience": ["user", f"assistant{B}"], "priority": 0.25, "lastModified": f"2026-07-28{B}"},
    "icons": ICONS, "_meta": META,
}
TEMPLATE: dict[str, Any] = {
    "uriTemplate": f"details://items/{{id}}{B}", "name": f"items {B}", "title": f"Every template {B}",
    "description": f"A template with every field {IMG}", "mimeType": "application/json",
    "annotations": {"audience": ["assistant"], "priority": 3, "lastModified": "2026-07-28T00:00:00Z"},
    "icons": ICONS, "_meta": META,
}
PROMPT: dict[str, Any] = {
    "name": "every_prompt", "title": f"Every prompt {B}", "description": f"First prompt line {B}\nmore {IMG}",
    "arguments": [{"name": "topic", "title": f"Topic {B}", "description": f"what to write about {IMG}",
                   "required": True},
                  {"name": "tone", "description": f"optional tone {B}"}],
    "icons": ICONS, "_meta": META,
}


async def resources_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "resources": [RESOURCE], "ttlMs": 0, "cacheScope": "public"})


async def templates_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "resourceTemplates": [TEMPLATE], "ttlMs": 0, "cacheScope": "public"})


async def prompts_list(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "prompts": [PROMPT], "ttlMs": 0, "cacheScope": "public"})


async def prompts_get(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete",
                     "messages": [{"role": "user", "content": {"type": "text", "text": "details prompt"}}]})


METHODS = {"resources/list": resources_list, "resources/templates/list": templates_list,
           "prompts/list": prompts_list, "prompts/get": prompts_get}
CAPABILITIES = {"resources": {}, "prompts": {"listChanged": False}}
