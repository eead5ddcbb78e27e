"""The transport seam: send one request, get back the frames that belong to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from app.mcp.jsonrpc import Frame

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class Exchange(Protocol):
    """The frames coming back for one request, ending with (or before) its final response."""

    def frames(self) -> AsyncIterator[Frame]: ...

    async def cancel(self, reason: str) -> None:
        """Ask the server to stop: HTTP closes the stream, stdio sends notifications/cancelled."""

    async def aclose(self) -> None: ...


class Transport(Protocol):
    kind: str
    target: str

    async def start(self) -> None: ...

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> Exchange:
        """Send a request and return its exchange. Raises TransportError when it cannot be sent."""

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None: ...

    async def close(self) -> None: ...
