"""Assembly of the demo MCP server (`build_server`) plus its few low-level SDK hooks.

The server is a plain `mcp` 2.3.0 `MCPServer`; the feature modules register tools,
prompts and resources through its public decorators. The three things `MCPServer` has no
public hook for live here, in one place, because they reach into its private
`_lowlevel_server`: the MRTR gate on `resources/read` for demo://guarded, the `logging`
capability, and graceful shutdown of `subscriptions/listen` streams.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer, RequestStateSecurity
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    EmptyResult,
    InputRequiredResult,
    ReadResourceRequestParams,
    ReadResourceResult,
    SetLevelRequestParams,
    TextResourceContents,
)

from app.demo import app_view, content, interactive, tools_basic, tools_live
from app.demo.content import GUARDED_KEY, GUARDED_URI
from app.demo.schemas import GUARDED_SCHEMA
from app.demo.support import DEMO_VERSION, DemoState, ask, form_request, is_modern, read_round, require_capability

SERVER_NAME = "mcp-console-demo"

INSTRUCTIONS = """\
Demo server for the MCP Console (protocol 2026-07-28, stateless).
Nothing here touches the outside world; every tool is safe to call.
- Basics: echo, add (structured), weather (outputSchema), media, fail (isError),
  regional (x-mcp-header Region), log_demo (set _meta logLevel), html_trap,
  write_note (only with --oauth-issuer: keeps a note; needs the mcp:write scope).
- MRTR (input_required): profile_form (every form field kind; echoes the raw answer),
  open_link (URL mode), ask_llm (sampling), list_roots, two_step (two rounds via SDK
  resolvers), multi_ask (two requests in one round), state_only (requestState only),
  always_more (never finishes; tests round caps).
- Streams: progress_fast, progress_slow, long_job (cancel it; see cancellations).
- Changes (use subscriptions/listen): add_tool -> tools/list_changed,
  touch_resource -> resources/updated for demo://counter.
