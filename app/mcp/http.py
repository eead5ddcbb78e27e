"""Streamable HTTP (2026-07-28): one POST per message, answered with JSON or an SSE stream."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.mcp.era import LEGACY_VERSIONS
from app.mcp.errors import (
    ConnectFailed,
    ProtocolViolation,
    SessionExpired,
    StreamLost,
    StreamTooLarge,
    TransportError,
    expired_note,
)
from app.mcp.fair import FairShare
from app.mcp.inflate import body_pieces
from app.mcp.jsonrpc import Frame, encode, notification, parse_frame
from app.mcp.sse import SeenIds, SseParser, sendable_id
from app.mcp.standalone import StandaloneStream
from app.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    ServerMessageSink,
    StreamText,
    replaced,
    replaced_note,
    stream_bound_note,
    text_codec,
)
from app.mcp.wire import Recorder, WireEvent, wire_headers

ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = "Mcp-Session-Id"
DELETE_TIMEOUT_S = 5.0  # closing must not hang on a server that ignores the DELETE
# A notification's (or an answer's) POST is waited for this long at most: no request deadline covers it, and a
# server that never answers one held the connect (notifications/initialized), a cancel, and a pool slot forever.
NOTIFY_TIMEOUT_S = 10.0
# 2025-11-25 resumability: a POST stream that closes before its answer is reopened with GET + Last-Event-ID.
MAX_RESUMES = 3
DEFAULT_RETRY_MS = 1000  # when the server gave no `retry:`
MAX_RETRY_MS = 30_000    # a hostile `retry:` cannot park a request for longer (its idle deadline also runs)


H11_HEAD_BOUND = 64 * 1024  # h11's max_incomplete_event_size, as httpcore leaves it
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
Answer = httpx.Response


def _answer_headers(response: Answer) -> list[tuple[str, str]]:
    return wire_headers(response.headers)


def _decoding(response: Answer, headers: list[tuple[str, str]]) -> str:
    """What a note adds when a header is not ASCII: which reading shows it. HTTP gives header bytes no charset and
    httpx reads all of an answer's headers one way (UTF-8 when they all are, else ISO-8859-1), so the same bytes
    show differently beside different neighbours."""
    if "".join([name + value for name, value in headers]).isascii():  # one call, not one per header
        return ""
    return (f"the answer's header values outside ASCII are shown decoded as {response.headers.encoding} (HTTP gives "
            "header bytes no charset)")


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _control_note(headers: list[tuple[str, str]]) -> str:
    """What a note says when an answer's header value holds a control character (DEL, say): not valid HTTP
    (RFC 9110 allows tab, visible ASCII and bytes from 0x80), shown as it came, and said so."""
    bad = [name for name, value in headers if _CONTROL.search(value)]
    if not bad:
        return ""
    return (f"the answer's header {', '.join(repr(n) for n in bad[:5])} holds a control character, which is not "
            "valid HTTP (kept as it came)")


def _content_type(response: Answer) -> str:
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
        ctype = _content_type(response)
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
        stream = StreamText(self._response.encoding)
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
                            self._record_problem(f"sse id={_short(event.id)} was already delivered: a replay, not "
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
        codec = text_codec(self._response.encoding)
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
                                    f"{_excerpt(body)}")
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


class HttpTransport:
    kind = "http"

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        record: Recorder,
        extra_headers: dict[str, str] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
    ) -> None:
        self.target = url
        self.shown_target = redact_url(url)
        self._client = client
        self.record = record
        self.extra_headers = dict(extra_headers or {})
        self.max_message_bytes = max_message_bytes
        self.max_stream_bytes = max_stream_bytes
        self._discovered = False
        # 2025-11-25 sessions: the id the server gave in its initialize answer, sent on every later message.
        self.session_id: str | None = None
        self.on_server_message: ServerMessageSink | None = None
        self.standalone: StandaloneStream | None = None  # the 2025-11-25 GET stream, once initialized
        # Requests in flight, and answers to them that came on the standalone stream instead of their own.
        self._inflight_ids: set[str | int] = set()
        self._handed: dict[str | int, Frame] = {}
        self.event_ids = SeenIds()  # 2025-11-25: the SSE ids delivered on any of this session's streams
        # What this target set, sent back to it only (the shared client keeps none: app/mcp/upstream.py).
        self.cookies = httpx.Cookies()

    @property
    def http_client(self) -> httpx.AsyncClient:
        return self._client

    async def start(self) -> None:
        """Nothing to open: every message is its own POST."""

    def _headers(self, headers: dict[str, str]) -> dict[str, str]:
        merged = {"Content-Type": "application/json", "Accept": ACCEPT}
        merged.update(self.extra_headers)
        merged.update(headers)
        if self.session_id is not None:
            merged[SESSION_HEADER] = self.session_id
        return merged

    def _learn_session(self, message: dict[str, Any], response: Answer) -> None:
        """Keep the session id a server hands out on its initialize answer (2025-11-25); only there, so a
        modern server's stray header (or a refused probe's) never turns into a session to send and DELETE."""
        if message.get("method") != "initialize":
            return  # asked first: looking a header up in httpx's Headers cost every call more than all of this
        value = response.headers.get(SESSION_HEADER)
        if value and response.is_success:
            if not _VISIBLE_ASCII.fullmatch(value):
                raise ProtocolViolation(f"the server's {SESSION_HEADER} {_short(value)} is not visible ASCII "
                                        "(0x21-0x7E), as 2025-11-25 requires of a session id: it cannot be sent back")
            self.session_id = value

    async def _post(self, message: dict[str, Any], headers: dict[str, str], key: str,
                    timeout: float | None = None) -> Answer:
        try:
            body = encode(message)
            content = body.encode("utf-8")
            merged = self._headers(headers)
            request = self._client.build_request(
                "POST", self.target, content=content, headers=merged, cookies=self.cookies or None,
                timeout=httpx.Timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT)
        except (ValueError, TypeError, httpx.InvalidURL) as exc:  # UnicodeEncodeError is a ValueError
            note = f"could not build the request to {self.shown_target}: {exc}"
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
            raise ConnectFailed(note) from exc
        # Made now (its time is the send's), recorded once: in the loop turn after the request went out (while
        # the target reads it, the console records it), or before any note if it never did. Either way before
        # anything the target answers, which can only be read in a later turn.
        sent = WireEvent(direction="out", raw=body, frame=None, exchange=key, headers=wire_headers(request.headers))
        out: list[WireEvent] = []

        def record_out() -> None:
            if not out:
                out.append(sent)
                sent.frame = parse_frame(body)
                self.record(sent)

        try:
            asyncio.get_running_loop().call_soon(record_out)
            response = await self._client.send(request, stream=True)
            if "set-cookie" in response.headers:  # asked first: extracting builds urllib objects every time
                self.cookies.extract_cookies(response)
        except (httpx.HTTPError, OSError, ValueError) as exc:  # a header httpx cannot encode raises ValueError
            record_out()
            note = f"could not reach {self.shown_target}: {_explain(exc)}"
            if timeout is not None and isinstance(exc, httpx.TimeoutException):
                note += f" (no answer within {timeout:g} s)"
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
            raise ConnectFailed(note) from exc
        except BaseException:  # cancelled while connecting: the request is on the record, as it always was
            record_out()
            raise
        answered = _answer_headers(response)
        self.record(WireEvent(direction="transport", raw="", exchange=key, http_status=response.status_code,
                              headers=answered, note=f"HTTP {response.status_code} {response.reason_phrase}"))
        # Each its own note: the head's is the status line (HAR reads it).
        for note in (_decoding(response, answered), _control_note(answered)):
            if note:
                self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
        try:
            self._learn_session(message, response)
        except ProtocolViolation as exc:
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=str(exc)))
            await response.aclose()
            raise
        return response

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> HttpExchange:
        discovery = message.get("method") == "server/discover" and not self._discovered
        if discovery:
            self._discovered = True
        request_id = message.get("id")
        if isinstance(request_id, str | int):
            self._inflight_ids.add(request_id)
        return HttpExchange(self, await self._post(message, headers, key), key, message.get("id"), discovery,
                            headers)

    def hand_over(self, frame: Frame) -> bool:
        """Keep a response that came on the standalone stream for the request in flight it answers."""
        if not isinstance(frame.id, str | int) or frame.id not in self._inflight_ids:
            return False
        self._handed[frame.id] = frame
        return True

    def take_handed_over(self, request_id: Any) -> Frame | None:
        return self._handed.pop(request_id, None) if isinstance(request_id, str | int) else None

    def done_with(self, request_id: Any) -> None:
        if isinstance(request_id, str | int):
            self._inflight_ids.discard(request_id)
            self._handed.pop(request_id, None)

    async def resume(self, key: str, last_event_id: str, protocol: dict[str, str]) -> httpx.Response | None:
        """The GET that resumes a request's stream (2025-11-25); None, with a note, when it is refused."""
        headers = {**self.extra_headers, **protocol, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        try:
            request = self._client.build_request("GET", self.target, headers=headers, cookies=self.cookies or None)
            response = await self._client.send(request, stream=True)
            self.cookies.extract_cookies(response)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            self.record(WireEvent(direction="transport", raw="", exchange=key,
                                  note=f"resuming the stream with GET failed: {_explain(exc)}"))
            return None
        ctype = _content_type(response)
        self.record(WireEvent(direction="transport", raw="", exchange=key, http_status=response.status_code,
                              headers=_answer_headers(response),
                              note=f"GET with Last-Event-ID {last_event_id}: HTTP {response.status_code} "
                                   f"{response.reason_phrase}"))
        if response.is_success and ctype == "text/event-stream":
            return response
        await response.aclose()
        if response.status_code == 404 and SESSION_HEADER in headers:
            note = expired_note(headers[SESSION_HEADER])
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
            raise SessionExpired(note)
        return None

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None:
        response = await self._post(message, headers, key, timeout=NOTIFY_TIMEOUT_S)
        if message.get("method") == "notifications/initialized" and response.is_success and self.standalone is None:
            # The 2025-11-25 session is open: listen for what the server sends outside any request.
            self.standalone = StandaloneStream(self, headers)
            self.standalone.start()
        try:
            raw = await self._bounded_body(response)
        except httpx.HTTPError as exc:
            raise TransportError(f"notification answer broke: {exc!r}") from exc
        finally:
            await response.aclose()
        codec = text_codec(response.encoding)  # read as a request's answer is: in its charset, said when replaced
        body = raw.decode(codec, errors="replace")
        if body:
            if replaced(raw, body, codec):
                self.record(WireEvent(direction="transport", raw="", exchange=key, note=replaced_note(codec)))
            self.record(WireEvent(direction="in", raw=body, frame=parse_frame(body), exchange=key,
                                  http_status=response.status_code))
        if message.get("method") == "notifications/initialized" and not response.is_success:
            # The 2025-11-25 session opens here: a server refusing it has no session for what follows.
            raise ProtocolViolation(f"HTTP {response.status_code} {response.reason_phrase} to "
                                    f"notifications/initialized: the server did not open the session "
                                    f"({_excerpt(body)})")

    async def _bounded_body(self, response: Answer) -> bytes:
        """A notification's answer should be empty; whatever comes, keep at most one message of it."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in body_pieces(response):
            size += len(chunk)
            if size > self.max_message_bytes:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    async def close(self) -> None:
        """End a 2025-11-25 session with a DELETE (bounded); the shared client belongs to the caller."""
        standalone, self.standalone = self.standalone, None
        if standalone is not None:
            await standalone.stop()
        session, self.session_id = self.session_id, None
        if session is None:
            return
        headers = {**self.extra_headers, SESSION_HEADER: session}
        note = f"DELETE {self.shown_target} to end session {session}"
        try:
            request = self._client.build_request("DELETE", self.target, headers=headers, timeout=DELETE_TIMEOUT_S,
                                                 cookies=self.cookies or None)
            response = await self._client.send(request)
            note += f": HTTP {response.status_code} {response.reason_phrase}"
        except (httpx.HTTPError, OSError, ValueError) as exc:
            note += f": {_explain(exc)}"
        self.record(WireEvent(direction="transport", raw="", note=note))


def request_url(url: str) -> str:
    """The URL as a request to `url` puts it on the wire: what a URL may not hold percent-encoded, dot segments
    taken out, and no fragment (it never leaves the client). A URL httpx refuses is given back as it is."""
    try:
        return str(httpx.URL(url).copy_with(fragment=None))
    except (httpx.InvalidURL, TypeError, ValueError):
        return url


def body_size(headers: list[list[str]] | list[tuple[str, str]]) -> int:
    """An answer's body size by its Content-Length, as HAR's bodySize (-1, HAR's "unknown", without one that
    reads): for an answer whose body was not kept, as a 2024-11-05 POST's 202."""
    length = next((v for k, v in headers if k.lower() == "content-length"), "")
    return int(length) if length.strip().isdigit() else -1


def redact_url(url: str) -> str:
    """The URL for messages: no userinfo, no query (either may hold a credential)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unparseable URL)"
    return f"{parts.scheme}://{host}{port}{parts.path}" + ("?…" if parts.query else "")


def _short(text: str, limit: int = 80) -> str:
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def _excerpt(body: str, limit: int = 200) -> str:
    """A short, one-line look at a body for a message (the wire record keeps all of it)."""
    flat = " ".join(body.split())
    if not flat:
        return "(empty body)"
    return repr(flat[:limit] + ("…" if len(flat) > limit else ""))


def _explain(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed ({exc or 'refused'})"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"unsupported URL ({exc})"
    if isinstance(exc, httpx.RemoteProtocolError) and "Receive buffer too long" in str(exc):
        # h11's words for an answer head that does not end within its bound
        return f"the answer's headers passed {H11_HEAD_BOUND // 1024} KiB without ending (RemoteProtocolError: {exc})"
    return f"{type(exc).__name__}: {exc}"

