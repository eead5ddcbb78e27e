"""Prompts, resources, the item template, completions, and MRTR on prompts/get + resources/read.

`confirm_prompt` and `demo://guarded` show that `input_required` is not only for tools:
the spec allows it on `prompts/get` and `resources/read` too. The prompt does it through
the SDK's supported path (a prompt function may return an `InputRequiredResult`). A static
resource function cannot (the SDK gives static resources no Context), so the guarded
resource's gate lives in `server.py`, around the low-level `resources/read` handler.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
)
from pydantic import Field

from app.demo.schemas import PROMPT_CONFIRM_SCHEMA
from app.demo.support import DemoState, ask, form_request, is_modern, read_round, require_capability, tiny_png
from app.demo.tools_live import COUNTER_URI

GUARDED_URI = "demo://guarded"
GUARDED_KEY = "guarded_access"
PROMPT_CONFIRM_KEY = "confirm_topic"
ITEM_TEMPLATE = "demo://items/{item_id}"

STYLES = ("formal", "casual", "pirate")
ITEMS: dict[str, str] = {
    "alpha": "The first item. Reliable, if a little plain.",
    "beta": "The second item. Mostly works.",
    "gamma": "The third item. Radiates.",
    "delta": "The fourth item. Changes things.",
    "epsilon": "A small item.",
}

README = """# MCP Console demo server

A test target for the console, speaking MCP 2026-07-28 (stateless, MRTR).

- Tools cover plain/structured results, media, errors, progress, cancellation,
  list-changed and resource-updated notifications, and every MRTR round shape.
- `demo://counter` changes when you call `touch_resource`; subscribe to it with
  `subscriptions/listen` to see `notifications/resources/updated`.
- `demo://guarded` and the `confirm_prompt` prompt need an elicitation round first.
"""


def _greeting(name: str, style: str) -> str:
    if style == "casual":
        return f"Hey {name}! What's up?"
    if style == "pirate":
        return f"Ahoy, {name}! Welcome aboard, ye scallywag."
    return f"Good day, {name}. It is a pleasure to make your acquaintance."


def _complete(prefix: str, options: tuple[str, ...] | list[str]) -> Completion:
    """Prefix filter, case-insensitive; the spec caps `values` at 100 entries."""
    matches = [option for option in options if option.lower().startswith(prefix.lower())]
    return Completion(values=matches[:100], total=len(matches), has_more=len(matches) > 100)


def register(server: MCPServer, state: DemoState) -> None:
    """Register prompts, resources, the item template and completions."""

    @server.prompt(title="Greeting")
    async def greet(
        name: Annotated[str, Field(description="Who to greet.")],
        style: Annotated[str, Field(description="formal, casual or pirate (has completions).")] = "formal",
    ) -> list[UserMessage]:
        """A one-message greeting prompt in the chosen style."""
        return [UserMessage(_greeting(name, style))]

    @server.prompt(title="Prompt behind an elicitation")
    async def confirm_prompt(
        topic: Annotated[str, Field(description="What the prompt should be about.")],
        ctx: Context,
    ) -> list[UserMessage] | InputRequiredResult:
        """Asks the user to confirm (MRTR on prompts/get) before returning messages."""
        if not is_modern(ctx.protocol_version):
            # The legacy wire has no input_required; just build the prompt.
            return [UserMessage(f"Let's talk about {topic}.")]
        require_capability(ctx.client_capabilities, "form")
        rnd = read_round(ctx.request_context.params)
        answer = rnd.answer("confirm_prompt", PROMPT_CONFIRM_KEY)
        if not isinstance(answer, dict):
            request = form_request(f"Build a prompt about {topic!r}?", PROMPT_CONFIRM_SCHEMA)
            return ask("confirm_prompt", {PROMPT_CONFIRM_KEY: request}, rnd.number + 1)
        content = answer.get("content")
        proceed = isinstance(content, dict) and content.get("proceed") is True
        if answer.get("action") == "accept" and proceed:
            return [
                UserMessage(f"Let's talk about {topic}."),
                UserMessage(f"Start with the three most surprising facts about {topic}."),
            ]
        return [UserMessage(f"(The user did not confirm a prompt about {topic}: action={answer.get('action')!r}.)")]

    @server.resource("demo://readme", name="readme", title="Demo README", mime_type="text/markdown")
    async def readme() -> str:
        """What this server is for (markdown)."""
        return README

    @server.resource(COUNTER_URI, name="counter", title="Touch counter", mime_type="text/plain")
    async def counter() -> str:
        """How many times touch_resource has bumped demo://counter."""
        return str(state.counters.get(COUNTER_URI, 0))

    @server.resource("demo://logo.png", name="logo", title="Demo logo", mime_type="image/png")
    async def logo() -> bytes:
        """A 16x16 PNG generated in code (served as a base64 blob)."""
        return tiny_png()

    @server.resource(GUARDED_URI, name="guarded", title="Guarded resource", mime_type="text/plain")
    async def guarded() -> str:
        """Only reached once the elicitation gate (server.install_guarded_read) accepts."""
        return "The guarded resource: access granted after an elicitation round."

    @server.resource(ITEM_TEMPLATE, name="item", title="Demo item", mime_type="application/json")
    async def item(item_id: str) -> str:
        """One demo item; unknown ids are 'Resource not found' (-32602)."""
        if item_id not in ITEMS:
            raise ResourceNotFoundError(f"Unknown item: {item_id}")
        return json.dumps({"id": item_id, "description": ITEMS[item_id]})

    # MCPServer.completion() is unannotated in mcp 2.3.0, hence the ignore.
    @server.completion()  # type: ignore[no-untyped-call, untyped-decorator]
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        """Completions for greet.style and the item template's item_id."""
        if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "style":
            return _complete(argument.value, STYLES)
        if isinstance(ref, ResourceTemplateReference) and ref.uri == ITEM_TEMPLATE and argument.name == "item_id":
            return _complete(argument.value, sorted(ITEMS))
        return None
