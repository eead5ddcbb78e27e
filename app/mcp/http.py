"""Streamable HTTP (2026-07-28): one POST per message, answered with JSON or an SSE stream."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from app.mcp.errors import (
    AuthChallenged,
    ConnectFailed,
    ProtocolViolation,
    SessionExpired,
    TransportError,
    expired_note,
)
from app.mcp.http_answer import Answer, HttpExchange, content_type, excerpt, shortened
from app.mcp.inflate import body_pieces
from app.mcp.jsonrpc import Frame, encode, parse_frame
from app.mcp.oauth.challenge import bearer_challenge
from app.mcp.secret import MASK, Secret, header_masks, reveal
from app.mcp.sse import SeenIds
from app.mcp.standalone import StandaloneStream
from app.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    ServerMessageSink,
    codec_of,
    replaced,
    replaced_note,
)
from app.mcp.wire import Recorder, WireEvent, recorded_headers, wire_headers

ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = "Mcp-Session-Id"
DELETE_TIMEOUT_S = 5.0  # closing must not hang on a server that ignores the DELETE
# A notification's (or an answer's) POST is waited for this long at most: no request deadline covers it, and a
# server that never answers one held the connect (notifications/initialized), a cancel, and a pool slot forever.
NOTIFY_TIMEOUT_S = 10.0



H11_HEAD_BOUND = 64 * 1024  # h11's max_incomplete_event_size, as httpcore leaves it
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")


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


class HttpTransport:
    kind = "http"

    def __init__(
        self,
        url: str | Secret,
        client: httpx.AsyncClient,
        record: Recorder,
        extra_headers: Mapping[str, str | Secret] | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_stream_bytes: int = DEFAULT_MAX_STREAM_BYTES,
    ) -> None:
        self.target = userinfo_unless_authorization(reveal(url), extra_headers or {})
        self.shown_target = redact_url(reveal(url))
        self._url: httpx.URL | None = None  # the target parsed once, at its first request (see _post)
        self._client = client
        self.record = record
        self.extra_headers = {k: reveal(v) for k, v in (extra_headers or {}).items()}
        # How the recorded request shows a secret header: its mask, never the value sent (see recorded_headers).
        self.secret_headers = header_masks(url, extra_headers or {})
        self.bearer_version = 0  # which token a request went with: a refusal of an older one just goes again
        self._typed_authorization = any(k.lower() == "authorization" for k in self.extra_headers) or \
            "@" in urlsplit(self.target).netloc
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
                raise ProtocolViolation(f"the server's {SESSION_HEADER} {shortened(value)} is not visible ASCII "
                                        "(0x21-0x7E), as 2025-11-25 requires of a session id: it cannot be sent back")
            self.session_id = value

    async def _post(self, message: dict[str, Any], headers: dict[str, str], key: str,
                    timeout: float | None = None) -> Answer:
        try:
            body = encode(message)
            content = body.encode("utf-8")
            merged = self._headers(headers)
            if self._url is None:  # parsed once (httpx parses a str on every request): an invalid one fails here
                self._url = httpx.URL(self.target)
            request = self._client.build_request(
                "POST", self._url, content=content, headers=merged, cookies=self.cookies or None,
                timeout=httpx.Timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT)
        except (ValueError, TypeError, httpx.InvalidURL) as exc:  # UnicodeEncodeError is a ValueError
            note = f"could not build the request to {self.shown_target}: {exc}"
            self.record(WireEvent(direction="transport", raw="", exchange=key, note=note))
            raise ConnectFailed(note) from exc
        # Made now (its time is the send's), recorded once: in the loop turn after the request went out (while
        # the target reads it, the console records it), or before any note if it never did. Either way before
        # anything the target answers, which can only be read in a later turn.
        sent = WireEvent(direction="out", raw=body, frame=None, exchange=key,
                         headers=recorded_headers(request.headers, self.secret_headers))
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
        version = self.bearer_version
        response = await self._post(message, headers, key)
        if response.status_code in (401, 403):
            await self._challenged(response, key, version)
        return HttpExchange(self, response, key, message.get("id"), discovery, headers)

    def use_bearer(self, token: str | None) -> None:
        """Send `Authorization: Bearer <token>` on every request from now on (None: stop); recorded as its mask.
        An OAuth grant's token (app/mcp/oauth/driver.py); never put in a query."""
        self.extra_headers = {k: v for k, v in self.extra_headers.items() if k.lower() != "authorization"}
        self.secret_headers.pop("authorization", None)
        self.bearer_version += 1
        if token is not None:
            self.extra_headers["Authorization"] = f"Bearer {token}"
            self.secret_headers["authorization"] = f"Bearer {MASK}"

    @property
    def typed_authorization(self) -> bool:
        """Whether the person typed an Authorization header (or a URL with a user): then OAuth stays out of it."""
        return self._typed_authorization

    async def _challenged(self, response: Answer, key: str, version: int) -> None:
        """A 401, or a 403 that asks for more scope: the body is the server's word on it (kept, not linted as
        JSON-RPC), and the request ends with AuthChallenged for the client's authorizer."""
        challenge = bearer_challenge(response.status_code, _answer_headers(response))
        if response.status_code == 403 and not challenge.insufficient_scope:
            return  # a plain 403 is the server's answer: read as any other
        try:
            raw = await self._bounded_body(response)
        except httpx.HTTPError:
            raw = b""
        finally:
            await response.aclose()
        if raw:
            self.record(WireEvent(direction="in", raw=raw.decode("utf-8", errors="replace"), exchange=key,
                                  http_status=response.status_code, signal="oauth"))
        what = "asks for more scope" if challenge.insufficient_scope else "asks for authorization"
        body = raw.decode("utf-8", errors="replace")
        said = f": {excerpt(body)}" if body else ""
        raise AuthChallenged(f"HTTP {response.status_code} {response.reason_phrase} from the server{said} (it {what}; "
                             f"{challenge.describe()})", challenge, key, version)

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
        ctype = content_type(response)
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
        codec = codec_of(response)  # read as a request's answer is: in its charset, said when replaced
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
                                    f"({excerpt(body)})")

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


def userinfo_unless_authorization(url: str, headers: Mapping[str, str | Secret]) -> str:
    """The URL to send to. httpx turns a URL's user and password into `Authorization: Basic …` and puts it over an
    Authorization header the person typed; the typed header is what they asked for, so then the userinfo goes."""
    if not any(name.lower() == "authorization" for name in headers):
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
