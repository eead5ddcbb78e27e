"""A lean HTTP/1.1 client for the hot path: the Streamable HTTP POST to a plain `http://` target.

Under `bench.latency` httpx's client layer and its HTTP parser (h11, in pure Python) were a third of the console's
own time per call. This client sends the very bytes httpx would send (same header names, values and order: see
`HttpTransport._lean_headers`) and parses answers with httptools (llhttp, in C: uvicorn already uses it), over
an asyncio Protocol, with one keep-alive pool per target origin. Its answers quack like the part of
`httpx.Response` that `app/mcp/http.py` reads (status, reason, `httpx.Headers`, encoding, `aiter_bytes`,
`aclose`), and its failures are httpx's own exceptions, so the callers map them exactly as before.

What it does not do, the caller leaves to httpx: TLS, proxies, auth from the URL, cookies, unusual headers.

- Chunked bodies, Content-Length and read-until-close bodies: llhttp; 1xx interim answers are skipped (as h11).
- Content-Encoding: gzip and deflate decoded as httpx decodes them, but at most `DECODED_PIECE` bytes at a time
  (`app/mcp/inflate.py`): a stream's bound counts what is yielded, and a gzip of zeros turns 128 KiB into 128 MiB.
  Anything else (two encodings, or one zlib cannot read) is httpx's own decoder.
- Bounds: the status line and headers at most `MAX_HEAD_BYTES` (httpcore's h11 limit); a body is buffered up
  to `READ_HIGH_WATER` before the socket stops being read; `max_connections` requests at once per origin
  (pool timeout).
- Cancellation: closing an answer before its end closes the connection (the 2026-07-28 HTTP cancel); only a
  connection whose answer was read to the end, with nothing after it, goes back to the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import httptools
import httpx
from httpx import _decoders

from app.mcp.inflate import Inflate, inflater
from app.mcp.transport import text_codec

READ_HIGH_WATER = 256 * 1024
MAX_HEAD_BYTES = 100 * 1024  # httpcore's h11 max_incomplete_event_size
# A flood read as it comes (a server sending one HTTP chunk per event, thousands a second, to a console that
# keeps up) woke the reader for every chunk: a loop turn, the reader's resumption and its per-read work, about as
# much again as the event's own. Past FLOOD_PIECES body pieces of one answer, arriving less than FLOOD_GAP_S
# apart, the reader is woken COALESCE_S after the data at the latest, with whatever came meanwhile. A plain
# answer (a few pieces) and a paced stream (1,000 a second) are woken at once, as before.
FLOOD_PIECES = 64
FLOOD_GAP_S = 0.0005
COALESCE_S = 0.002
Origin = tuple[str, int]


class _Refused(Exception):
    """Raised in a parser callback to stop parsing (httptools wraps it); `_Connection.refusal` says why."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection; httptools calls back into it as bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        # A lone LF ends a line, as h11 (httpx's parser) takes it: a hand-written target that worked through httpx
        # must not fail here. Nothing else is loosened.
        self.parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)
        self.refusal: str | None = None  # why a callback stopped the parser (see _Refused)
        self.failed: Exception | None = None  # the connection is done for: lost, or a protocol error
        self.unasked = False  # bytes arrived while no request was waiting: not reusable
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._wake_timer: asyncio.TimerHandle | None = None  # a flood's reader is woken by this (see COALESCE_S)
        self._last_data = 0.0  # the loop's time of the last bytes (how close together pieces come)
        self._reading_paused = False
        self.writing_paused = False  # the transport's buffer is full: a big body waits for it to drain
        self._begin()

    def _begin(self) -> None:
        self.active = False
        self.status = bytearray()
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_bytes = 0
        self.head_done = False
        self.complete = False
        self.until_close = False  # no Content-Length, not chunked: the body ends when the server closes
        self.keep_alive = False  # read at the head: llhttp forgets it once the message is complete
        self.body: deque[bytes] = deque()
        self.buffered = 0
        self.pieces = 0  # body pieces of this answer so far

    def start(self) -> None:
        self._begin()
        self.active = True

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass it

    def data_received(self, data: bytes) -> None:
        if not self.active:
            self.unasked = True
            return
        if not self.head_done:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # not an HttpParserError: it would escape into asyncio's transport
            self._fail(httpx.RemoteProtocolError("the server switched protocols unasked"))
            return
        except httptools.HttpParserError as exc:  # httptools wraps what a callback raises (see _Refused)
            self._fail(httpx.RemoteProtocolError(self.refusal or f"the server's answer is not valid HTTP/1.1: {exc}"))
            return
        if not self.head_done and self.head_bytes > MAX_HEAD_BYTES:
            self._fail(httpx.RemoteProtocolError(f"the answer's headers passed {MAX_HEAD_BYTES} bytes"))
            return
        if self.buffered > READ_HIGH_WATER and self.transport is not None and not self._reading_paused:
            self._reading_paused = True
            self.transport.pause_reading()
        elif self.pieces > FLOOD_PIECES and not self.complete:
            now = asyncio.get_running_loop().time()
            close, self._last_data = now - self._last_data < FLOOD_GAP_S, now
            if close:
                self._wake_soon()
                return
        self._wake()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._wake()

    def eof_received(self) -> bool:
        self._lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(exc)

    def _lost(self, exc: Exception | None) -> None:
        if self.failed is not None:
            return
        if self.active and self.head_done and self.until_close and not self.complete and exc is None:
            self.complete = True  # the server's close is the end of this body (a reset is not: the body broke)
        if self.active and not self.complete:
            if exc is not None:  # a reset, not a close: said as httpx says it (a ReadError with the OS's words)
                self.failed = httpx.ReadError(str(exc))
            elif not self.head_done:
                self.failed = httpx.RemoteProtocolError("Server disconnected without sending a response.")
            else:
                self.failed = httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body")
        else:
            self.failed = httpx.ReadError(str(exc) if exc else "the server closed the connection")
        self._wake()

    def _fail(self, exc: Exception) -> None:
        self.failed = exc
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        if self._wake_timer is not None:
            self._wake_timer.cancel()
            self._wake_timer = None
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _wake_soon(self) -> None:
        """Wake the reader COALESCE_S from now (a flood: see FLOOD_PIECES), unless it is busy or already due."""
        if self._wake_timer is None and self._waiter is not None and not self._waiter.done():
            self._wake_timer = asyncio.get_running_loop().call_later(COALESCE_S, self._wake)

    async def wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self) -> bytes:
        chunk = self.body.popleft()
        self.buffered -= len(chunk)
        self._resume()
        return chunk

    def take_all(self) -> bytes:
        """Every body piece buffered so far, as one: a reader behind a flood (one HTTP chunk per event, a
        socket read bringing hundreds) pays its per-piece work (decode, count, parse set-up, a loop check)
        once per read, not once per event. At most what `READ_HIGH_WATER` lets pile up, plus one read."""
        body = self.body
        chunk = body.popleft() if len(body) == 1 else b"".join(body)
        body.clear()
        self.buffered = 0
        self._resume()
        return chunk

    def _resume(self) -> None:
        if self._reading_paused and self.buffered <= READ_HIGH_WATER and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self.failed is None:
            self.failed = httpx.ReadError("the connection was closed")

    def reusable(self) -> bool:
        return (self.failed is None and self.complete and not self.unasked and not self.until_close
                and self.keep_alive and self.transport is not None and not self.transport.is_closing())

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self.complete:  # bytes after the answer: the server sent something unasked; never reuse this one
            # Parsing stops here: its status, headers and body would land on the answer asked for. That answer is
            # whole; the connection is done for.
            self.unasked = True
            self.refusal = "the server sent an answer nobody asked for"
            raise _Refused

    def on_status(self, status: bytes) -> None:
        self.status += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_done:
            return  # a trailer field of a chunked body: httpx drops them, and it is no header of the answer
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        code = self.parser.get_status_code()
        if 100 <= code < 200 and code != 101:
            return  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        if code == 101:  # a switch nobody asked for (llhttp would stop after its head): refused, as h11 does
            self.refusal = "the server switched protocols (HTTP 101) unasked"
            raise _Refused
        names = {name.lower() for name, _ in self.headers}
        if b"transfer-encoding" in names and any(
                value.strip().lower() != b"chunked" for name, value in self.headers
                if name.lower() == b"transfer-encoding"):
            # llhttp reads "gzip, chunked" as chunked and hands the body over still gzipped; h11 refuses it.
            self.refusal = "Only Transfer-Encoding: chunked is supported"
            raise _Refused
        self.until_close = b"content-length" not in names and b"transfer-encoding" not in names \
            and code not in (204, 304)
        self.keep_alive = self.parser.should_keep_alive()
        self.head_done = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)
        self.pieces += 1

    def on_message_complete(self) -> None:
        if not self.head_done:  # the end of an interim answer
            self.status = bytearray()
            self.headers = []
            return
        self.complete = True


