"""A server behind a lock: every request is answered HTTP 401 with a WWW-Authenticate challenge, as an OAuth-protected
MCP server answers a client without a token. Named in `--tools` only (its METHODS take over the handshake)."""

from __future__ import annotations

import json

from tests.hostile.target import Ctx, Tool

CHALLENGE = 'Bearer realm="hostile", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'


async def locked(ctx: Ctx) -> None:
    ctx.state["refused"] = ctx.state.get("refused", 0) + 1
    await ctx.raw_http(401, json.dumps({"error": "invalid_token", "refused": ctx.state["refused"]}),
                       "application/json", {"WWW-Authenticate": CHALLENGE})


TOOLS: list[Tool] = []
METHODS = {method: locked for method in ("server/discover", "initialize", "tools/list", "tools/call", "prompts/list",
                                         "resources/list", "ping")}
