"""The least any Python hop could do: a forwarder on bare asyncio Protocols, no ASGI server, no tasks.

The request is parsed by httptools in the connection's callback; the upstream request is written in that same
callback to one kept-alive connection to the target; the target's answer is parsed in its callback and the answer
written in that one. Nothing is checked, recorded or awaited.

    python -m bench.raw_floor TARGET_URL HEADERS_JSON BODY_JSON PORT
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import sys
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import httptools
import orjson
import uvloop


class Upstream(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[Any] = deque()
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.ctype = b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"content-type":
            self.ctype = value

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        text = b"".join(self.body)
        self.body = []
        done = self.waiting.popleft()
        if text.lstrip().startswith(b"{"):
            reply = orjson.loads(text)
        else:
            reply = orjson.loads([ln[5:] for ln in text.splitlines() if ln.startswith(b"data:")][-1])
        done(reply)


class Front(asyncio.Protocol):
    def __init__(self, up: Upstream, fixed: bytes, body: dict[str, Any], ids: Any) -> None:
        self.up, self.fixed, self.tmpl, self.ids = up, fixed, body, ids
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_message_complete(self) -> None:
        payload = orjson.dumps({**self.tmpl, "id": next(self.ids)})
        assert self.up.transport is not None
        self.up.transport.write(self.fixed + b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
        self.up.waiting.append(self.answer)

    def answer(self, reply: dict[str, Any]) -> None:
        out = orjson.dumps({"ok": True, "result": reply.get("result")})
        assert self.transport is not None
        self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                             % len(out) + out)


async def serve(target: str, headers: dict[str, str], body: dict[str, Any], port: int) -> None:
    url = urlsplit(target)
    loop = asyncio.get_running_loop()
    _, up = await loop.create_connection(Upstream, url.hostname or "127.0.0.1", url.port or 80)
    fixed = (f"POST {url.path or '/'} HTTP/1.1\r\nHost: {url.netloc}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items())).encode()
    ids = itertools.count(20_000_000)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    server = await loop.create_server(lambda: Front(up, fixed, body, ids), sock=sock)
    print(f"floor proxy listening on http://127.0.0.1:{port}", flush=True)
    await server.serve_forever()


def main() -> None:
    uvloop.run(serve(sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])))


if __name__ == "__main__":
    main()
