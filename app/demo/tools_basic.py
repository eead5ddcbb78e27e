"""Single-round tools: plain and structured results, media, errors, headers, logs, escaping.

These return immediately (no MRTR), so they are the baseline a console must render:
text, structuredContent validated against an outputSchema, image/audio/resource blocks,
isError results, an `x-mcp-header` parameter, per-request log notifications, and text
that must never be interpreted as HTML.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    LOG_LEVEL_META_KEY,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    LoggingLevel,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from app.demo.support import b64, tiny_png, tiny_wav

# Logging is deprecated in 2026-07-28 (SEP-2577) and the SDK warns on every log call; the
# demo logs on purpose, so keep stderr readable. Scoped to warnings raised from app.demo.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=r"app\.demo(\.|$)")

HTML_TRAP = "Escaping check: <script>alert(1)</script><img src=x onerror=alert(2)> <b>not bold</b> &amp; done"

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

# The scope each tool needs beyond the server's own when the demo runs protected (--oauth-issuer): the one tool that
# changes something asks for `mcp:write`, so a token with only `mcp:read` meets a step-up (403 insufficient_scope).
TOOL_SCOPES = {"write_note": "mcp:write"}
MAX_NOTES = 100


class SumOutput(TypedDict):
    """outputSchema of `add`."""

    sum: int


class WeatherReport(BaseModel):
    """outputSchema of `weather`."""

    temperature_c: float = Field(description="Air temperature in degrees Celsius.")
    conditions: str = Field(description="Short human-readable summary.")


_CONDITIONS = ("sunny", "cloudy", "light rain", "fog", "snow", "thunderstorms")


def fake_weather(city: str) -> WeatherReport:
    """Deterministic per city, so tests and screenshots are stable."""
    digest = hashlib.sha256(city.strip().lower().encode()).digest()
    temperature = round(-10 + (digest[0] / 255) * 45, 1)
    return WeatherReport(temperature_c=temperature, conditions=_CONDITIONS[digest[1] % len(_CONDITIONS)])


def register(server: MCPServer, protected: bool = False) -> None:
    """Register the single-round tools on `server`."""

    # structured_output=False on str-returning tools: otherwise the SDK wraps the string
    # in a {"result": ...} outputSchema, which would muddy "text in, same text out".
    @server.tool(annotations=_READ_ONLY, structured_output=False)
    async def echo(text: str) -> str:
        """Returns the given text unchanged."""
        return text

    @server.tool(title="Add two integers", annotations=_READ_ONLY)
    async def add(a: int, b: int) -> Annotated[CallToolResult, SumOutput]:
        """Adds a and b: the text is the bare sum, structuredContent is {"sum": n}."""
        # Annotated[CallToolResult, SumOutput] publishes SumOutput as the outputSchema and
        # has the SDK validate our structuredContent against it, while the text block
        # stays the bare number instead of the SDK's JSON dump.
        total = a + b
        return CallToolResult(content=[TextContent(text=str(total))], structured_content={"sum": total})

    @server.tool(title="Weather (structured)", annotations=_READ_ONLY)
    async def weather(city: str) -> WeatherReport:
        """Made-up but deterministic weather for a city, as structured output plus JSON text."""
        return fake_weather(city)

    @server.tool(title="Media blocks", annotations=_READ_ONLY)
    async def media() -> CallToolResult:
        """An image, an audio clip, a resource link and an embedded text resource."""
        return CallToolResult(
            content=[
                TextContent(text="Four non-text content blocks follow."),
                ImageContent(data=b64(tiny_png()), mime_type="image/png"),
                AudioContent(data=b64(tiny_wav()), mime_type="audio/wav"),
                ResourceLink(
                    uri="demo://readme",
                    name="readme",
                    title="Demo README",
                    description="Link to a resource this server lists.",
                    mime_type="text/markdown",
                ),
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri="demo://inline/note.txt",
                        mime_type="text/plain",
                        text="An embedded text resource, delivered inline with the tool result.",
                    )
                ),
            ]
        )

    @server.tool(title="Always fails", annotations=_READ_ONLY)
    async def fail(message: str = "something broke") -> CallToolResult:
        """Returns a tool-level error (isError: true), not a JSON-RPC error."""
        return CallToolResult(content=[TextContent(text=message)], is_error=True)

    @server.tool(title="Regional query (x-mcp-header)", annotations=_READ_ONLY, structured_output=False)
    async def regional(
        ctx: Context,
        region: Annotated[
            str,
            Field(
                description="Region code; clients must mirror it in the Mcp-Param-Region header.",
                json_schema_extra={"x-mcp-header": "Region"},
            ),
        ],
        query: str,
    ) -> str:
        """Shows the x-mcp-header mechanism: the SDK rejects a missing/mismatched header (-32020)."""
        headers = ctx.headers
        # On HTTP the SDK has already checked the header against the body; report what arrived.
        seen = headers.get("mcp-param-region") if headers is not None else None
        transport = "stdio (no headers)" if headers is None else f"Mcp-Param-Region header: {seen!r}"
        return f"region={region} query={query!r} [{transport}]"

    @server.tool(title="Log notifications", annotations=_READ_ONLY, structured_output=False)
    async def log_demo(ctx: Context, count: Annotated[int, Field(ge=0, le=1000)] = 3) -> str:
        """Sends `count` notifications/message at rising levels; needs _meta logLevel opt-in."""
        meta = ctx.request_context.meta or {}
        requested = meta.get(LOG_LEVEL_META_KEY)
        for i in range(count):
            level = LOG_LEVELS[i % len(LOG_LEVELS)]
            # The SDK drops entries below the requested level, and everything when the
            # request did not opt in (spec: the server MUST NOT log without the key).
            # Straight to the session (what ctx.log wraps) so the SDK's deprecation warning is
            # raised from this module, where the filter above silences it, and only once.
            await ctx.session.send_log_message(
                level,
                {"line": i + 1, "of": count, "level": level},
                logger="demo.log_demo",
                related_request_id=ctx.request_id,
            )
        opted = f"requested level {requested!r}" if requested else "no logLevel in _meta, so none were delivered"
        return f"emitted {count} log lines ({opted})"

    if protected:
        _register_write_note(server)

    @server.tool(title="HTML escaping trap", annotations=_READ_ONLY, structured_output=False)
    async def html_trap() -> str:
        """Returns text full of HTML that a console must display literally."""
        return HTML_TRAP


def _register_write_note(server: MCPServer) -> None:
    """The protected demo's step-up tool: its call needs the mcp:write scope (app/demo/protect.py, TOOL_SCOPES)."""
    notes: list[str] = []

    @server.tool(title="Write a note", annotations=_WRITES, structured_output=False)
    async def write_note(text: Annotated[str, Field(max_length=1000)]) -> str:
        """Keeps a short note in this server's memory (the last 100); needs the mcp:write scope."""
        notes.append(text)
        del notes[:-MAX_NOTES]
        return f"note saved ({len(notes)} kept): {text}"
