"""A hostile MCP target for the security and fault tests: a hand-written 2026-07-28 server that misbehaves on purpose.

It speaks the wire by hand (raw asyncio sockets for HTTP, lines for stdio) so it can do what no SDK would:
wrong ids, floods, huge frames, broken SSE, stderr storms, HTML in every string. Behaviours are tools, kept
in the `tools_*.py` modules beside this file; each module has `TOOLS: list[Tool]`. A test picks the modules it
wants with `--tools a,b` (default: all) and calls the tools by name. A module named in `--tools` may also
answer other methods (`METHODS: dict[str, handler]`) and add to the discover capabilities (`CAPABILITIES`).

    python -m tests.hostile.target --port 8123          # Streamable HTTP on 127.0.0.1:8123/mcp
    python -m tests.hostile.target --stdio              # stdio

Only ever binds 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import pkgutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOL = "2026-07-28"
HERE = Path(__file__).resolve().parent


@dataclass
class Tool:
    name: str
    run: Callable[[Ctx], Awaitable[None]]
    definition: dict[str, Any] = field(default_factory=dict)  # merged over {"name", "inputSchema"}

    def listed(self) -> dict[str, Any]:
        return {"name": self.name, "inputSchema": {"type": "object"}, **self.definition}


class Ctx:
    """One request being answered. HTTP: the first `event` turns the answer into an SSE stream."""

    def __init__(self, server: Server, message: dict[str, Any], out: Out) -> None:
        self.server = server
        self.message = message
        self.id = message.get("id")
        self.params: dict[str, Any] = message.get("params") or {}
        self.args: dict[str, Any] = self.params.get("arguments") or {}
        self._out = out
        self.cancelled = asyncio.Event()

    @property
    def state(self) -> dict[str, Any]:
        return self.server.state

    @property
    def progress_token(self) -> Any:
        return (self.params.get("_meta") or {}).get("progressToken")

    async def event(self, frame: dict[str, Any] | str) -> None:
        """A frame on the response stream (a dict is encoded; a str goes out exactly as given)."""
        await self._out.event(frame if isinstance(frame, str) else json.dumps(frame))

    async def reply(self, result: dict[str, Any], request_id: Any = ...) -> None:
        rid = self.id if request_id is ... else request_id
        await self._out.final(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}))

    async def reply_text(self, raw: str) -> None:
        """The final answer as exactly this JSON text (a spelling json.dumps would not write)."""
        await self._out.final(raw)

    async def error(self, code: int, message: str) -> None:
        await self._out.final(json.dumps({"jsonrpc": "2.0", "id": self.id,
                                          "error": {"code": code, "message": message}}))

    async def raw_http(self, status: int, body: str, content_type: str = "text/plain",
                       headers: dict[str, str] | None = None) -> None:
        """A whole HTTP answer of our choosing, with any extra `headers` (HTTP only; on stdio the body goes out as a
        line)."""
        await self._out.raw(status, body, content_type, headers)

    async def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": done}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    async def log(self, data: Any, level: str = "info") -> None:
        await self.event({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": level, "logger": "hostile", "data": data}})

    def stderr(self, line: str) -> None:
        sys.stderr.write(line + "\n")

    async def flush_stderr(self) -> None:
        sys.stderr.flush()


class Out:
    """Where one request's answer goes; the transport decides how frames are framed."""

    async def event(self, raw: str) -> None: ...
    async def final(self, raw: str) -> None: ...
    async def raw(self, status: int, body: str, content_type: str, headers: dict[str, str] | None = None) -> None: ...


def complete(content: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"resultType": "complete", "content": content if content is not None else [], **extra}


def text(value: str) -> dict[str, Any]:
    return complete([{"type": "text", "text": value}])


class Server:
    def __init__(self, tools: list[Tool], server_name: str = "hostile") -> None:
        self.tools = {t.name: t for t in tools}
        self.state: dict[str, Any] = {"calls": 0}
        self.server_name = server_name
        self.inflight: dict[Any, Ctx] = {}
        self.methods: dict[str, Callable[[Ctx], Awaitable[None]]] = {}
        self.capabilities: dict[str, Any] = {}

    def discover(self) -> dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": [PROTOCOL],
                "capabilities": {"tools": {"listChanged": False}, "logging": {}, **self.capabilities},
                "ttlMs": 0, "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": self.server_name, "version": "6.6.6"}}}

    async def handle(self, message: dict[str, Any], out: Out) -> bool:
        """Answer one message; False when it was a notification (nothing to answer)."""
        method = message.get("method")
        if "id" not in message:
            if method == "notifications/cancelled":
                ctx = self.inflight.get((message.get("params") or {}).get("requestId"))
                if ctx is not None:
                    ctx.cancelled.set()
            return False
        ctx = Ctx(self, message, out)
        self.inflight[ctx.id] = ctx
        try:
            if method in self.methods:  # a module may answer any method, tools/list included
                await self.methods[str(method)](ctx)
            elif method == "server/discover":
                await ctx.reply(self.discover())
            elif method == "tools/list":
                await ctx.reply({"resultType": "complete", "tools": [t.listed() for t in self.tools.values()]})
            elif method == "tools/call":
                self.state["calls"] += 1
                tool = self.tools.get(str(ctx.params.get("name")))
                if tool is None:
                    await ctx.error(-32602, f"unknown tool {ctx.params.get('name')!r}")
                else:
                    await tool.run(ctx)
            else:
                await ctx.error(-32601, f"method not found: {method}")
        finally:
            self.inflight.pop(ctx.id, None)
        return True


