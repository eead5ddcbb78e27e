"""Answers that start and never end, each framed by hand on the request's own connection: the head and no body,
a body shorter than its Content-Length and then silence (or a close), a body dripped a byte at a time, an event
stream that goes quiet after one event. Each waits until the console gives the request up (it closes the
connection), but the one that closes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.hostile.target import Ctx, Tool

DRIP_S = 0.05


def _writer(ctx: Ctx) -> asyncio.StreamWriter:
    out: Any = ctx._out
    out.done = True
    writer: asyncio.StreamWriter = out.w
    return writer


def _answer(ctx: Ctx, value: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ctx.id,
                       "result": {"resultType": "complete", "content": [{"type": "text", "text": value}]}}).encode()


async def _until_given_up(ctx: Ctx) -> None:
    await ctx.cancelled.wait()


async def head_only(ctx: Ctx) -> None:
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    await w.drain()
    await _until_given_up(ctx)


async def _short(ctx: Ctx) -> asyncio.StreamWriter:
    """The head of a 200-character answer and its first 40 bytes."""
    body = _answer(ctx, "x" * 200)
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body[:40]))
    await w.drain()
    return w


async def short_body(ctx: Ctx) -> None:
    await _short(ctx)
    await _until_given_up(ctx)


async def short_then_close(ctx: Ctx) -> None:
    (await _short(ctx)).close()


async def drip(ctx: Ctx) -> None:
    body = _answer(ctx, "y" * 100_000)
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    await w.drain()
    for i in range(len(body)):
        if ctx.cancelled.is_set():
            return
        w.write(body[i:i + 1])
        await w.drain()
        await asyncio.sleep(DRIP_S)


async def sse_then_silence(ctx: Ctx) -> None:
    await ctx.log("one event, then nothing")
    await _until_given_up(ctx)


TOOLS = [Tool("head_only", head_only), Tool("short_body", short_body), Tool("drip", drip),
         Tool("short_then_close", short_then_close), Tool("sse_then_silence", sse_then_silence)]


async def sse_cut_inside_an_event(ctx: Ctx) -> None:
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    w.write(b"data: " + _answer(ctx, "z" * 200)[:50])  # half an event: no line end, no blank line
    await w.drain()
    if ctx.args.get("close"):
        w.close()
        return
    await _until_given_up(ctx)


TOOLS.append(Tool("sse_cut_inside_an_event", sse_cut_inside_an_event))
