"""Says back the very bytes that reached the target: a request's body (HTTP) or line (stdio) and its HTTP head,
base64-encoded, so a test can hold them beside what the console recorded as sent."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.hostile.target import Ctx, Tool, text


async def wire_echo(ctx: Ctx) -> None:
    out: Any = ctx._out
    said = {"body": base64.b64encode(out.received).decode(), "head": base64.b64encode(out.received_head).decode()}
    await ctx.reply(text(json.dumps(said)))


TOOLS = [Tool("wire_echo", wire_echo, {"description": "Says back the bytes of the request as they arrived."})]
