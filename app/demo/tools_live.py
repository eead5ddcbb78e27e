"""Tools that stream or change server state: progress, cancellation, list/resource changes.

Progress and cancellation ride the request's own response stream (SSE on HTTP, the shared
channel on stdio); list_changed / resources/updated go to `subscriptions/listen` streams
through the SDK's subscription bus. All of them are what a console's live views consume.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from app.demo.support import DemoState

COUNTER_URI = "demo://counter"

# Spec guidance for tool names (1-128 chars of [A-Za-z0-9_.-]); the SDK only warns.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

# Granularity of long_job's sleep: small enough that cancellation lands promptly.
_JOB_STEP_S = 0.1
# Report progress every this many steps, so a 30 s job sends ~60 notifications, not 300.
_JOB_REPORT_EVERY = 5


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _runtime_tool(tool_name: str) -> Callable[[], Awaitable[str]]:
    """A fresh coroutine function per added tool; the closure keeps its own name."""

    async def runtime_tool() -> str:
        return f"hello from runtime tool {tool_name}"

    return runtime_tool


def register(server: MCPServer, state: DemoState) -> None:
    """Register the streaming / state-changing tools on `server`."""

    @server.tool(title="Progress burst", annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    async def progress_fast(
        ctx: Context,
        count: Annotated[int, Field(ge=0, le=100_000)] = 500,
        stamp: Annotated[bool, Field(description="put the server's send time in each message")] = False,
        per_second: Annotated[float, Field(ge=0, le=1_000_000, description="pace; 0 = as fast as possible")] = 0,
    ) -> str:
        """Sends `count` progress notifications back to back (needs a progressToken)."""
        # By default no sleeps: this is the flood test for a client's progress rendering.
        # `stamp` is for bench/progress_latency.py: "t=<unix time> i=<n>" lets a browser measure delay;
        # `per_second` paces the sending against a schedule (no drift), for a steady-rate measurement.
        start = time.monotonic()
        for i in range(1, count + 1):
            if per_second:
                delay = start + i / per_second - time.monotonic()
                if delay > 0:
                    await anyio.sleep(delay)
            message = f"t={time.time():.6f} i={i}" if stamp else f"fast {i}/{count}"
            await ctx.report_progress(i, count, message)
        return f"sent {count}"

    @server.tool(title="Slow progress", annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    async def progress_slow(
        ctx: Context,
        steps: Annotated[int, Field(ge=0, le=10_000)] = 5,
        delay_s: Annotated[float, Field(ge=0, le=60)] = 0.3,
    ) -> str:
        """Reports progress with a message each step, sleeping `delay_s` between steps."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
            if i < steps:
                await anyio.sleep(delay_s)
        return f"completed {steps} steps"

    @server.tool(
        title="Long cancellable job", annotations=ToolAnnotations(read_only_hint=True), structured_output=False
    )
    async def long_job(ctx: Context, seconds: Annotated[float, Field(ge=0, le=3600)] = 30) -> str:
        """Sleeps in small steps with progress; records and logs it if cancelled."""
        job_id = uuid.uuid4().hex[:12]
        started = time.monotonic()
        steps = max(1, math.ceil(seconds / _JOB_STEP_S))
        try:
            for i in range(1, steps + 1):
                await anyio.sleep(_JOB_STEP_S)
                if i % _JOB_REPORT_EVERY == 0 or i == steps:
                    done = min(seconds, i * _JOB_STEP_S)
                    await ctx.report_progress(round(done, 3), seconds, f"working: {done:.1f}s of {seconds:g}s")
        except anyio.get_cancelled_exc_class():
            # HTTP: the client closed the response stream; stdio: notifications/cancelled.
            # Only synchronous work here - any await inside a cancelled scope re-raises.
            state.cancellations.append(
                {
                    "job_id": job_id,
                    "request_id": ctx.request_id,
                    "cancelled_at": _now_iso(),
                    "elapsed_s": round(time.monotonic() - started, 3),
                    "planned_s": seconds,
                }
            )
            print(f"long_job cancelled job={job_id} request={ctx.request_id}", file=sys.stderr, flush=True)
            raise
        return f"long_job {job_id} finished after {seconds:g}s"

    @server.tool(title="Seen cancellations", annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    async def cancellations() -> str:
        """The long_job cancellations this process has observed, as a JSON array."""
        return json.dumps(state.cancellations)

    @server.tool(
        title="Add a tool at runtime",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
    )
    async def add_tool(ctx: Context, name: str) -> CallToolResult:
        """Registers a trivial tool called `name` and publishes tools/list_changed."""
        if not _TOOL_NAME.fullmatch(name):
            return CallToolResult(
                content=[TextContent(text=f"invalid tool name {name!r}: use 1-128 of [A-Za-z0-9_.-]")],
                is_error=True,
            )
        existing = {tool.name for tool in await server.list_tools()}
        if name in existing:
            return CallToolResult(content=[TextContent(text=f"tool {name!r} already exists")], is_error=True)
        server.add_tool(
            _runtime_tool(name),
            name=name,
            description=f"Added at runtime by add_tool({name!r}).",
            structured_output=False,
        )
        state.runtime_tools.append(name)
        # Delivered only to subscriptions/listen streams that asked for toolsListChanged.
        await ctx.notify_tools_changed()
        return CallToolResult(content=[TextContent(text=f"added tool {name!r}; published tools/list_changed")])

    @server.tool(
        title="Bump a resource",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False),
        structured_output=False,
    )
    async def touch_resource(ctx: Context, uri: str = COUNTER_URI) -> str:
        """Increments the counter behind `uri` (demo://counter) and publishes resources/updated."""
        value = state.counters.get(uri, 0) + 1
        state.counters[uri] = value
        # Exact-string match against each listen stream's resourceSubscriptions.
        await ctx.notify_resource_updated(uri)
        return f"{uri} touched; counter={value}"
