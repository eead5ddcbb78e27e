"""Lint behaviours: each tool breaks one rule of the conformance lint once (see docs/lint-rules.md).

Loaded by name (`--tools lint`), the module also answers `subscriptions/listen` badly: a notification before
the acknowledgement, an acknowledgement that grants more than was asked, a wrong subscriptionId and a
progress notification on the listen stream. Its tools/list result has no ttlMs/cacheScope (the target's own
tools/list never does), which is the `cache.fields` violation.
"""

from __future__ import annotations

import base64
import json

from tests.hostile.target import Ctx, Tool, complete, text

SUB = "io.modelcontextprotocol/subscriptionId"


async def fine(ctx: Ctx) -> None:
    await ctx.reply(text("fine"))


async def no_result_type(ctx: Ctx) -> None:
    await ctx.reply({"content": [{"type": "text", "text": "no resultType here"}]})


async def unknown_result_type(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "incomplete", "content": []})  # the pre-release draft's name


async def schema_violation(ctx: Ctx) -> None:
    await ctx.reply({"resultType": "complete", "content": "not a list of blocks"})


async def wrong_id_then_right(ctx: Ctx) -> None:
    other = ctx.id + 1000 if isinstance(ctx.id, int) else f"{ctx.id}-other"
    await ctx.event({"jsonrpc": "2.0", "id": other, "result": text("for somebody else")})
    await ctx.reply(text("the real answer"))


async def server_request(ctx: Ctx) -> None:
    await ctx.event({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                     "params": {"mode": "form", "message": "legacy ask", "requestedSchema": {"type": "object"}}})
    await ctx.reply(text("asked the client the legacy way"))


async def mismatched_status(ctx: Ctx) -> None:
    await ctx.error(-32020, "Header mismatch, sent with HTTP 200")


async def retired_code(ctx: Ctx) -> None:
    await ctx.error(-32002, "Resource not found (the retired code)")


async def accepted_request(ctx: Ctx) -> None:
    await ctx.raw_http(202, "", "application/json")


async def not_json(ctx: Ctx) -> None:
    await ctx.raw_http(200, "hello, not JSON", "application/json")


async def sse_garbage(ctx: Ctx) -> None:
    await ctx.event("data: {not json\n\n")
    await ctx.reply(text("after a broken event"))


async def progress_after_final(ctx: Ctx) -> None:
    await ctx.progress(1, 2)
    await ctx.reply(text("done"))
    await ctx.progress(2, 2)


async def late_after_cancel(ctx: Ctx) -> None:
    """Silent until cancelled (the client's idle deadline does it), then progress and an answer anyway."""
    await ctx.progress(1)
    await ctx.cancelled.wait()
    await ctx.progress(2)
    await ctx.reply(text("too late"))


async def structured_mismatch(ctx: Ctx) -> None:
    await ctx.reply(complete([{"type": "text", "text": '{"n": "seven"}'}], structuredContent={"n": "seven"}))


async def plaintext_state(ctx: Ctx) -> None:
    if ctx.params.get("requestState"):
        await ctx.reply(text("confirmed"))
        return
    state = base64.b64encode(json.dumps({"step": 1, "user": "admin", "approved": False}).encode()).decode()
    ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?", "requestedSchema": {
        "type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}}}
    await ctx.reply({"resultType": "input_required", "inputRequests": {"confirm": ask}, "requestState": state})


async def listen(ctx: Ctx) -> None:
    sid = ctx.id
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUB: sid}}}
    await ctx.event(changed)  # before the acknowledgement
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "_meta": {SUB: sid}, "notifications": {"toolsListChanged": True, "promptsListChanged": True}}})
    await ctx.event({**changed, "params": {"_meta": {SUB: f"{sid}-wrong"}}})
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"_meta": {SUB: sid}, "progressToken": "listen", "progress": 1}})
    await ctx.cancelled.wait()


TOOLS = [
    Tool("lint_fine", fine),
    Tool("no_result_type", no_result_type),
    Tool("unknown_result_type", unknown_result_type),
    Tool("schema_violation", schema_violation),
    Tool("wrong_id_then_right", wrong_id_then_right),
    Tool("server_request", server_request),
    Tool("mismatched_status", mismatched_status),
    Tool("retired_code", retired_code),
    Tool("accepted_request", accepted_request),
    Tool("not_json", not_json),
    Tool("sse_garbage", sse_garbage),
    Tool("progress_after_final", progress_after_final),
    Tool("late_after_cancel", late_after_cancel),
    Tool("structured_mismatch", structured_mismatch, {"outputSchema": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}),
    Tool("plaintext_state", plaintext_state),
    Tool("bad_header_annotation", fine, {"inputSchema": {"type": "object", "properties": {
        "region": {"type": "number", "x-mcp-header": "Region"}}}}),
    Tool("bad name!", fine),
]

METHODS = {"subscriptions/listen": listen}
CAPABILITIES = {"tools": {"listChanged": True}}