def load_tools(names: list[str] | None) -> list[Tool]:
    tools: list[Tool] = []
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda i: i.name):
        if not info.name.startswith("tools_"):
            continue
        short = info.name.removeprefix("tools_")
        if names and short not in names:
            continue
        module = importlib.import_module(f"tests.hostile.{info.name}")
        tools.extend(module.TOOLS)
    return tools


# --- Streamable HTTP, by hand ------------------------------------------------------------


class HttpOut(Out):
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.w = writer
        self.received = b""  # the request's body exactly as it arrived (tools_wire says it back)
        self.received_head = b""
        self.streaming = False
        self.done = False

    async def _head(self, status: int, content_type: str, length: int | None,
                    headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}", f"Content-Type: {content_type}",
                 "Connection: close", "Cache-Control: no-store", *(f"{k}: {v}" for k, v in (headers or {}).items())]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        self.w.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    async def event(self, raw: str) -> None:
        if not self.streaming:
            self.streaming = True
            await self._head(200, "text/event-stream", None)
        # A raw string that already looks like SSE framing is written as is (for framing faults).
        self.w.write((raw if raw.startswith(("data:", "event:", "id:", ":")) else f"data: {raw}\n\n").encode())
        await self.w.drain()

    async def final(self, raw: str) -> None:
        if self.streaming:
            await self.event(raw)
        else:
            body = raw.encode()
            await self._head(200, "application/json", len(body))
            self.w.write(body)
            await self.w.drain()
        self.done = True

    async def raw(self, status: int, body: str, content_type: str, headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        await self._head(status, content_type, len(data), headers)
        self.w.write(data)
        await self.w.drain()
        self.done = True


async def _read_request(reader: asyncio.StreamReader, out: HttpOut) -> tuple[str, str, dict[str, str], bytes] | None:
    head = out.received_head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = out.received = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    return method, path, headers, body


async def serve_http(server: Server, port: int) -> None:
    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        out = HttpOut(writer)
        try:
            got = await _read_request(reader, out)
            if got is None:
                return
            method, _path, headers, body = got
            # The last request's Mcp-Name, for the modules that check what a client sent (tools_tasks.py).
            server.state["last_mcp_name"] = next((v for k, v in headers.items() if k.lower() == "mcp-name"), None)
            if method != "POST":
                await out.raw(405, "POST only", "text/plain")
                return
            message = json.loads(body)
            # A closed connection is the 2026-07-28 HTTP cancel: watch for it while the tool runs.
            task = asyncio.ensure_future(server.handle(message, out))
            eof = asyncio.ensure_future(reader.read(1))
            await asyncio.wait({task, eof}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                ctx = server.inflight.get(message.get("id"))
                if ctx is not None:
                    ctx.cancelled.set()
                task.cancel()
            else:
                eof.cancel()
                answered = task.result()
                if not answered and not out.done:
                    await out.raw(202, "", "application/json")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    listener = await asyncio.start_server(client, "127.0.0.1", port)
    print(f"hostile target listening on http://127.0.0.1:{port}/mcp", flush=True)
    async with listener:
        await listener.serve_forever()


# --- stdio -------------------------------------------------------------------------------


class StdioOut(Out):
    lock = asyncio.Lock()

    def __init__(self, received: bytes = b"") -> None:
        self.received = received  # the request's line exactly as it arrived (tools_wire says it back)
        self.received_head = b""

    async def _line(self, raw: str) -> None:
        async with self.lock:
            sys.stdout.write(raw.replace("\n", " ") + "\n")
            sys.stdout.flush()

    async def event(self, raw: str) -> None:
        await self._line(raw)

    async def final(self, raw: str) -> None:
        await self._line(raw)

    async def raw(self, status: int, body: str, content_type: str, headers: dict[str, str] | None = None) -> None:
        await self._line(body)


async def serve_stdio(server: Server) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks: set[asyncio.Task[bool]] = set()
    while line := await reader.readline():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        task = asyncio.ensure_future(server.handle(message, StdioOut(line.rstrip(b"\n"))))
        tasks.add(task)
        task.add_done_callback(tasks.discard)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--tools", default="", help="comma-separated tools_* modules to load (default: all)")
    parser.add_argument("--name", default="hostile", help="serverInfo name (may itself be hostile)")
    args = parser.parse_args(argv)
    named = [n for n in args.tools.split(",") if n]
    server = Server(load_tools(named or None), args.name)
    for short in named:  # only modules asked for by name change the methods and capabilities
        module = importlib.import_module(f"tests.hostile.tools_{short}")
        server.methods.update(getattr(module, "METHODS", {}))
        server.capabilities.update(getattr(module, "CAPABILITIES", {}))
    asyncio.run(serve_stdio(server) if args.stdio else serve_http(server, args.port))


if __name__ == "__main__":
    main()