class LeanResponse:
    """The answer to one request: its head at once, its body as `aiter_bytes()` reads it."""

    def __init__(self, pool: LeanPool, origin: Origin, conn: _Connection) -> None:
        self._pool = pool
        self._origin = origin
        self._conn: _Connection | None = conn
        self.status_code = conn.parser.get_status_code()
        # As httpx reads it (non-ASCII bytes dropped): the transport note made from it is the same on both paths.
        self.reason_phrase = conn.status.decode("ascii", errors="ignore")
        self.is_success = 200 <= self.status_code < 300
        self._raw = conn.headers
        self._headers: httpx.Headers | None = None
        # The common answer (ASCII head, no charset, no Content-Encoding) is read from the raw head, without
        # httpx's lookups: its header list and Content-Type exactly as httpx.Headers gives them (names lower-cased,
        # repeated values joined by ", "). Anything else is decided by httpx, as before.
        charset = encoded = False
        plain = True
        types: list[bytes] = []
        self.sets_cookie = False  # a Set-Cookie header: the transport hands it to the shared client's jar
        for name, value in conn.headers:
            low = name.lower()
            plain = plain and name.isascii() and value.isascii()
            if low == b"content-type":
                charset = charset or b"charset" in value.lower()
                types.append(value)
            elif low == b"content-encoding":
                encoded = True
            elif low == b"set-cookie":
                self.sets_cookie = True
        if plain:
            self.header_list = [(name.lower().decode("ascii"), value.decode("ascii")) for name, value in conn.headers]
            self.content_type = b", ".join(types).decode("ascii")
        else:
            self.header_list = self.headers.multi_items()
            self.content_type = self.headers.get("content-type", "")
        self.encoding = _encoding(self.headers) if charset else "utf-8"
        self._decoder = _decoder(self.headers) if encoded else None

    @property
    def headers(self) -> httpx.Headers:
        """The head as httpx reads it; made when first asked for (the common answer never asks)."""
        if self._headers is None:
            self._headers = httpx.Headers(self._raw)
        return self._headers

    def read_whole(self) -> bytes | None:
        """The whole body at once, when all of it has arrived and none of it needs decoding (a small JSON answer
        comes in the same read as its head); None otherwise, to be read with `aiter_bytes`. Like the end of
        `aiter_bytes`, it gives the connection back."""
        conn = self._conn
        if conn is None or not conn.complete or self._decoder is not None:
            return None
        data = conn.take_all() if conn.body else b""
        self._finish()
        return data

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            raise httpx.StreamClosed()
        while True:
            while conn.body:
                if self._decoder is None:
                    yield conn.take_all()
                elif isinstance(self._decoder, Inflate):
                    for piece in self._decoder.pieces(conn.take()):
                        yield piece
                else:
                    data = self._decoder.decode(conn.take())
                    if data:
                        yield data
            if conn.complete:
                break
            if conn.failed is not None:
                raise conn.failed
            await conn.wait()
        if self._decoder is not None:
            tail = self._decoder.flush()
            if tail:
                yield tail
        self._finish()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._pool.release(self._origin, conn)

    async def aclose(self) -> None:
        conn = self._conn
        if conn is not None and not conn.complete:
            conn.close()  # an answer given up before its end: the connection cannot carry another
        self._finish()


