"""One socket write per answer: uvicorn's httptools protocol with its writes joined until the loop turns.

uvicorn writes an answer's status line and headers (`http.response.start`) and its body
(`http.response.body`) as two `transport.write` calls, so two send syscalls and, for the client, often two
wake-ups. Under `bench.latency` these writes were the largest native entry of the console's own time. The
ASGI app sends both in one step of its task, so holding the bytes until the loop's next turn joins them
without delaying anything: the flush runs before the loop polls for I/O again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# A write at least this big goes out at once (a big body should not wait, nor be copied into a join).
FLUSH_AT_BYTES = 64 * 1024


class CoalescingTransport:
    """The connection's transport, with small writes held until the loop turns (or a close) and sent as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        self._scheduled = False
        self.writes = 0  # sends handed to the real transport (tests count them)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= FLUSH_AT_BYTES:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if not self._transport.is_closing():
            self.writes += 1
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._size + self._transport.get_write_buffer_size()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._size = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        # is_closing, get_extra_info, pause_reading, resume_reading, set_protocol, ...: the real transport's.
        return getattr(self._transport, name)


class RequestTargetRefused(ValueError):
    """A request target that is not a path on this console (raised inside the parser: uvicorn answers 400)."""


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    def on_url(self, url: bytes) -> None:
        # Only origin-form targets ("/path?query", or "*" for OPTIONS). uvicorn keeps the path of an absolute-form
        # target ("GET http://evil.example/x") and drops its authority, so the Host check would pass on a Host header
        # that a proxy in front, reading the target's authority as RFC 9112 says, did not route by. An
        # authority-form target (CONNECT) has no path at all. uvicorn answers a callback's error as a bad request.
        if not self.url and url[:1] not in (b"/", b"*"):
            raise RequestTargetRefused(url[:64])
        super().on_url(url)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        wrapped: Any = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)

    def on_response_complete(self) -> None:
        # The answer is whole: nothing more comes to join it with, so it goes out now, in the step of the task that
        # sent it, not a loop turn later behind whatever that task's end wakes.
        flush = getattr(self.transport, "flush", None)
        if flush is not None:
            flush()
        super().on_response_complete()