- MCP App: counter_app shows a view (ui://demo/counter.html); from it bump_counter
  (apps only) and reset_counter (model only: refused to the view).
- Prompts: greet (style completions), confirm_prompt (elicitation first).
- Resources: demo://readme, demo://counter, demo://logo.png, demo://guarded
  (elicitation first), template demo://items/{item_id} (completions).
"""


def build_server(state_key: bytes | None = None, protected: bool = False) -> MCPServer:
    """A fresh demo server with its own state (counters, cancellations, runtime tools).

    `state_key`: the key that seals requestState. Without one the SDK makes a key for this process only, so an
    operation waiting for input cannot be answered after the demo server restarts; `mcp-console demo` keeps one in
    its data directory, so an operation survives a restart of the console and of the demo it runs.
    `protected`: run behind OAuth (`--oauth-issuer`): adds `write_note`, the tool that needs the mcp:write scope
    (a step-up to show); the plain demo leaves it out."""
    state = DemoState()
    security = RequestStateSecurity(keys=[state_key]) if state_key is not None else None
    server: MCPServer = MCPServer(
        name=SERVER_NAME,
        title="MCP Console demo server",
        description="Exercises every 2026-07-28 feature a debugging console has to render.",
        instructions=INSTRUCTIONS,
        version=DEMO_VERSION,
        # INFO would log every failing demo call (fail, bad arguments) as noise on stderr.
        log_level="WARNING",
        request_state_security=security,
        extensions=[app_view.register(state)],  # an MCP App: counter_app's view (app/demo/app_view.py)
    )
    tools_basic.register(server, protected)
    interactive.register(server)
    tools_live.register(server, state)
    content.register(server, state)
    # Both wrap or add low-level handlers, so they run after MCPServer's own setup.
    install_guarded_read(server)
    install_unknown_tool_error(server)
    advertise_logging(server)
    return server


def install_unknown_tool_error(server: MCPServer) -> None:
    """Answer a call to an unknown tool with JSON-RPC -32602, as the spec says.

    MCPServer turns every failure, an unknown name included, into an isError result; a
    debugging console's demo should show the protocol error a conforming server sends.
    """
    lowlevel = _lowlevel(server)
    entry = lowlevel.get_request_handler("tools/call")
    if entry is None:  # pragma: no cover - MCPServer always registers it
        raise RuntimeError("MCPServer did not register a tools/call handler")
    inner = entry.handler

    async def call_known(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> Any:
        if server._tool_manager.get_tool(params.name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}", {"name": params.name})
        return await inner(ctx, params)

    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_known)


def _lowlevel(server: MCPServer) -> Server[Any]:
    # Private attribute: MCPServer exposes no public accessor for its low-level Server.
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def install_guarded_read(server: MCPServer) -> None:
    """Put an elicitation round (MRTR on resources/read) in front of demo://guarded.

    A static resource function gets no Context in the SDK, so it cannot answer
    `input_required` itself; wrapping the low-level handler can, and every other URI
    passes straight through to MCPServer's own handler.
    """
    lowlevel = _lowlevel(server)
    entry = lowlevel.get_request_handler("resources/read")
    if entry is None:  # pragma: no cover - MCPServer always registers it
        raise RuntimeError("MCPServer did not register a resources/read handler")
    inner = entry.handler

    async def delegate(
        ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        # The registry stores handlers with an erased return type; narrow it back.
        result = await inner(ctx, params)
        if not isinstance(result, ReadResourceResult | InputRequiredResult):
            raise TypeError(f"unexpected resources/read result {type(result).__name__}")
        return result

    async def read_with_gate(
        ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult | InputRequiredResult:
        if params.uri != GUARDED_URI or not is_modern(ctx.protocol_version):
            return await delegate(ctx, params)
        require_capability(ctx.session.client_capabilities, "form")
        # ctx.params is the raw wire params (requestState already unsealed by the SDK).
        rnd = read_round(ctx.params)
        answer = rnd.answer("guarded", GUARDED_KEY)
        if not isinstance(answer, dict):
            request = form_request("Reading demo://guarded requires a reason.", GUARDED_SCHEMA)
            return ask("guarded", {GUARDED_KEY: request}, rnd.number + 1)
        if answer.get("action") == "accept":
            return await delegate(ctx, params)
        # The spec forbids an empty `contents`; say what happened instead of the content.
        return ReadResourceResult(
            contents=[
                TextResourceContents(
                    uri=GUARDED_URI,
                    mime_type="text/plain",
                    text=f"access not granted: the elicitation was {answer.get('action')!r}",
                )
            ]
        )

    lowlevel.add_request_handler("resources/read", ReadResourceRequestParams, read_with_gate)


def advertise_logging(server: MCPServer) -> None:
    """Make the SDK advertise the `logging` capability.

    The SDK derives `capabilities.logging` from whether a `logging/setLevel` handler is
    registered - a method 2026-07-28 removed (the level now travels per request in
    `_meta`). The demo does send log notifications (`log_demo`), so it registers a no-op
    handler purely so `server/discover` says `logging: {}`. On the modern wire the SDK
    rejects `logging/setLevel` itself (-32601) before this handler could run;
    handshake-era clients get an empty success, and the SDK sends them every level.
    """

    async def set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    _lowlevel(server).add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


def close_listen_streams(server: MCPServer) -> None:
    """End every open `subscriptions/listen` stream gracefully (final result, then close).

    Called on shutdown: without it the HTTP server waits for these endless streams until
    its graceful-shutdown timeout and then cancels them, which the client sees as an
    unexpected disconnect instead of the spec's deliberate end of subscription.
    """
    entry = _lowlevel(server).get_request_handler("subscriptions/listen")
    if entry is not None and isinstance(entry.handler, ListenHandler):
        entry.handler.close()
