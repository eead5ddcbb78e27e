"""Fault behaviours: slow but alive, silent, endlessly chatty, answering with the wrong id, failing with
HTTP 500 after good calls, and printing to stdout (stdio) while a request waits."""

from __future__ import annotations

import asyncio

from tests.hostile.target import Ctx, Tool, text

NUMBER = {"type": "number"}


async def fine(ctx: Ctx) -> None:
    await ctx.reply(text("fine"))


async def progress_every(ctx: Ctx) -> None:
    """Progress every `interval` s for `duration` s, then the answer: slow, and alive all along."""
    interval, duration = float(ctx.args.get("interval", 0.3)), float(ctx.args.get("duration", 3))
    loop = asyncio.get_running_loop()
    end, n = loop.time() + duration, 0
    while loop.time() < end:
        n += 1
        await ctx.progress(n, message=f"step {n}")
        await asyncio.sleep(interval)
    await ctx.reply(text(f"done after {n} steps"))


async def silent(ctx: Ctx) -> None:
    """One progress, then nothing at all until cancelled."""
    await ctx.progress(1, message="started")
    await ctx.cancelled.wait()


async def chatty(ctx: Ctx) -> None:
    """Progress every 0.2 s, forever: never idle, never done."""
    n = 0
    while not ctx.cancelled.is_set():
        n += 1
        await ctx.progress(n)
        await asyncio.sleep(0.2)


async def wrong_id(ctx: Ctx) -> None:
    """Answers with id + 1000 (request 12 gets a response for 1012)."""
    rid = ctx.id + 1000 if isinstance(ctx.id, int) else f"{ctx.id}-other"
    await ctx.reply(text("an answer to somebody else"), request_id=rid)


async def http_500(ctx: Ctx) -> None:
    await ctx.raw_http(500, "<html><body>database on fire\n  (trace id 42)</body></html>", "text/html")


async def stdout_noise(ctx: Ctx) -> None:
    """On stdio: a print() on stdout while the request waits, then the answer."""
    await ctx.raw_http(200, "hello from print()")
    await asyncio.sleep(0.2)
    await ctx.reply(text("answered after the noise"))


TOOLS = [
    Tool("fine", fine, {"description": "Answers at once."}),
    Tool("progress_every", progress_every, {"inputSchema": {"type": "object", "properties": {
        "interval": NUMBER, "duration": NUMBER}}}),
    Tool("silent", silent),
    Tool("chatty", chatty),
    Tool("wrong_id", wrong_id),
    Tool("http_500", http_500),
    Tool("stdout_noise", stdout_noise),
]
