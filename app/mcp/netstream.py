"""The network layer under the console's HTTP transport (app/mcp/h11_transport.py): asyncio protocols as streams.

httpx's async client reaches the socket through httpcore's anyio backend by default, and under `bench.latency`
that layer was a large part of the console's own time per call: a cancel scope and `fail_after` around every read
and write, an `is_socket_readable` poll of the socket before each reuse of a keep-alive connection, and lookups
of the current task for each of them. These streams carry the same bytes without them.

- Reads: `data_received` buffers what arrived, so a read that finds data waiting returns without awaiting.
- Writes: small ones are joined until the loop turns or the response is awaited, then handed to
  `transport.write` as one send (headers and body of a request: one syscall, one wake-up of the server);
  only a full send buffer waits (flow control).
- "Is this idle connection still good?": the protocol already knows whether the peer closed or sent something
  unasked, so no poll of the socket is needed.
- TLS: `loop.start_tls` on the same transport, as anyio does.

Errors come out as httpcore's (ConnectError, ReadError, WriteTimeout, ...), which the transport maps to httpx's.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
# What may wait in a connection's buffer before the socket stops being read (the kernel's buffers then fill and
# the server is slowed): a flooding server must not grow the console's memory faster than the reader drains it.
READ_HIGH_WATER = 256 * 1024
# Writes smaller than this wait for the loop's next turn to leave together (see AsyncioStream).
WRITE_COALESCE_BYTES = 64 * 1024


class _Protocol(asyncio.Protocol):
    """Buffers what arrives and wakes the one reader waiting for it (httpcore reads one connection at a time)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost: Exception | None = None
        self._reader: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self.paused = False
        self.reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports quack like asyncio.Transport without subclassing it: no isinstance check here.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > READ_HIGH_WATER and self.transport is not None and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def drained(self) -> None:
        if self.reading_paused and len(self.buffer) <= READ_HIGH_WATER and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def _wake(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    async def wait_readable(self) -> None:
        self._reader = asyncio.get_running_loop().create_future()
        try:
            await self._reader
        finally:
            self._reader = None

    async def wait_writable(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()
        try:
            await self._writable
        finally:
            self._writable = None


async def _within(timeout: float | None, waiting: Any) -> None:
    if timeout is None:
        await waiting
        return
    async with asyncio.timeout(timeout):
        await waiting


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        # httpcore writes a request's headers and its body as two writes; held here until the loop turns (or
        # the response is awaited) they leave as one send, so the server wakes once for the whole request.
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._flush_scheduled = False

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
            if not self._transport.is_closing():
                self._transport.write(data)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._flush()
        p = self._protocol
        if not p.buffer and not p.eof:
            try:
                await _within(timeout, p.wait_readable())
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(str(exc) or "read timed out") from exc
        if p.buffer:
            data = bytes(p.buffer[:max_bytes])
            del p.buffer[:max_bytes]
            p.drained()
            return data
        if p.lost is not None:
            raise httpcore.ReadError(str(p.lost)) from p.lost
        return b""  # the peer closed: httpcore treats an empty read as end of stream

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        p = self._protocol
        if self._transport.is_closing() or p.lost is not None:
            raise httpcore.WriteError(str(p.lost or "the connection is closed"))
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size >= WRITE_COALESCE_BYTES:
            self._flush()  # a big body goes out now, under the transport's flow control
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        if p.paused:
            try:
                await _within(timeout, p.wait_writable())
            except TimeoutError as exc:
                raise httpcore.WriteTimeout(str(exc) or "write timed out") from exc
            if p.lost is not None:
                raise httpcore.WriteError(str(p.lost)) from p.lost

    async def aclose(self) -> None:
        self._flush()
        self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        self._flush()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                upgraded = await loop.start_tls(self._transport, self._protocol, ssl_context,
                                                server_hostname=server_hostname)
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout(str(exc) or "TLS handshake timed out") from exc
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        if upgraded is None:
            raise httpcore.ConnectError("TLS could not be started on this connection")
        tls = upgraded
        self._protocol.transport = tls  # flow control now pauses the TLS transport
        return AsyncioStream(tls, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # For an idle keep-alive connection: readable means the server closed it or sent something unasked,
            # either way httpcore drops it. The protocol knows without polling the socket.
            return self._protocol.eof or bool(self._protocol.buffer)
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None


def _apply(sock: socket.socket | None, options: Iterable[SocketOption] | None) -> None:
    if sock is None:
        return
    for option in options or ():
        sock.setsockopt(*option)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[SocketOption] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol, host, port, local_addr=(local_address, 0) if local_address else None)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        _apply(transport.get_extra_info("socket"), socket_options)
        with contextlib.suppress(OSError):  # small requests go out at once (anyio sets it too)
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return AsyncioStream(transport, protocol)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[SocketOption] | None = None) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_unix_connection(_Protocol, path)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        _apply(transport.get_extra_info("socket"), socket_options)
        return AsyncioStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
