"""The 2025-11-25 standalone GET stream: where a legacy HTTP server sends what belongs to no request.

After `notifications/initialized` the client opens `GET` with `Accept: text/event-stream` (and the session id,
when the server gave one). HTTP 405 means the server offers no such stream. Every frame on it goes to the
transport's `on_server_message` (list_changed, resources/updated, log lines, a ping); a server request is
answered by the client as its own POST. When the stream drops, it is reopened with `Last-Event-ID` (the last
SSE id seen) so a resumable server replays what was missed; consecutive failures are bounded, with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import httpx

from app.mcp.errors import expired_note
from app.mcp.inflate import body_pieces
from app.mcp.jsonrpc import parse_frame
from app.mcp.sse import SseEvent, SseParser, sendable_id
from app.mcp.transport import SESSION_MESSAGE_NOTE, StreamText, codec_of, replaced_note
from app.mcp.wire import WireEvent

if TYPE_CHECKING:
    from app.mcp.http import HttpTransport

MAX_FAILURES = 5           # reopen attempts in a row that bring no event before giving up
FIRST_BACKOFF_S = 0.25     # doubled after each failure in a row
MAX_BACKOFF_S = 8.0
MAX_RETRY_S = 30.0         # a server's `retry:` is waited, up to this (10^12 ms must not park the stream for good)
# The stream may stay quiet for hours: no read timeout; connecting is bounded like any request.
STREAM_TIMEOUT = httpx.Timeout(10.0, read=None)


class StandaloneStream:
    """One long-lived GET per legacy HTTP session, reopened after a drop; stopped by `stop()`."""

    def __init__(self, transport: HttpTransport, protocol_headers: dict[str, str]) -> None:
        self._t = transport
        self._protocol = dict(protocol_headers)
        self.last_event_id: str | None = None
        self.retry_s: float | None = None  # the server's last `retry:`: how long to wait before reopening
        self._said_unsendable = False
        self._replayed, self._first_replayed = 0, ""
        self.opened = 0  # GETs sent, for tests and notes
        self._task: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()  # set when the stream stops for good (405, refused, bound reached, stopped)
        # Set once the first GET has its answer's head (or failed): a caller that must not race its first request
        # against the stream's opening (a server may treat any GET that comes later as a resumption) waits on it.
        self.first_answer = asyncio.Event()
        self.why_ended = ""

    def start(self) -> None:
        name = f"http-standalone-{self._t.shown_target}"
        self._task = asyncio.get_running_loop().create_task(self._run(), name=name)

    async def stop(self) -> None:
        self.first_answer.set()  # no one waits for a GET that will not be sent
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _note(self, note: str, status: int | None = None) -> None:
        # Informational: a server without the stream (405) or one that drops it now and then is normal.
        self._t.record(WireEvent(direction="transport", raw="", http_status=status, note=note,
                                 signal="standalone_stream"))

    async def _run(self) -> None:
        failures = 0
        try:
            while True:
                outcome = await self._once()
                if outcome == "final":
                    return
                failures = 0 if outcome == "delivered" else failures + 1
                if failures >= MAX_FAILURES:
                    self._end(f"standalone GET stream: gave up after {failures} reopen attempts in a row brought "
                              "nothing")
                    return
                delay = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * (2 ** max(failures - 1, 0)))
                if self.retry_s is not None:  # 2025-11-25: the client must wait what the server's retry: says
                    delay = max(delay, min(self.retry_s, MAX_RETRY_S))
                resume = f" with Last-Event-ID {self.last_event_id}" if self.last_event_id else ""
                self._note(f"standalone GET stream dropped; reopening in {delay:g} s{resume}")
                await asyncio.sleep(delay)  # backoff between reopen attempts, not a wait for a condition
        finally:
            self.ended.set()

    def _end(self, why: str, status: int | None = None, warn: bool = False) -> None:
        self.why_ended = why
        if warn:  # not the informational kind: the session is over on the server's side
            self._t.record(WireEvent(direction="transport", raw="", http_status=status, note=why))
        else:
            self._note(why, status)

    async def _once(self) -> str:
        """One GET: "final" (do not reopen), "delivered" (events came, then it dropped) or "empty"."""
        headers = {**self._t.extra_headers, **self._protocol, "Accept": "text/event-stream"}
        if self._t.session_id is not None:
            headers["Mcp-Session-Id"] = self._t.session_id
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        self.opened += 1
        try:
            request = self._t.http_client.build_request("GET", self._t.target, headers=headers, timeout=STREAM_TIMEOUT,
                                                        cookies=self._t.cookies or None)
            response = await self._t.http_client.send(request, stream=True)
            self._t.cookies.extract_cookies(response)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            self._note(f"standalone GET stream could not be opened: {type(exc).__name__}: {exc}")
            return "empty"
        finally:
            self.first_answer.set()
        try:
            status = response.status_code
            ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if status == 405:
                self._end("the server offers no standalone GET stream (HTTP 405)", status)
                return "final"
            if status == 404 and "Mcp-Session-Id" in headers:
                self._end(f"standalone GET stream: {expired_note(headers['Mcp-Session-Id'])}", status, warn=True)
                return "final"
            if not response.is_success or ctype != "text/event-stream":
                self._end(f"standalone GET stream refused: HTTP {status} {response.reason_phrase} "
                          f"({ctype or 'no content type'})", status)
                return "final"
            if self.opened > 1:  # the first open needs no note; a reopen says whether it took
                self._note(f"standalone GET stream reopened: HTTP {status}", status)
            return "delivered" if await self._read(response) else "empty"
        finally:
            await response.aclose()

    async def _read(self, response: httpx.Response) -> bool:
        """Route every event until the stream ends or breaks; True when at least one event came."""
        parser = SseParser(self._t.max_message_bytes)
        stream = StreamText(codec_of(response))
        said_replaced = False  # said once per GET, as on a request's stream once per exchange
        delivered = False
        self._replayed, self._first_replayed = 0, ""  # this GET's replays: counted, the first id kept
        self._kept_id: str | None = None  # the id this GET's last event had (SSE keeps it for events without one)
        try:
            async for chunk in body_pieces(response):
                text, was = stream.decode(chunk)
                if was and not said_replaced:
                    said_replaced = True
                    self._say_replaced(stream.codec)
                for event in parser.feed(text):
                    delivered = self._take(event, response.status_code) or delivered
            for event in parser.finish():
                if event.data:
                    delivered = self._take(event, response.status_code) or delivered
        except (httpx.HTTPError, ValueError) as exc:  # a broken stream or an over-long event: reopen
            self._note(f"standalone GET stream broke: {type(exc).__name__}: {exc}")
            part = parser.unfinished() if isinstance(exc, httpx.HTTPError) else None  # an over-long one: not kept
            if part:  # what arrived of the event it broke off in is on the record, as on a request's stream
                self._t.record(WireEvent(direction="in", raw=part, frame=parse_frame(part),
                                         http_status=response.status_code,
                                         note="broke off on the standalone GET stream before its event ended "
                                              "(what arrived of it)"))
        if parser.retry_ms is not None:
            self.retry_s = parser.retry_ms / 1000
        if self._replayed:
            # Said once per GET: a reopen that brings only replays brought nothing, and counts as such.
            self._note(f"standalone GET stream: {self._replayed} replayed events (ids already delivered, the first "
                       f"{_excerpt(self._first_replayed)}) were not delivered again")
        return delivered

    def _say_replaced(self, codec: str) -> None:
        """The stream held bytes not valid in its charset, shown as U+FFFD: a warning, as on a request's stream."""
        self._t.record(WireEvent(direction="transport", raw="", note=replaced_note(codec)))

    def _take(self, event: SseEvent, status: int) -> bool:
        """Deliver one event unless its id was delivered before; True when it was new."""
        if event.id is not None:
            if sendable_id(event.id):
                self.last_event_id = event.id
            elif not self._said_unsendable:
                self._said_unsendable = True
                self._note(f"standalone GET stream: sse id {_excerpt(event.id)} cannot be sent back as Last-Event-ID "
                           "(not printable ASCII, or over 1024 characters); a reopen resumes from the last id that can")
            # An event with no id of its own keeps the one before it (as SSE says): that is no replay. An id that
            # comes again with a new `id:` line, or first on a reopened stream, is.
            kept, self._kept_id = self._kept_id == event.id, event.id
            if not kept and not self._t.event_ids.first_time(event.id):
                self._replayed += 1
                self._first_replayed = self._first_replayed or event.id
                return False
        if event.data:
            self._deliver(event.data, event.id, status)
        return True

    def _deliver(self, data: str, event_id: str | None, status: int) -> None:
        frame = parse_frame(data, status)
        if frame.kind in ("response", "error") and self._t.hand_over(frame):
            where = f"standalone GET stream, sse id={event_id}" if event_id else "standalone GET stream"
            self._t.record(WireEvent(direction="in", raw=data, frame=frame, http_status=status,
                                     note=f"{where}: the answer to request id {frame.id!r}, which takes it"))
            return
        sink = self._t.on_server_message
        routed = sink is not None and frame.kind in ("notification", "request")
        where = f"standalone GET stream, sse id={event_id}" if event_id else "standalone GET stream"
        note = f"{SESSION_MESSAGE_NOTE}; {where}" if routed else f"{where}: matches no request in flight"
        self._t.record(WireEvent(direction="in", raw=data, frame=frame, http_status=status, note=note,
                                 signal="session_message" if routed else None))
        if routed and sink is not None:
            sink(frame)


def _excerpt(event_id: str, limit: int = 80) -> str:
    return repr(event_id[:limit] + ("…" if len(event_id) > limit else ""))
