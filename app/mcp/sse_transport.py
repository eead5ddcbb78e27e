"""The 2024-11-05 HTTP+SSE transport, for servers that only have it (an explicit choice, never probed).

One long GET (the SSE stream) carries everything the server sends; its first event, `endpoint`, names the
URL to POST messages to. A POST is answered 202 with no body: the JSON-RPC answer comes on the stream, so
frames are routed as on stdio (responses by id, progress by token, a server request to the newest request in
flight, the rest to `on_server_message`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from app.mcp.errors import ConnectFailed, McpError, ProtocolViolation, StreamLost, StreamTooLarge, TransportError
from app.mcp.http import userinfo_unless_authorization
from app.mcp.inflate import body_pieces
from app.mcp.jsonrpc import Frame, encode, notification, parse_frame
from app.mcp.secret import MASK, Secret, header_masks, reveal
from app.mcp.sse import SseParser
from app.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    SESSION_MESSAGE_NOTE,
    ServerMessageSink,
    StreamText,
    codec_of,
    replaced_note,
    stream_bound_note,
)
from app.mcp.wire import Recorder, WireEvent, recorded_headers, wire_headers

# What an export says of such an exchange: the POST's own answer is its status and headers (a 202, no body), and
# what is shown as its content is what came for it on the stream, which no HAR reader would guess.
ANSWERED_ON_STREAM = ("the POST was answered with no JSON-RPC in its body (the 2024-11-05 HTTP+SSE transport): this "
                      "content is what arrived for the request as message events on the SSE stream (the GET to the "
                      "target's URL), its JSON-RPC answer last; status and headers are the POST's own")
# A cURL of such a POST reaches the server only while the stream that named the endpoint is open.
LIVE_STREAM_NOTE = ("# needs a live SSE stream: this POST goes to the endpoint a 2024-11-05 server named on the GET "
                    "stream it opened for this session; the answer comes on that stream, and the endpoint (its "
                    "sessionId) works only while it is open")
ENDPOINT_TIMEOUT_S = 10.0  # the endpoint event must come promptly after the GET is answered
STREAM_TIMEOUT = httpx.Timeout(10.0, read=None)  # the stream may stay quiet for hours
_LOST = object()
_BOUNDED = object()  # the request's frames passed max_stream_bytes: frames() raises StreamTooLarge
MUTED_KEPT = 64      # requests stopped at the bound whose later frames are dropped (ids and progress tokens)


class SseExchange:
    def __init__(self, transport: HttpSseTransport, request_id: Any, key: str) -> None:
        self._t = transport
        self.request_id = request_id
        self.key = key
        self.queue: asyncio.Queue[Frame | object] = asyncio.Queue()
        self.bytes_in = 0  # what the one stream carried for this request, counted against max_stream_bytes
        self.bound_note = ""
        self.token: Any = None
        self.said_replaced = False  # its frames held bytes shown as U+FFFD, and its entry says so (once)

    async def frames(self) -> AsyncIterator[Frame]:
        try:
            while True:
                item = await self.queue.get()
                if item is _LOST:
                    raise StreamLost(self._t.lost_reason or "the SSE stream ended")
                if item is _BOUNDED:
                    raise StreamTooLarge(self.bound_note)
                assert isinstance(item, Frame)
                yield item
                if item.kind in ("response", "error") and item.id == self.request_id:
                    return
        finally:
            self._t.forget(self)

    async def cancel(self, reason: str, notify: bool = False) -> None:
        await self._t.notify(notification("notifications/cancelled", {"requestId": self.request_id,
                                                                        "reason": reason}), {}, self.key)

    async def answer(self, message: dict[str, Any]) -> None:
        await self._t.notify(message, {}, self.key)

    async def aclose(self) -> None:
        self._t.forget(self)


class HttpSseTransport:
    kind = "http"

    def __init__(self, url: str | Secret, client: httpx.AsyncClient, record: Recorder,
                 extra_headers: Mapping[str, str | Secret] | None = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES) -> None:
        self.target = userinfo_unless_authorization(reveal(url), extra_headers or {})
        self.shown_target = str(url)  # for notes: a secret part of the URL as its mask
        self._client = client
        self.record = record
        self.extra_headers = {k: reveal(v) for k, v in (extra_headers or {}).items()}
        self.secret_headers = header_masks(url, extra_headers or {})  # see HttpTransport
        self._max = max_message_bytes
        self._max_stream = max_stream_bytes
        # Requests stopped at max_stream_bytes (their ids and tokens → frames dropped since): the one stream goes on
        # carrying what the server still sends for them, which is neither recorded nor routed.
        self._muted: dict[str | int, int] = {}
        self.cookies = httpx.Cookies()  # this target's own (the shared client keeps none: app/mcp/upstream.py)
        self.endpoint: str | None = None
        self.lost_reason = ""
        self.on_server_message: ServerMessageSink | None = None
        self._pending: dict[Any, SseExchange] = {}
        self._by_token: dict[Any, SseExchange] = {}
        self._response: httpx.Response | None = None
        self._reader: asyncio.Task[None] | None = None
        self._endpoint_known = asyncio.Event()
        self._said_replaced = False  # the same, for what is no request's (said on the session, once)

    def _note(self, note: str, key: str | None = None, status: int | None = None) -> None:
        self.record(WireEvent(direction="transport", raw="", exchange=key, http_status=status, note=note))

    async def start(self) -> None:
        headers = {**self.extra_headers, "Accept": "text/event-stream"}
        try:
            request = self._client.build_request("GET", self.target, headers=headers, timeout=STREAM_TIMEOUT,
                                                 cookies=self.cookies or None)
            self._response = await self._client.send(request, stream=True)
            self.cookies.extract_cookies(self._response)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise ConnectFailed(f"could not open the SSE stream at {self.shown_target}: {type(exc).__name__}: {exc}") \
                from exc
        status = self._response.status_code
        ctype = self._response.headers.get("content-type", "").split(";")[0].strip().lower()
        if not self._response.is_success or ctype != "text/event-stream":
            await self._response.aclose()
            raise ConnectFailed(f"GET {self.shown_target}: HTTP {status} ({ctype or 'no content type'}), "
                                "not an SSE stream")
        self._note(f"HTTP+SSE (2024-11-05) stream open: HTTP {status}", status=status)
        self._reader = asyncio.get_running_loop().create_task(self._read(self._response),
                                                              name=f"sse-{self.shown_target}")
        try:
            await asyncio.wait_for(self._endpoint_known.wait(), ENDPOINT_TIMEOUT_S)
        except TimeoutError as exc:
            await self.close()
            raise ConnectFailed(f"no endpoint event on the SSE stream within {ENDPOINT_TIMEOUT_S:g} s") from exc
        if self.endpoint is None:
            raise ConnectFailed(f"the SSE stream ended before its endpoint event: {self.lost_reason}")

    async def _read(self, response: httpx.Response) -> None:
        parser = SseParser(self._max)
        stream = StreamText(codec_of(response))
        # Bytes not valid in the charset were read into an event not yet ended. The one stream carries every
        # request's frames: it is said where the frame holding the U+FFFD goes (a frame of the same piece with the
        # target's own U+FFFD is told so too: the text cannot tell them apart).
        replacing = False
        try:
            async for chunk in body_pieces(response):
                text, was = stream.decode(chunk)
                replacing = replacing or was
                for event in parser.feed(text):
                    shown = stream.codec if replacing and "\ufffd" in event.data else None
                    if event.event == "endpoint":
                        self._take_endpoint(event.data, shown)
                    elif event.data:
                        self._route(event.data, shown)
                if replacing:  # still so only when the event not ended yet holds it
                    replacing = "\ufffd" in (parser.unfinished() or "")
            self.lost_reason = "the server ended the SSE stream"
        except (httpx.HTTPError, ValueError) as exc:
            self.lost_reason = f"the SSE stream broke: {type(exc).__name__}: {exc}"
        finally:
            self._note(self.lost_reason or "the SSE stream closed")
            self._endpoint_known.set()
            for exchange in list(self._pending.values()):
                exchange.queue.put_nowait(_LOST)

    def _say_replaced(self, codec: str, exchange: SseExchange | None) -> None:
        """Bytes not valid in the stream's charset are shown as U+FFFD: said once on the request's entry (as on a
        2026-07-28 request's stream), once on the session for what is no request's."""
        if exchange is None:
            if not self._said_replaced:
                self._said_replaced = True
                self._note(replaced_note(codec))
        elif not exchange.said_replaced:
            exchange.said_replaced = True
            self._note(replaced_note(codec), exchange.key)

    def _take_endpoint(self, data: str, replacing: str | None = None) -> None:
        if replacing is not None:
            self._say_replaced(replacing, None)
        url = urljoin(self.target, data.strip())
        ours, theirs = urlsplit(self.target), urlsplit(url)
        if (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc):
            # Posting our messages (and headers) to another origin would hand them to whoever the server names.
            self._note(f"endpoint event names another origin ({theirs.scheme}://{theirs.netloc}); ignored")
            return
        self.endpoint = url
        self._note(f"endpoint: POST messages to {theirs.path}")
        self._endpoint_known.set()

    def _recorded_url(self, url: str) -> str:
        """The endpoint as the record keeps it: a user and password the owner made secret (the endpoint is joined
        to the target's URL, so it carries them) as their mask."""
        if MASK + "@" not in self.shown_target:
            return url
        parts = urlsplit(url)
        return parts._replace(netloc=MASK + "@" + parts.netloc.rsplit("@", 1)[-1]).geturl()

    def _shown_endpoint(self) -> str:
        """The endpoint as messages name it: without its query, which holds the session id (`?sessionId=…`) that
        binds a POST to this stream, a credential as Mcp-Session-Id is; these messages reach link holders."""
        parts = urlsplit(self.endpoint or "")
        return f"{parts.scheme}://{parts.netloc}{parts.path}" + ("?…" if parts.query else "")

    def _route(self, data: str, replacing: str | None = None) -> None:
        """File one frame; `replacing` (the codec) says its text shows bytes not valid there as U+FFFD."""
        frame = parse_frame(data)
        target: SseExchange | None = None
        owner: Any = None  # the id or token that names the request this frame belongs to
        if frame.kind in ("response", "error"):
            owner = frame.id
            target = self._pending.get(frame.id)
        elif frame.kind != "invalid":
            token = owner = frame.params.get("progressToken")
            if token is not None:
                target = self._by_token.get(token) if isinstance(token, str | int) else None
            elif frame.kind == "request" and self._pending:
                target = list(self._pending.values())[-1]  # as on stdio: the newest request is the likeliest owner
        if target is None and self._muted and isinstance(owner, str | int) and owner in self._muted:
            self._muted[owner] += 1  # past its request's bound: dropped (the bound note said what came before)
            return
        if target is not None:
            target.bytes_in += len(data)
            if target.bytes_in > self._max_stream:
                self._stop_reading(target)
                return
        if replacing is not None:
            self._say_replaced(replacing, target)
        if target is None and frame.kind in ("notification", "request") and self.on_server_message is not None:
            self.record(WireEvent(direction="in", raw=data, frame=frame, note=SESSION_MESSAGE_NOTE,
                                  signal="session_message"))
            self.on_server_message(frame)
            return
        self.record(WireEvent(direction="in", raw=data, frame=frame, exchange=target.key if target else None,
                              note=None if target else "matches no request in flight"))
        if target is not None:
            target.queue.put_nowait(frame)

    def _stop_reading(self, exchange: SseExchange) -> None:
        """The request's frames passed max_stream_bytes: it ends with StreamTooLarge; what follows is dropped."""
        exchange.bound_note = stream_bound_note(self._max_stream, exchange.bytes_in)
        self._note(exchange.bound_note, exchange.key)
        self.forget(exchange)
        for owner in (exchange.request_id, exchange.token):
            if isinstance(owner, str | int):
                self._muted[owner] = 0
        while len(self._muted) > MUTED_KEPT:
            del self._muted[next(iter(self._muted))]
        exchange.queue.put_nowait(_BOUNDED)

    async def _post(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None:
        if self.endpoint is None or (self._reader is not None and self._reader.done()):
            raise StreamLost(self.lost_reason or "the SSE stream is not open")
        try:
            body = encode(message)
        except ValueError as exc:
            raise ProtocolViolation(f"the message cannot be sent as JSON: {exc}") from exc
        try:
            request = self._client.build_request("POST", self.endpoint, content=body.encode("utf-8"), headers={
                **self.extra_headers, **headers, "Content-Type": "application/json"}, cookies=self.cookies or None)
        except (httpx.HTTPError, OSError, ValueError) as exc:  # a header httpx cannot encode: nothing went out
            self.record(WireEvent(direction="out", raw=body, frame=parse_frame(body), exchange=key))
            raise ConnectFailed(f"could not POST to {self._shown_endpoint()}: {type(exc).__name__}: {exc}") from exc
        # Its headers and URL as sent, as the Streamable HTTP transport records its own: the HAR and cURL of the
        # exchange are this POST (to the endpoint, not the stream's URL), whose answer comes on the stream.
        self.record(WireEvent(direction="out", raw=body, frame=parse_frame(body), exchange=key,
                              headers=recorded_headers(request.headers, self.secret_headers),
                              url=self._recorded_url(str(request.url))))
        try:
            response = await self._client.send(request)
            self.cookies.extract_cookies(response)
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise ConnectFailed(f"could not POST to {self._shown_endpoint()}: {type(exc).__name__}: {exc}") from exc
        self.record(WireEvent(direction="transport", raw="", exchange=key, http_status=response.status_code,
                              headers=wire_headers(response.headers),
                              note=f"HTTP {response.status_code} {response.reason_phrase}"))
        if not response.is_success:
            # Its start, without a character the cut at 200 bytes split (a U+FFFD the server never sent).
            start = StreamText(codec_of(response))
            text, was = start.decode(response.content[:200])
            if was:
                self._note(replaced_note(start.codec), key)
            raise TransportError(f"POST {self._shown_endpoint()}: HTTP {response.status_code} {text!r}")

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> SseExchange:
        exchange = SseExchange(self, message.get("id"), key)
        self._pending[exchange.request_id] = exchange
        meta = message.get("params", {}).get("_meta", {})
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            exchange.token = meta["progressToken"]
            self._by_token[meta["progressToken"]] = exchange
        try:
            await self._post(message, headers, key)
        except McpError:
            self.forget(exchange)
            raise
        return exchange

    def forget(self, exchange: SseExchange) -> None:
        if self._pending.get(exchange.request_id) is exchange:
            del self._pending[exchange.request_id]
        for token, owner in list(self._by_token.items()):
            if owner is exchange:
                del self._by_token[token]

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None:
        await self._post(message, headers, key)

    async def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        if self._response is not None:
            await self._response.aclose()
