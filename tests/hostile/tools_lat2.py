"""Wire shapes the console's upstream client (httpx, app/mcp/netstream.py) must read exactly: chunked SSE split
inside a character and inside an event, a gzip-encoded answer, an interim 103 before the answer, a keep-alive
answer followed by bytes nobody asked for (or by a whole second answer, in the same write), and headers that
never end. Each writes the HTTP answer byte by byte itself, on the connection the target's HTTP server gives the
request."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

from tests.hostile.target import Ctx, Tool


def _writer(ctx: Ctx) -> asyncio.StreamWriter:
    out: Any = ctx._out  # the HTTP answer's writer: these tools frame the answer themselves
    out.done = True
    writer: asyncio.StreamWriter = out.w
    return writer


def _answer(ctx: Ctx, value: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ctx.id,
                       "result": {"resultType": "complete", "content": [{"type": "text", "text": value}]}},
                      ensure_ascii=False).encode()  # the characters themselves on the wire, to cut one in two


async def chunked_sse(ctx: Ctx) -> None:
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "caf\u00e9 \u2713"}}, ensure_ascii=False).encode()
    stream = b"data: " + progress + b"\n\n" + b"data: " + _answer(ctx, "chunked \u2713") + b"\n\n"
    cut = stream.index("\u2713".encode()) + 1  # inside a three-byte character
    for piece in (stream[:7], stream[7:cut], stream[cut:]):
        w.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await w.drain()
        await asyncio.sleep(0.01)
    w.write(b"0\r\n\r\n")
    await w.drain()


async def gzip_json(ctx: Ctx) -> None:
    body = gzip.compress(_answer(ctx, "unzipped"))
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    await w.drain()


async def early_hints(ctx: Ctx) -> None:
    body = _answer(ctx, "after a 103")
    w = _writer(ctx)
    w.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n")
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body))
    await w.drain()


async def keepalive_then_junk(ctx: Ctx) -> None:
    body = _answer(ctx, "junk follows")
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
            b"Content-Length: %d\r\n\r\n%sHTTP/1.1 200 OK\r\n\r\n" % (len(body), body))
    await w.drain()
    await asyncio.sleep(0.2)  # the connection stays open a moment: a client must not take it for a clean one


async def pipelined_error(ctx: Ctx) -> None:
    body = _answer(ctx, "asked for")
    unasked = json.dumps({"jsonrpc": "2.0", "id": ctx.id, "error": {"code": -32603, "message": "unasked"}}).encode()
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            b"HTTP/1.1 500 Unasked\r\nContent-Type: application/json\r\nX-Unasked: 1\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body, len(unasked), unasked))
    await w.drain()


async def endless_headers(ctx: Ctx) -> None:
    w = _writer(ctx)
    w.write(b"HTTP/1.1 200 OK\r\n")
    for i in range(20_000):
        if ctx.cancelled.is_set():
            return
        w.write(b"X-Pad-%d: %s\r\n" % (i, b"a" * 60))
        await w.drain()


TOOLS = [Tool("chunked_sse", chunked_sse), Tool("gzip_json", gzip_json), Tool("early_hints", early_hints),
         Tool("keepalive_then_junk", keepalive_then_junk), Tool("endless_headers", endless_headers),
         Tool("pipelined_error", pipelined_error)]