class LeanPool:
    """Keep-alive connections per origin (host, port), and a bound on the requests under way to each origin.

    The bound is per origin, not one count for all: a target holding its streams open (hung calls, listen
    streams that never end) would otherwise use every slot, and any other target's request would wait out the
    pool timeout.
    """

    def __init__(self, max_connections: int | None, max_keepalive: int | None, keepalive_expiry: float | None) -> None:
        self.max_connections = max_connections if max_connections is not None else 1 << 30
        self.max_keepalive = max_keepalive if max_keepalive is not None else 1 << 30
        self.keepalive_expiry = keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}
        self._idle_count = 0
        self._active: dict[Origin, int] = {}
        self._slot_waiters: dict[Origin, deque[asyncio.Future[None]]] = {}
        self.connections_opened = 0  # for tests: keep-alive means this stays at one per origin

    async def request(self, origin: Origin, head: bytes, body: bytes, timeout: httpx.Timeout,
                      on_sent: Callable[[], None] | None = None) -> LeanResponse:
        """Send one request (its head already serialized) and return once the answer's head has arrived.

        The timeouts are the shared client's: connect, write and pool; reading has none (the request's own
        deadline in `McpClient` decides how long to wait for an answer). `on_sent` runs right after the request
        is handed to the socket, before anything is awaited: work that need not precede the send (recording it)
        then overlaps the target's.
        """
        await self._acquire(origin, timeout.pool)
        conn: _Connection | None = None
        try:
            conn = self._reuse(origin) or await self._connect(origin, timeout.connect)
            conn.start()
            assert conn.transport is not None
            conn.transport.write(head + body)  # one send: headers and body together
            if on_sent is not None:
                on_sent()
            if conn.writing_paused:
                await self._drained(conn, timeout.write)
            while not conn.head_done:
                if conn.failed is not None:
                    raise conn.failed
                await conn.wait()
            return LeanResponse(self, origin, conn)
        except BaseException:
            if conn is not None:
                conn.close()
            self._release_slot(origin)
            raise

    async def _drained(self, conn: _Connection, write_timeout: float | None) -> None:
        """A big body: wait while the transport says its buffer is full (flow control), under the write timeout.
        The answer may begin before the body is all sent (a server refusing it early): that ends the wait too."""
        try:
            async with asyncio.timeout(write_timeout):
                while conn.writing_paused and conn.failed is None and not conn.head_done:
                    await conn.wait()
        except TimeoutError as exc:
            raise httpx.WriteTimeout("write timed out") from exc

    async def _acquire(self, origin: Origin, pool_timeout: float | None) -> None:
        active = self._active.get(origin, 0)
        if active < self.max_connections and not self._slot_waiters.get(origin):
            self._active[origin] = active + 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._slot_waiters.setdefault(origin, deque())
        waiters.append(waiter)
        try:
            async with asyncio.timeout(pool_timeout):
                await waiter  # the releaser hands its slot over: the count stays as it is
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._release_slot(origin)  # handed a slot in the same turn we gave up: pass it on
            else:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    waiters.remove(waiter)
                if not waiters and self._slot_waiters.get(origin) is waiters:
                    del self._slot_waiters[origin]
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("no connection became free in time") from exc
            raise

    def _release_slot(self, origin: Origin) -> None:
        waiters = self._slot_waiters.get(origin)
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes straight to the next waiter
                return
        if waiters is not None:
            del self._slot_waiters[origin]
        active = self._active[origin] - 1
        if active:
            self._active[origin] = active
        else:
            del self._active[origin]  # a console that met many targets keeps no count for each

    def _reuse(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            self._idle_count -= 1
            expired = self.keepalive_expiry is not None and now - conn.idle_since > self.keepalive_expiry
            if conn.failed is None and not conn.unasked and not expired:
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin, connect_timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_timeout):
                transport, conn = await loop.create_connection(_Connection, origin[0], origin[1])
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        with contextlib.suppress(OSError, AttributeError):  # small requests go out at once
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections_opened += 1
        return conn

    def release(self, origin: Origin, conn: _Connection) -> None:
        """An answer is over: its connection goes back to the pool if it can carry another request."""
        self._release_slot(origin)
        conn.active = False
        if not conn.reusable() or self._idle_count >= self.max_keepalive:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self._idle.setdefault(origin, []).append(conn)
        self._idle_count += 1

    def close(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        self._idle_count = 0


def _encoding(headers: httpx.Headers) -> str:
    """As httpx decides `Response.encoding`: the Content-Type charset when Python knows it, else UTF-8."""
    ctype = headers.get("content-type")
    if ctype is None or "charset" not in ctype.lower():
        return "utf-8"
    probe = httpx.Response(200, headers={"content-type": ctype})
    return text_codec(probe.encoding)  # a codec that reads text: not base64, rot13, idna... (see text_codec)


def _decoder(headers: httpx.Headers) -> Any:
    """The decoder for a Content-Encoding (None for identity, the common case): `Inflate` for gzip or deflate
    alone, else httpx's own decoders."""
    values = headers.get_list("content-encoding", split_commas=True)
    if not values:
        return None
    bounded = inflater(headers)
    if bounded is not None:
        return bounded
    found = [_decoders.SUPPORTED_DECODERS[v.strip().lower()]() for v in values
             if v.strip().lower() in _decoders.SUPPORTED_DECODERS]
    if not found or all(isinstance(d, _decoders.IdentityDecoder) for d in found):
        return None
    return found[0] if len(found) == 1 else _decoders.MultiDecoder(found)
