"""Attack: the action POSTs' one-step path (app/web/front_door.py) against a console served by uvicorn, with raw
requests httpx would not send: odd Host values, hostile targets' answers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tests.integration.conftest import OWNER_COOKIE, TOKEN

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    Serve = Callable[..., Awaitable[Served]]

FORM = b"tool=echo&arg.text=front"
DEADLINE_S = 15.0


async def _raw(served: Served, request: bytes) -> bytes:
    """One request on its own connection (it says Connection: close); everything the console answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(DEADLINE_S):
            return await reader.read(-1)
    finally:
        writer.close()


def _post(path: str, host: bytes, *extra: bytes) -> bytes:
    head = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: " + host, *extra,
            b"Accept: application/json", b"Content-Type: application/x-www-form-urlencoded",
            b"Content-Length: " + str(len(FORM)).encode(), b"Connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + FORM


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


async def _session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def test_a_host_whose_port_is_a_digit_but_not_a_number_is_answered_not_a_crash(
        make_console: Callable[..., Console], serve: Serve, demo_url: str) -> None:
    # "²" (latin-1 \xb2) is a digit to str.isdigit() and not a number to int(): the guard's port reading raised,
    # a 500 for the action POSTs, a page or a websocket alike, from a header any client may send.
    console = make_console()
    served = await serve(console)
    sid = await _session(console, demo_url)
    path = f"/sessions/{sid}/tools/call"
    for port in (b"\xb2", b"\xb9\xb2", b"1\xb3"):
        host = console.public_host.encode() + b":" + port
        bearer = await _raw(served, _post(path, host, f"Authorization: Bearer {TOKEN}".encode()))
        assert _status(bearer) == 200, bearer[:300]
        # Its port is not the console's: not the public host, so the owner's cookie is not honoured there.
        cookie = await _raw(served, _post(path, host, f"Cookie: {OWNER_COOKIE}={TOKEN}".encode()))
        assert _status(cookie) == 401, cookie[:300]
        page = await _raw(served, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nAuthorization: Bearer " +
                          TOKEN.encode() + b"\r\nConnection: close\r\n\r\n")
        assert _status(page) < 500, page[:300]
