"""MRTR tools: elicitation (form and URL), sampling, roots, and odd round shapes.

Most tools here return an `InputRequiredResult` themselves and read the retry's raw
`inputResponses` (see `support.py`), so results echo exactly what the client sent.
Their input-request keys are stable, readable names chosen here (`"profile"`, `"llm"`...).

`two_step` is the exception: it deliberately uses the SDK's `Resolve(...)` + `Elicit(...)`
machinery so the console also sees what a typical `mcp` 2.3.0 server puts on the wire:
keys named after the resolver (`"app.demo.interactive:ask_name"`) and the SDK's own
`requestState` (a JSON record of outcomes, sealed by `RequestStateBoundary`).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    InputRequest,
    InputRequiredResult,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

from app.demo.schemas import COLOR_SCHEMA, LINK_URL, PROFILE_SCHEMA, more_schema
from app.demo.support import (
    ask,
    echo_result,
    form_request,
    is_modern,
    legacy_refusal,
    read_round,
    require_capability,
    roots_request,
    url_request,
)
from app.demo.support import state_only as state_only_result

PROFILE_KEY = "profile"
LINK_KEY = "open_link"
LLM_KEY = "llm"
ROOTS_KEY = "roots"
MULTI_COLOR_KEY = "favorite_color"
MULTI_ROOTS_KEY = "workspace_roots"

DEFAULT_QUESTION = "What is the capital of France?"

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def sampling_request(question: str) -> CreateMessageRequest:
    """The `sampling/createMessage` input request `ask_llm` sends (deprecated feature, still specified)."""
    return CreateMessageRequest(
        params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text=question))],
            system_prompt="You are a terse assistant inside the MCP Console demo. Answer in one sentence.",
            model_preferences=ModelPreferences(
                hints=[ModelHint(name="claude-sonnet"), ModelHint(name="gpt-4o")],
                intelligence_priority=0.7,
                speed_priority=0.5,
                cost_priority=0.3,
            ),
            max_tokens=200,
        )
    )


class NameForm(BaseModel):
    """two_step, round one."""

    name: str = Field(title="Your name", description="Used in the final greeting.", min_length=1)


class ConfirmForm(BaseModel):
    """two_step, round two: a single boolean."""

    confirm: bool = Field(title="Confirm?", description="Tick to confirm, untick to refuse.")


async def ask_name() -> Elicit[NameForm]:
    """No dependencies, so the SDK asks this on the first round."""
    return Elicit("Step 1 of 2: what is your name?", NameForm)


async def ask_confirm(
    name: Annotated[ElicitationResult[NameForm], Resolve(ask_name)],
) -> Elicit[ConfirmForm] | None:
    """Depends on `ask_name`, so the SDK only asks it once the name has been answered.

    Taking the full `ElicitationResult` (not the unwrapped model) lets a declined name end
    the flow with a readable result instead of the SDK's generic "could not resolve" error;
    returning None (a plain value) is accepted by the SDK without asking anything.
    """
    if isinstance(name, AcceptedElicitation):
        return Elicit(f"Step 2 of 2: confirm that you are {name.data.name}?", ConfirmForm)
    return None


async def two_step(
    name: Annotated[ElicitationResult[NameForm], Resolve(ask_name)],
    confirm: Annotated[ElicitationResult[ConfirmForm], Resolve(ask_confirm)],
) -> str:
    """Two input rounds (name, then a confirmation); answers 'hello NAME, confirmed=BOOL'."""
    if not isinstance(name, AcceptedElicitation):
        return f"two_step stopped: the name elicitation was {name.action}"
    if not isinstance(confirm, AcceptedElicitation) or confirm.data is None:
        return f"two_step stopped: the confirmation was {confirm.action}"
    # Lower-case JSON spelling, so the text matches the boolean as it travelled on the wire.
    return f"hello {name.data.name}, confirmed={'true' if confirm.data.confirm else 'false'}"


def register(server: MCPServer) -> None:
    """Register the MRTR tools (hand-rolled ones plus the resolver-driven `two_step`)."""

    @server.tool(title="Profile form (every field kind)", annotations=_READ_ONLY)
    async def profile_form(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Form elicitation using every schema kind; echoes the raw ElicitResult it receives."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("profile_form")
        require_capability(ctx.client_capabilities, "form")
        rnd = read_round(ctx.request_context.params)
        answer = rnd.answer("profile_form", PROFILE_KEY)
        if answer is None:
            request = form_request("Tell us about yourself (every form field kind)", PROFILE_SCHEMA)
            return ask("profile_form", {PROFILE_KEY: request}, rnd.number + 1)
        # The raw object, keys and JSON types exactly as received: accept/decline/cancel alike.
        return echo_result(answer)

    @server.tool(title="URL-mode elicitation", annotations=_READ_ONLY)
    async def open_link(ctx: Context) -> CallToolResult | InputRequiredResult:
        """URL elicitation; 'url accepted' once the user consents, decline/cancel echoed."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("open_link")
        require_capability(ctx.client_capabilities, "url")
        rnd = read_round(ctx.request_context.params)
        answer = rnd.answer("open_link", LINK_KEY)
        if answer is None:
            request = url_request("Open the demo sign-in page to continue (nothing happens there).", LINK_URL)
            return ask("open_link", {LINK_KEY: request}, rnd.number + 1)
        if isinstance(answer, dict) and answer.get("action") == "accept":
            # Accept only means the user agreed to open the URL; the demo treats that as done.
            return CallToolResult(content=[TextContent(text="url accepted")])
        return echo_result(answer)

    @server.tool(title="Sampling request", annotations=_READ_ONLY)
    async def ask_llm(ctx: Context, question: str = DEFAULT_QUESTION) -> CallToolResult | InputRequiredResult:
        """Asks the client's LLM via sampling/createMessage; echoes the CreateMessageResult."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("ask_llm")
        require_capability(ctx.client_capabilities, "sampling")
        rnd = read_round(ctx.request_context.params)
        answer = rnd.answer("ask_llm", LLM_KEY)
        if answer is None:
            return ask("ask_llm", {LLM_KEY: sampling_request(question)}, rnd.number + 1)
        return echo_result(answer)

    @server.tool(title="Roots request", annotations=_READ_ONLY)
    async def list_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks for the client's roots via roots/list; echoes the ListRootsResult."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("list_roots")
        require_capability(ctx.client_capabilities, "roots")
        rnd = read_round(ctx.request_context.params)
        answer = rnd.answer("list_roots", ROOTS_KEY)
        if answer is None:
            return ask("list_roots", {ROOTS_KEY: roots_request()}, rnd.number + 1)
        return echo_result(answer)

    @server.tool(title="Never satisfied", annotations=_READ_ONLY)
    async def always_more(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Answers input_required on every round, forever (tests a client's round cap)."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("always_more")
        require_capability(ctx.client_capabilities, "form")
        rnd = read_round(ctx.request_context.params)
        next_round = rnd.number + 1
        # A fresh key per round, so a client that reuses stale answers is easy to spot.
        key = f"more_{next_round}"
        request = form_request(
            f"Round {next_round}: the server wants more input (it always will).", more_schema(next_round)
        )
        return ask("always_more", {key: request}, next_round)

    @server.tool(title="State-only round", annotations=_READ_ONLY)
    async def state_only(ctx: Context) -> CallToolResult | InputRequiredResult:
        """First answers input_required with only requestState; the retry completes."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("state_only")
        rnd = read_round(ctx.request_context.params)
        if rnd.state is not None and rnd.state.get("tool") == "state_only" and rnd.state.get("phase") == "shed":
            return CallToolResult(content=[TextContent(text="done after state-only round")])
        # No inputRequests at all: the client should simply retry with the state (load shedding).
        return state_only_result("state_only", rnd.number + 1, phase="shed")

    @server.tool(title="Two requests in one round", annotations=_READ_ONLY)
    async def multi_ask(ctx: Context) -> CallToolResult | InputRequiredResult:
        """One round carrying an elicitation AND a roots/list; echoes both responses."""
        if not is_modern(ctx.protocol_version):
            return legacy_refusal("multi_ask")
        require_capability(ctx.client_capabilities, "form", "roots")
        rnd = read_round(ctx.request_context.params)
        color = rnd.answer("multi_ask", MULTI_COLOR_KEY)
        roots = rnd.answer("multi_ask", MULTI_ROOTS_KEY)
        if color is not None and roots is not None:
            return echo_result({MULTI_COLOR_KEY: color, MULTI_ROOTS_KEY: roots})
        # Re-ask only what is still missing; a partial answer keeps the round count moving.
        pending: dict[str, InputRequest] = {}
        if color is None:
            pending[MULTI_COLOR_KEY] = form_request("Pick a colour (asked together with your roots)", COLOR_SCHEMA)
        if roots is None:
            pending[MULTI_ROOTS_KEY] = roots_request()
        return ask("multi_ask", pending, rnd.number + 1)

    # `two_step` lives at module level: the SDK evaluates resolver annotations there.
    server.tool(
        title="Two input rounds (SDK resolvers)",
        annotations=_READ_ONLY,
        # A bare `str` return would otherwise grow a {"result": ...} outputSchema wrapper.
        structured_output=False,
    )(two_step)
