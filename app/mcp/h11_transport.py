"""The network layer under the console's one httpx client: HTTP/1.1 by h11 over asyncio streams, any scheme.

httpx builds every request (its headers, their order and case, the body) and reads every answer; this is its
transport seam, below that. httpcore's pool sat here before, and under `bench.latency` it was a third of the
client's time per call: anyio locks, shielded cancel scopes and async-library detection around each request, for
a pool that is one list per origin. Here the same HTTP/1.1 (h11, as httpcore speaks it) runs over the asyncio
streams of app/mcp/netstream.py, with TLS for https:// on the same connection (ALPN http/1.1), so a target
answers the same bytes whatever its scheme.

- One idle list per origin, at most `max_connections` requests in flight per origin (a target holding its
  streams open cannot starve another's), each waiting `pool` seconds for a slot (httpx.PoolTimeout); at most
  `max_keepalive_connections` idle in all, and those past `keepalive_expiry` closed whichever origin is called.
- A connection goes back to its list only when its answer was read to the end with nothing after it; bytes a
  server sent after its answer retire it and are counted (`extensions["leftover_bytes"]`, said on the record).
- An idle connection the peer closed, or sent anything on, is dropped before reuse; so is one idle past
  `keepalive_expiry`.
- Errors are httpx's own (ConnectError, ReadTimeout, RemoteProtocolError, ...): callers see what they saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpcore
import httpx

from app.mcp.netstream import AsyncioBackend, AsyncioStream

READ_SIZE = 64 * 1024
MAX_HEAD_BYTES = 64 * 1024  # h11's own bound on an answer's head, as httpcore leaves it
SWEEP_S = 1.0  # idle connections past their expiry are looked for at most this often
Origin = tuple[str, str, int]

_MAPPED: tuple[tuple[type[Exception], type[httpx.RequestError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError), (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError), (h11.RemoteProtocolError, httpx.RemoteProtocolError),
    (h11.LocalProtocolError, httpx.LocalProtocolError),
)


def _mapped(exc: Exception, request: httpx.Request) -> Exception:
    for theirs, ours in _MAPPED:
        if isinstance(exc, theirs):
            return ours(str(exc) or type(exc).__name__, request=request)
    return exc


class _Connection:
    def __init__(self, stream: AsyncioStream, origin: Origin) -> None:
        self.stream = stream
        self.origin = origin
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.idle_since = time.monotonic()

    def reusable(self, expiry: float | None) -> bool:
        if self.stream.get_extra_info("is_readable"):  # the peer closed it, or sent something unasked
            return False
        return expiry is None or time.monotonic() - self.idle_since < expiry

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self.stream.read(READ_SIZE, timeout)
            if not data and self.h11.their_state is h11.SEND_RESPONSE and self.h11.our_state is not h11.SEND_BODY:
                # h11's own words for this are about its state machine ("can't handle event type ...")
                raise h11.RemoteProtocolError("the server closed the connection without an answer")
            self.h11.receive_data(data)

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # closing what broke: nothing more to say
            await self.stream.aclose()


class _Body(httpx.AsyncByteStream):
    """An answer's body, read event by event; the connection goes back to the pool only when it may."""

    def __init__(self, pool: H11Transport, conn: _Connection, request: httpx.Request, timeout: float | None) -> None:
        self._pool, self._conn, self._request, self._timeout = pool, conn, request, timeout
        self.extensions: dict[str, Any] = {}
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        pieces: list[bytes] = []
        try:
            while True:
                event = conn.h11.next_event()
                if event is h11.NEED_DATA:
                    # Everything parsed from what was read goes up as one piece: a flood of one HTTP chunk per SSE
                    # event (thousands a second) paid httpx's stream layers and the reader's wake-up per chunk.
                    if pieces:
                        yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
                        pieces = []
                    conn.h11.receive_data(await conn.stream.read(READ_SIZE, self._timeout))
                elif isinstance(event, h11.Data):
                    pieces.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
            if pieces:
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
        except Exception as exc:
            await self._finish(reuse=False)
            raise _mapped(exc, self._request) from exc
        leftover = len(conn.h11.trailing_data[0])
        if leftover:
            self.extensions["leftover_bytes"] = leftover
        await self._finish(reuse=not leftover and conn.h11.our_state is h11.DONE
                           and conn.h11.their_state is h11.DONE)

    async def _finish(self, reuse: bool) -> None:
        if self._done:
            return
        self._done = True
        await self._pool.release(self._conn, reuse)

    async def aclose(self) -> None:
        await self._finish(reuse=False)  # closed before its end (a cancel): the connection goes with it


