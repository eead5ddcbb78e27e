"""Wire events: every frame in and out, exactly as it crossed the wire."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from app.mcp.jsonrpc import Frame

Direction = Literal["out", "in", "stderr", "transport"]
# stderr_unfinished: a stderr event whose raw is what a terminal shows now of a line not yet ended (a progress bar
# redrawn with \r), replaced by the next such event, and by the line itself once it ends.
# oauth: an exchange of the OAuth flow (app/mcp/oauth), or a refused request's body: HTTP, but no JSON-RPC to lint.
Signal = Literal["process_started", "process_exited", "session_message", "standalone_stream", "stderr_unfinished",
                 "oauth"]


@dataclass(slots=True)
class WireEvent:
    """One thing that crossed the wire (or a transport-level happening such as a refused connect).

    `exchange` ties the frames of one request together: the client gives every request its own
    exchange key, and the transport stamps it on what it sends and what comes back for it.
    """

    direction: Direction
    raw: str
    frame: Frame | None = None
    exchange: str | None = None
    http_status: int | None = None
    headers: list[tuple[str, str]] | None = None
    note: str | None = None
    signal: Signal | None = None  # what a transport event means, for code (the note is for people)
    # Where an HTTP request went when that is not the transport's target URL: the 2024-11-05 transport POSTs to
    # the endpoint its stream named (an export that said the target's URL would name a GET-only stream).
    url: str | None = None
    mono: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        frame = self.frame
        return {
            "direction": self.direction,
            "raw": self.raw,
            "kind": frame.kind if frame else None,
            "problem": frame.problem if frame else None,
            "exchange": self.exchange,
            "http_status": self.http_status,
            "headers": [list(h) for h in self.headers] if self.headers is not None else None,
            "note": self.note,
            "wall": self.wall,
            "url": self.url,
        }


Recorder = Callable[[WireEvent], None]


def discard(_event: WireEvent) -> None:
    """A recorder that keeps nothing, for scripts that do not care."""


def recorded_headers(headers: httpx.Headers, masks: dict[str, str]) -> list[tuple[str, str]]:
    """A request's headers as recorded: as sent (`wire_headers`), but a secret header's value as its mask (`masks`:
    lowercased name → mask, from `secret.header_masks`). The record goes to the event log and to every audience;
    the value sent stays with the owner's target."""
    pairs = wire_headers(headers)
    return [(name, masks.get(name.lower(), value)) for name, value in pairs] if masks else pairs


def wire_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """HTTP headers as they went on the wire: names in the case they were sent with (`Mcp-Method`, not
    `mcp-method`), in their order, repeats kept. A new list each time: the record keeps it as it is."""
    encoding = headers.encoding
    return [(name.decode(encoding), value.decode(encoding)) for name, value in headers.raw]
