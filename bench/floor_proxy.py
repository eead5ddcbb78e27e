"""The least a Python console could do per call: a bare ASGI app that forwards one JSON-RPC POST and answers JSON.

Run by `bench.latency_floor` as its own process, on the same parts the console runs on (uvicorn with httptools and
uvloop; the console's lean HTTP/1.1 client to the target, one keep-alive connection). It reads the form body,
sends the request the console would send (body and headers given on the command line, a fresh id each time),
reads the whole answer (JSON or an SSE stream's last `data:`), and answers `{"ok": true, "result": …}`. It
records nothing, checks nothing and parses no form fields: it is a floor for the console, not a console.

    python -m bench.floor_proxy TARGET_URL HEADERS_JSON BODY_JSON PORT
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from app.mcp.lean_http import LeanPool

TIMEOUT = httpx.Timeout(30.0)


Forward = Callable[[Receive, Send], Awaitable[None]]


def forwarder(target: str, headers: dict[str, str], body: dict[str, Any]) -> Forward:
    """Read one request's body, send the fixed call to the target, answer its result: the floor's whole work.

    Also what `bench/door_floor.py` runs behind the console's own front door."""
    url = urlsplit(target)
    origin = (url.hostname or "127.0.0.1", url.port or 80)
    pool = LeanPool(10, 10, 30.0)
    ids = itertools.count(10_000_000)
    fixed = f"POST {url.path or '/'} HTTP/1.1\r\nHost: {url.netloc}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items())

    async def forward(receive: Receive, send: Send) -> None:
        more = True
        while more:  # the form itself is not read: the floor forwards one fixed call
            message = await receive()
            more = bool(message.get("more_body"))
        payload = json.dumps({**body, "id": next(ids)}, separators=(",", ":")).encode()
        head = (fixed + f"Content-Length: {len(payload)}\r\n\r\n").encode()
        answer = await pool.request(origin, head, payload, TIMEOUT)
        text = b"".join([piece async for piece in answer.aiter_bytes()]).decode()
        if text.lstrip().startswith("{"):
            reply = json.loads(text)
        else:
            reply = json.loads([line[5:] for line in text.splitlines() if line.startswith("data:")][-1])
        out = json.dumps({"ok": True, "result": reply.get("result")}, separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    return forward


def make_app(target: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    forward = forwarder(target, headers, body)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await forward(receive, send)

    return app


def main() -> None:
    target, headers, body, port = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)  # bound and listening before the line is printed: a caller may connect at once
    print(f"floor proxy listening on http://127.0.0.1:{port}", flush=True)
    config = uvicorn.Config(make_app(target, headers, body), http="httptools", loop="uvloop", log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
