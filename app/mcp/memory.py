"""An in-memory transport for unit tests of the core: a Python function plays the server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from app.mcp.errors import ConnectFailed
from app.mcp.jsonrpc import Frame, encode, parse_frame
from app.mcp.transport import ServerMessageSink
from app.mcp.wire import Recorder, WireEvent, discard

# The fake server gets the request and yields raw frames (text, so tests can send garbage).
Handler = Callable[[dict[str, Any], dict[str, str]], AsyncIterator[str]]


class MemoryExchange:
    def __init__(self, transport: MemoryTransport, stream: AsyncIterator[str], key: str) -> None:
        self._t = transport
        self._stream = stream
        self._key = key
        self.cancelled = asyncio.Event()

    async def frames(self) -> AsyncIterator[Frame]:
        async for raw in self._stream:
            if self.cancelled.is_set():
                return
            frame = parse_frame(raw)
            self._t.record(WireEvent(direction="in", raw=raw, frame=frame, exchange=self._key))
            yield frame

    async def cancel(self, reason: str, notify: bool = False) -> None:
        self.cancelled.set()
        self._t.cancelled.append(reason)

    async def answer(self, message: dict[str, Any]) -> None:
        self._t.answers.append(message)

    async def aclose(self) -> None:
        aclose: Callable[[], Awaitable[None]] | None = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


class MemoryTransport:
    kind = "memory"
    target = "memory://"

    def __init__(self, handler: Handler, record: Recorder = discard, refuse: bool = False) -> None:
        self._handler = handler
        self.record = record
        self.refuse = refuse
        self.sent: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.cancelled: list[str] = []
        self.answers: list[dict[str, Any]] = []  # responses the client sent to requests from the "server"
        self.on_server_message: ServerMessageSink | None = None

    async def start(self) -> None:
        if self.refuse:
            raise ConnectFailed("refused (memory transport told to refuse)")

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> MemoryExchange:
        if self.refuse:
            raise ConnectFailed("refused (memory transport told to refuse)")
        self.sent.append((message, headers))
        raw = encode(message)
        self.record(WireEvent(direction="out", raw=raw, frame=parse_frame(raw), exchange=key,
                              headers=sorted(headers.items())))
        return MemoryExchange(self, self._handler(message, headers), key)

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None:
        self.sent.append((message, headers))

    async def close(self) -> None:
        return None
