"""The console's client under `@modelcontextprotocol/conformance client --command ...`.

The runner starts a scenario server, then runs this with the server's URL as the last argument and the
scenario in MCP_CONFORMANCE_SCENARIO (and, with --spec-version, the revision in
MCP_CONFORMANCE_PROTOCOL_VERSION). It drives `app.mcp` through the headless session (`app.headless.runner`),
the same code `mcp-console call|check` run: the era follows the revision asked for (2026-07-28 is stateless and
connects with server/discover, anything older gets the initialize handshake: app/mcp/connecting.py), then it
does what a person at the console does: list the tools, call each one (MRTR rounds and 2025-11-25 server
requests answered with schema defaults).
Exit 0 when it could talk to the server at all; the runner, not this script, judges the wire.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from app.headless.commands import example_arguments
from app.headless.runner import NOT_CONNECTED, Headless, elicitor
from app.mcp.era import MODERN_VERSION

# A value a header cannot carry as is (non-ASCII, edge whitespace): the client must send it Base64-encoded.
UNSAFE_VALUE = " Zürich ✓ "

# Scenarios whose tool must be called with what the server itself advertised (the scenario checks the echo).
ECHO_SCHEMA = {"json_schema_echo": "schema"}


def _era(version: str) -> str:
    return "modern" if version >= MODERN_VERSION else "legacy"


async def run(url: str, version: str) -> int:
    answer = elicitor("defaults")
    session = Headless(url, False, 20.0, era=_era(version), answer=answer)
    try:
        async with session:
            client = session.client
            # The sse-retry scenario's server answers a pending call on whichever GET comes while it is pending:
            # the 2025-11-25 standalone stream, opened just after the handshake, raced the first calls and, when
            # it lost, took the answer that the resumption (with Last-Event-ID, after retry:) was meant to get.
            standalone = getattr(client.transport, "standalone", None)
            if standalone is not None:
                await asyncio.wait_for(standalone.first_answer.wait(), 20.0)
            listed = await client.request("tools/list", {})
            tools: list[dict[str, Any]] = [t for t in (listed.result or {}).get("tools", []) if isinstance(t, dict)]
            client.learn_tools(tools)
            by_name = {t.get("name"): t for t in tools}
            for tool in tools:
                name = tool.get("name")
                if not isinstance(name, str) or name in client.invalid_tools:
                    continue  # a tool whose x-mcp-header breaks the rules is excluded, never called
                arguments = example_arguments(tool)
                if name in ECHO_SCHEMA:
                    arguments[ECHO_SCHEMA[name]] = _advertised_schema(by_name)
                await session.operation("tools/call", {"name": name, "arguments": arguments}, answer)
                unsafe = _unsafe_header_arguments(tool, client.tool_headers.get(name, {}))
                if unsafe:  # once more with values only Base64 can carry, as a person might type them
                    await session.operation("tools/call", {"name": name, "arguments": {**arguments, **unsafe}},
                                            answer)
    except NOT_CONNECTED as exc:
        print(f"could not connect: {exc}", file=sys.stderr)
        return 2
    return 0


def _unsafe_header_arguments(tool: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """The string arguments a tool mirrors into headers, each set to a value that needs Base64."""
    props = (tool.get("inputSchema") or {}).get("properties") or {}
    return {arg: UNSAFE_VALUE for arg in mapping
            if isinstance(props.get(arg), dict) and props[arg].get("type") == "string"}


def _advertised_schema(by_name: dict[Any, dict[str, Any]]) -> Any:
    """The inputSchema of the scenario's schema-carrying tool, exactly as tools/list gave it."""
    for name, tool in by_name.items():
        if name not in ECHO_SCHEMA:
            return tool.get("inputSchema")
    return {}


def main() -> int:
    url = sys.argv[-1]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", MODERN_VERSION)
    return asyncio.run(run(url, version))


if __name__ == "__main__":
    sys.exit(main())
