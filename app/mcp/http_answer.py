"""Streamable HTTP: reading one exchange's answer (app/mcp/http.py sends it). A JSON body or an SSE stream,
each frame recorded as it comes and bounded by the transport's limits; a 2025-11-25 stream that closes before its
answer is resumed with GET and Last-Event-ID; a cancel closes the stream."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from app.mcp.era import LEGACY_VERSIONS
from app.mcp.errors import (
    ProtocolViolation,
    SessionExpired,
    StreamLost,
    StreamTooLarge,
    expired_note,
)
from app.mcp.fair import FairShare
from app.mcp.inflate import body_pieces
from app.mcp.jsonrpc import Frame, notification, parse_frame
from app.mcp.sse import SseParser, sendable_id
from app.mcp.transport import (
    StreamText,
    codec_of,
    replaced,
    replaced_note,
    stream_bound_note,
)
from app.mcp.wire import WireEvent

if TYPE_CHECKING:
    from app.mcp.http import HttpTransport

# 2025-11-25 resumability: a POST stream that closes before its answer is reopened with GET + Last-Event-ID.
MAX_RESUMES = 3
DEFAULT_RETRY_MS = 1000  # when the server gave no `retry:`
MAX_RETRY_MS = 30_000    # a hostile `retry:` cannot park a request for longer (its idle deadline also runs)
Answer = httpx.Response


def content_type(response: Answer) -> str:
    """The media type alone, lower-cased (`text/event-stream`, `application/json`, ...)."""
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


class HttpExchange:
    def __init__(self, transport: HttpTransport, response: Answer, key: str, request_id: Any = None,
                 discovery: bool = False, protocol_headers: dict[str, str] | None = None) -> None:
        self._t = transport
        # The version header the request went with: an answer to a server request on this stream carries it too.
        self._protocol = {k: v for k, v in (protocol_headers or {}).items() if k.lower() == "mcp-protocol-version"}
        self._response = response
        self._key = key
        self._request_id = request_id
        self._discovery = discovery  # the first server/discover of this connection: is this MCP at all?
        self.cancelled = False
        self.bytes_read = 0  # every byte of this response stream, counted against max_stream_bytes
        self._last_event_id: str | None = None  # the stream's last SSE id, for resuming it (2025-11-25)
        self._retry_ms: int | None = None       # the stream's `retry:`, the wait before resuming
        self._session = transport.session_id    # the 2025-11-25 session the request went in, if any
        # 2025-11-25 makes SSE ids unique across a session's streams: one seen again is a replay (see SeenIds).
        self._legacy = next(iter(self._protocol.values()), "") in LEGACY_VERSIONS
        self._replays = 0
        self._said_replaced = False  # bytes not valid in the charset are said once per exchange

    async def frames(self) -> AsyncIterator[Frame]:
        response = self._response
        ctype = content_type(response)
        try:
            if ctype == "text/event-stream" and response.is_success:
                async for frame in self._resumable_sse():
                    yield frame
                return
            body = await self._read_body()
            yield self._body_frame(body, ctype)
        except httpx.HTTPError as exc:
            if self.cancelled:
                return
            raise StreamLost(f"the response stream broke: {exc!r}") from exc
        finally:
            await self._response.aclose()  # the resumed stream, if the POST's was replaced

    async def _resumable_sse(self) -> AsyncIterator[Frame]:
        """The response stream; on 2025-11-25, one that closes before the answer is resumed as the server
        asked (after its `retry:` delay, by GET with Last-Event-ID). 2026-07-28 has no resumption."""
        for attempt in range(MAX_RESUMES + 1):
            async for frame in self._sse():
                yield frame
                if frame.kind in ("response", "error") and frame.id == self._request_id:
                    return
            # The server may have sent the answer on the standalone GET stream instead (before this one ended, or
            # while it was being resumed): take it from there, resumable or not.
            handed = self._t.take_handed_over(self._request_id)
            if handed is None and attempt < MAX_RESUMES and not self.cancelled and self._resumable():
                resumed = await self._resume()
                handed = self._t.take_handed_over(self._request_id)
                if handed is None and resumed:
                    continue
            if handed is not None and not self.cancelled:
                yield handed
            return

    def _resumable(self) -> bool:
        return self._last_event_id is not None and self._legacy

    async def _resume(self) -> bool:
        """Wait the server's retry delay, then swap in the GET that resumes the stream; False when refused."""
        assert self._last_event_id is not None
        delay = min(self._retry_ms if self._retry_ms is not None else DEFAULT_RETRY_MS, MAX_RETRY_MS) / 1000
        self._record_problem(f"the response stream closed before the answer; resuming it in {delay:g} s "
                             f"with GET, Last-Event-ID {self._last_event_id}")
        await asyncio.sleep(delay)  # the server's `retry:` says how long a client must wait before reconnecting
        response = await self._t.resume(self._key, self._last_event_id, self._protocol)
        if response is None:
            return False
        await self._response.aclose()
        self._response = response
        return True

    def _count(self, chunk: bytes) -> None:
        """Count a chunk before anything parses or records it; past the bound, stop reading the stream."""
        self.bytes_read += len(chunk)
        if self.bytes_read > self._t.max_stream_bytes:
            note = stream_bound_note(self._t.max_stream_bytes, self.bytes_read)
            self._record_problem(note)
            raise StreamTooLarge(note)  # frames() closes the response: the 2026-07-28 HTTP cancel

    async def _sse(self) -> AsyncIterator[Frame]:
        parser = SseParser(self._t.max_message_bytes)
        # Bytes, not text: the bound counts what crossed the wire; the decoder keeps split characters whole.
        stream = StreamText(codec_of(self._response))
        fair = FairShare()  # a flood of chunks must not keep the loop from its timers (see app/mcp/fair.py)
        previous: str | None = None  # the id of this stream's last event
        try:
            async for raw_chunk in body_pieces(self._response):
                if fair.due():
                    await fair.give_way()
                self._count(raw_chunk)
                text, was = stream.decode(raw_chunk)  # a target's own U+FFFD split across chunks is no replacement
                if was and not self._said_replaced:
                    self._say_replaced(stream.codec)
                try:
                    events = parser.feed(text)
                except ValueError as exc:
                    self._record_problem(str(exc))
                    raise ProtocolViolation(str(exc)) from exc
                if parser.last_id is not None and parser.last_id != self._last_event_id and sendable_id(parser.last_id):
                    self._last_event_id = parser.last_id  # one a header cannot carry is not resumed from
                self._retry_ms = parser.retry_ms if parser.retry_ms is not None else self._retry_ms
                # The events of one piece arrived together: they carry its time (one clock read each, and the store's
                # rows spell one wall time for the lot: see Wire.data_text).
                mono, wall = time.monotonic(), time.time()
                for event in events:
                    # An event with no id of its own keeps the one before it (as SSE says): that is no replay.
                    kept, previous = previous == event.id, event.id
                    if event.id is not None and self._legacy and not kept and \
                            not self._t.event_ids.first_time(event.id):
                        self._replays += 1
                        if self._replays == 1:  # said once: a resumption may replay thousands
                            self._record_problem(f"sse id={shortened(event.id)} was already delivered: a replay, not "
                                                 "delivered again (nor are later replays on this request's stream)")
                        continue
                    if event.data == "":
                        continue  # a priming event: nothing to parse
                    yield self._incoming(event.data, note=f"sse id={event.id}" if event.id else None, at=(mono, wall))
                    # A piece may carry hundreds of events (a backlog read at once): the slice counts them too.
                    if fair.due():
                        await fair.give_way()
        except (httpx.HTTPError, asyncio.CancelledError):
            # The stream broke off (or was given up) inside an event: what arrived of it is on the record.
            part = parser.unfinished()
            if part:
                self._incoming(part, note="the stream broke off inside this event: what arrived of it")
            raise
        tail, was = stream.decode(b"", final=True)  # a character the stream ended inside: shown as U+FFFD
        if was and not self._said_replaced:
            self._say_replaced(stream.codec)
        try:  # the last event, without its blank line, is only whole (and may only pass the bound) here
            ended = parser.feed(tail) if tail else []
            unended = parser.finish()
        except ValueError as exc:
            self._record_problem(str(exc))
            raise ProtocolViolation(str(exc)) from exc
        for event in ended:
            if event.data:
                yield self._incoming(event.data)
        for event in unended:
            if event.data:
                yield self._incoming(event.data, note="the stream ended inside this event (no blank line after it)")
        self._say_leftover()

    async def _read_body(self) -> str:
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in body_pieces(self._response):
                self._count(chunk)
                size += len(chunk)
                if size > self._t.max_message_bytes:
                    self._record_problem(f"response body larger than {self._t.max_message_bytes} bytes; dropped")
                    raise ProtocolViolation(f"response body larger than {self._t.max_message_bytes} bytes")
                chunks.append(chunk)
        except (httpx.HTTPError, asyncio.CancelledError):
            # The body broke off (the server closed) or was given up (the deadline, a cancel): what arrived of it
            # is on the record, not only that nothing whole did. Within max_message_bytes, as any body.
            if chunks:
                self._record_part(b"".join(chunks))
            raise
        self._say_leftover()
        return self._decoded(b"".join(chunks))

    def _say_leftover(self) -> None:
        """Bytes the server sent after this answer on its connection: on the record, and the connection retired
        (app/mcp/h11_transport.py), so they are never read as the next call's answer."""
        leftover = self._response.extensions.get("leftover_bytes")
        if leftover:
            self._record_problem(f"the server sent {leftover} bytes after this answer on its connection, unasked; "
                                 "the connection is not used again")

    def _decoded(self, body: bytes) -> str:
        """A body as text in its charset; bytes not valid there are shown as U+FFFD, and the record says so."""
        codec = codec_of(self._response)
        text = body.decode(codec, errors="replace")
        if not self._said_replaced and replaced(body, text, codec):
            self._say_replaced(codec)
        return text

    def _say_replaced(self, codec: str) -> None:
        self._said_replaced = True
        self._record_problem(replaced_note(codec))

    def _record_part(self, part: bytes) -> None:
        declared = self._response.headers.get("content-length")
        said = f" (Content-Length {declared})" if declared is not None else ""
        self._incoming(self._decoded(part),
                       note=f"the body broke off after {len(part)} bytes{said}: what arrived of it")

    def _body_frame(self, body: str, ctype: str) -> Frame:
        status = self._response.status_code
        if status == 202 and not body:
            self._record_problem("HTTP 202 with no body: the server treated the request as a notification")
            raise ProtocolViolation("HTTP 202 Accepted with no body for a request")
        frame = self._incoming(body)
        if status == 404 and self._session is not None:
            # 2025-11-25: the server ended or forgot the session; a new one starts with initialize (a reconnect).
            note = expired_note(self._session)
            self._record_problem(note)
            raise SessionExpired(note)
        if frame.kind in ("response", "error"):
            return frame
        looks = "HTML" if "html" in ctype or body.lstrip().startswith("<") else (ctype or "no content type")
        if self._discovery and (not self._response.is_success or looks == "HTML"):
            raise ProtocolViolation(f"HTTP {status} ({looks}): this does not look like an MCP endpoint")
        if not self._response.is_success:
            # An endpoint that answered before is an MCP endpoint having a bad moment: say what it said.
            raise ProtocolViolation(f"HTTP {status} {httpx.codes.get_reason_phrase(status)} from the server: "
                                    f"{excerpt(body)}")
        raise ProtocolViolation(f"HTTP {status} with a body that is not a JSON-RPC response ({frame.problem or looks})")

    def _incoming(self, raw: str, note: str | None = None, at: tuple[float, float] | None = None) -> Frame:
        frame = parse_frame(raw, self._response.status_code)
        if frame.kind in ("response", "error") and frame.id != self._request_id:
            stray = f"response id {frame.id!r} matches no request: this stream is for id {self._request_id!r}"
            note = f"{note}; {stray}" if note else stray
        mono, wall = at if at is not None else (time.monotonic(), time.time())
        self._t.record(
            WireEvent(direction="in", raw=raw, frame=frame, exchange=self._key,
                      http_status=self._response.status_code, note=note, mono=mono, wall=wall)
        )
        return frame

    def _record_problem(self, note: str) -> None:
        self._t.record(WireEvent(direction="transport", raw="", exchange=self._key, note=note))

    async def cancel(self, reason: str, notify: bool = False) -> None:
        # On 2026-07-28 HTTP, closing the response stream *is* the cancellation. On 2025-11-25 it is not
        # (a disconnect may be resumed), so the era asks for notifications/cancelled first, on the session.
        if self.cancelled:
            return  # said once already
        self.cancelled = True
        try:
            if notify:
                message = notification("notifications/cancelled", {"requestId": self._request_id, "reason": reason})
                await self._t.notify(message, self._protocol, self._key)
        finally:
            self._t.record(WireEvent(direction="transport", raw="", exchange=self._key,
                                     note=f"closed the response stream to cancel ({reason})"))
            await self._response.aclose()

    async def answer(self, message: dict[str, Any]) -> None:
        # A response to a server request is POSTed like any other message (how older revisions take them).
        await self._t.notify(message, self._protocol, self._key)

    async def aclose(self) -> None:
        self._t.done_with(self._request_id)
        await self._response.aclose()


def shortened(text: str, limit: int = 80) -> str:
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def excerpt(body: str, limit: int = 200) -> str:
    """A short, one-line look at a body for a message (the wire record keeps all of it)."""
    flat = " ".join(body.split())
    if not flat:
        return "(empty body)"
    return repr(flat[:limit] + ("…" if len(flat) > limit else ""))