class H11Transport(httpx.AsyncBaseTransport):
    def __init__(self, limits: httpx.Limits, verify: ssl.SSLContext | bool = True) -> None:
        self._max = limits.max_connections
        self._keep = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._ssl = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify=verify)
        self._ssl.set_alpn_protocols(["http/1.1"])
        self._backend = AsyncioBackend()
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._slots: dict[Origin, asyncio.Semaphore] = {}
        self._open: set[_Connection] = set()
        self._idle_count = 0  # idle connections of every origin: max_keepalive_connections bounds the whole pool
        self._busy: dict[Origin, int] = {}  # requests in flight or waiting for a slot, per origin
        self._swept = 0.0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"no transport for {url.scheme!r} URLs", request=request)
        if "transfer-encoding" in request.headers and "content-length" in request.headers:
            # A Transfer-Encoding typed among the target's headers, beside the length httpx gives the body: two
            # framings of one body (RFC 9112 forbids it; a request-smuggling shape). Refused, never sent.
            raise httpx.LocalProtocolError(
                "a Transfer-Encoding header beside the body's Content-Length: remove Transfer-Encoding from the "
                "target's headers (the console frames the body itself)", request=request)
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        slots = self._slots.setdefault(origin, asyncio.Semaphore(self._max or 1_000_000))
        # asyncio.timeout, not wait_for: Python 3.11's wait_for drops a cancel that lands in the turn the slot is
        # granted (bpo-42130), and the request then ran on with no deadline, past its Stop, holding a slot.
        self._busy[origin] = self._busy.get(origin, 0) + 1  # in flight or waiting: its semaphore is kept
        try:
            async with asyncio.timeout(timeouts.get("pool")):
                await slots.acquire()
        except BaseException as exc:
            self._not_busy(origin)
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("no connection slot came free in time", request=request) from exc
            raise
        conn: _Connection | None = None
        try:
            conn = await self._connection(origin, timeouts.get("connect"))
            content = await request.aread()
            head = conn.h11.send(h11.Request(method=request.method, target=url.raw_path,
                                             headers=request.headers.raw))
            body = conn.h11.send(h11.Data(data=content)) if content else b""
            await conn.stream.write((head or b"") + (body or b"") + (conn.h11.send(h11.EndOfMessage()) or b""),
                                    timeouts.get("write"))
            event = await conn.next_event(timeouts.get("read"))
            while isinstance(event, h11.InformationalResponse):  # 1xx: skipped, as httpcore does
                event = await conn.next_event(timeouts.get("read"))
            if not isinstance(event, h11.Response):
                raise httpx.RemoteProtocolError("the server closed the connection without an answer",
                                                request=request)
        except BaseException as exc:
            if conn is not None:
                self._open.discard(conn)
                await conn.close()
            slots.release()
            self._not_busy(origin)
            mapped = _mapped(exc, request) if isinstance(exc, Exception) else exc
            if mapped is not exc:
                raise mapped from exc
            raise
        extensions: dict[str, Any] = {"http_version": b"HTTP/" + event.http_version,
                                      "reason_phrase": event.reason, "network_stream": conn.stream}
        stream = _Body(self, conn, request, timeouts.get("read"))
        response = httpx.Response(event.status_code, headers=event.headers.raw_items(), stream=stream,
                                  extensions=extensions)
        stream.extensions = response.extensions  # httpx keeps a copy: the leftover count goes on the answer's own
        return response

    async def _connection(self, origin: Origin, connect_timeout: float | None) -> _Connection:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()  # the most recently used: the likeliest to be warm and open
            self._idle_count -= 1
            if conn.reusable(self._expiry):
                return conn
            self._open.discard(conn)
            await conn.close()
        scheme, host, port = origin
        stream = await self._backend.connect_tcp(host, port, timeout=connect_timeout)
        if scheme == "https":
            stream = await stream.start_tls(self._ssl, server_hostname=host, timeout=connect_timeout)
        assert isinstance(stream, AsyncioStream)
        conn = _Connection(stream, origin)
        self._open.add(conn)
        return conn

    def _not_busy(self, origin: Origin) -> None:
        left = self._busy.get(origin, 1) - 1
        if left > 0:
            self._busy[origin] = left
        else:
            self._busy.pop(origin, None)

    async def release(self, conn: _Connection, reuse: bool) -> None:
        self._slots[conn.origin].release()
        self._not_busy(conn.origin)
        await self._sweep()
        if reuse and (self._keep is None or self._idle_count < self._keep):
            conn.h11.start_next_cycle()
            conn.idle_since = time.monotonic()
            self._idle.setdefault(conn.origin, deque()).append(conn)
            self._idle_count += 1
            return
        self._open.discard(conn)
        await conn.close()

    async def _sweep(self) -> None:
        """Close the idle connections of every origin that are past keepalive_expiry or that the peer closed (an
        origin no longer called kept them, and their sockets, for good), and forget origins with nothing left."""
        now = time.monotonic()
        if now - self._swept < SWEEP_S:
            return
        self._swept = now
        for origin in list(self._idle):
            idle = self._idle[origin]
            for conn in [c for c in idle if not c.reusable(self._expiry)]:
                idle.remove(conn)
                self._idle_count -= 1
                self._open.discard(conn)
                await conn.close()
            if not idle:
                del self._idle[origin]
        for origin in [o for o in self._slots if not self._busy.get(o) and o not in self._idle]:
            del self._slots[origin]  # nothing in flight, waiting or idle there

    async def aclose(self) -> None:
        for conn in list(self._open):
            await conn.close()
        self._open.clear()
        self._idle.clear()
        self._idle_count = 0
