"""Notification floods at full rate: a burst of progress frames written back to back, each one's JSON text
spelled oddly on purpose (spacing, escapes, markup, a line separator) so a test can check that every frame is
recorded exactly as it crossed the wire, and framed three ways (LF, CRLF with an id, a lone CR) so the SSE
reader's bulk line splitting meets all of them inside one read."""

from __future__ import annotations

import json

from tests.hostile.target import Ctx, Tool, text


def burst_frame(token: object, i: int, count: int) -> str:
    """The JSON text of progress frame `i` of `count`, as the tool sends it (tests rebuild it to compare)."""
    spacing = " " * (i % 3)
    message = f"<b>step</b> {i} \u00e9\\u2028 &amp; \u202e{'x' * (i % 7)}"
    return (f'{{"jsonrpc":"2.0",{spacing}"method":"notifications/progress",'
            f'"params":{{"progressToken":{json.dumps(token)},"progress":{i},"total":{count},'
            f'"message":"{message}"}}}}')


def sse_framed(raw: str, i: int) -> str:
    if i % 3 == 1:
        return f"id: {i}\r\ndata: {raw}\r\n\r\n"
    if i % 3 == 2:
        return f"data: {raw}\r\r"
    return f"data: {raw}\n\n"


async def progress_burst(ctx: Ctx) -> None:
    """`count` progress frames as fast as the socket takes them, then the answer."""
    count = int(ctx.args.get("count", 1000))
    for i in range(1, count + 1):
        await ctx.event(sse_framed(burst_frame(ctx.progress_token, i, count), i))
    await ctx.reply(text(f"sent {count}"))


TOOLS = [Tool("progress_burst", progress_burst,
              {"inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}})]
