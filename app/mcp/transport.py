"""The transport seam: send one request, get back the frames that belong to it."""

from __future__ import annotations

import codecs
import email.message
from collections.abc import AsyncIterator, Callable
from functools import lru_cache
from typing import Any, Protocol

from app.mcp.jsonrpc import Frame

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_STREAM_BYTES = 64 * 1024 * 1024
# Where a transport hands a server message that belongs to no request of ours: a notification or request
# outside any request's stream (stdio), or anything on the 2025-11-25 standalone GET stream (HTTP).
ServerMessageSink = Callable[[Frame], None]
SESSION_MESSAGE_NOTE = "a server message for the session (not part of any request)"


@lru_cache(maxsize=64)
def text_codec(charset: str | None) -> str:
    """The codec a target's answer is read with: its charset when that is a text encoding that decodes with
    errors="replace", else UTF-8.

    httpx takes as an answer's encoding any codec Python knows: a target's `charset=base64`, `rot13`, `uu_codec`
    (bytes codecs), `idna` (refuses "replace") or `undefined` then made every decode of the answer raise
    (LookupError, TypeError, AssertionError, UnicodeError), and the call died with a 500. The name is the
    target's, so the probe catches anything; a handful of names per console, so the answers are kept.
    """
    if not charset:
        return "utf-8"
    try:
        if not getattr(codecs.lookup(charset), "_is_text_encoding", True):
            return "utf-8"
        probe = codecs.getincrementaldecoder(charset)(errors="replace").decode(b"", final=True)
    except Exception:  # whatever a codec raises for a name a server chose
        return "utf-8"
    return charset if isinstance(probe, str) else "utf-8"


@lru_cache(maxsize=64)
def answer_codec(content_type: str | None) -> str:
    """The codec an answer with this Content-Type is read in: its charset parameter as httpx's `Response.encoding`
    reads it (email.message's parameter parsing, RFC 2231 too), then `text_codec`. Cached by the header's value: a
    target sends the same one on every answer, and parsing it built an email Message per answer (~4% of a call's CPU
    under bench.latency)."""
    if content_type is None:
        return "utf-8"
    message = email.message.Message()
    message["content-type"] = content_type
    return text_codec(message.get_content_charset(failobj=None))


class HasHeaders(Protocol):
    @property
    def headers(self) -> Any: ...


def codec_of(response: HasHeaders) -> str:
    """`answer_codec` of an httpx answer (the console never sets an answer's `encoding` by hand)."""
    return answer_codec(response.headers.get("content-type"))


def replaced(raw: bytes, text: str, codec: str) -> bool:
    """Whether `text`, decoded from `raw` with errors="replace", holds a U+FFFD the bytes did not spell: bytes that
    are not valid in `codec`, which the record can only show as that character. An ASCII text is told at once."""
    if text.isascii() or "\ufffd" not in text:
        return False
    try:
        genuine = raw.count("\ufffd".encode(codec))
    except (UnicodeError, LookupError):  # a codec with no U+FFFD: every one is a replacement
        genuine = 0
    return text.count("\ufffd") > genuine


REPLACED = "the server sent bytes that are not valid "  # how the note begins (exports look for it)


def replaced_note(codec: str) -> str:
    return f"{REPLACED}{codec}: each is shown here as U+FFFD (the record keeps text, not the bytes themselves)"


class StreamText:
    """A stream's bytes as text, a piece at a time, in its charset (see text_codec) with errors="replace": a
    character split across pieces is kept whole, and `decode` says whether the piece held bytes not valid there
    (shown as U+FFFD). The target's own U+FFFD, whole or split across two pieces, is no replacement."""

    def __init__(self, charset: str | None) -> None:
        self.codec = text_codec(charset)
        self._decoder = codecs.getincrementaldecoder(self.codec)(errors="replace")
        self._before = b""  # the last two bytes read

    def decode(self, piece: bytes, final: bool = False) -> tuple[str, bool]:
        text = self._decoder.decode(piece, final)
        before, self._before = self._before, (self._before + piece[-2:])[-2:]
        if text.isascii() or "\ufffd" not in text:  # nearly every piece: no copy of it made
            return text, False
        # With the bytes before it: a U+FFFD split across pieces is spelled by them together.
        return text, replaced(before + piece, text, self.codec)


def size_text(n: int) -> str:
    """A byte count as people read settings: 64 MiB, 512 KiB, 1000 bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def stream_bound_note(limit: int, read: int) -> str:
    """What the entry says when a transport stops reading a stream (the same words on HTTP and stdio)."""
    return (f"stopped reading: the response stream passed {size_text(limit)} (setting max_stream_bytes); "
            f"{read} bytes were read and what came before is kept")


class Exchange(Protocol):
    """The frames coming back for one request, ending with (or before) its final response."""

    def frames(self) -> AsyncIterator[Frame]: ...

    async def cancel(self, reason: str, notify: bool = False) -> None:
        """Ask the server to stop: HTTP closes the stream, stdio sends notifications/cancelled.

        `notify` is the era's `cancel_by_notification`: HTTP then POSTs notifications/cancelled before
        closing (2025-11-25). Transports that always send the notification ignore it.
        """

    async def answer(self, message: dict[str, Any]) -> None:
        """Send a JSON-RPC response to a request the server made on this exchange's stream."""

    async def aclose(self) -> None: ...


class Transport(Protocol):
    kind: str
    target: str
    # Set by the client that drives the transport; None drops such messages after recording them.
    on_server_message: ServerMessageSink | None

    async def start(self) -> None: ...

    async def open(self, message: dict[str, Any], headers: dict[str, str], key: str) -> Exchange:
        """Send a request and return its exchange. Raises TransportError when it cannot be sent."""

    async def notify(self, message: dict[str, Any], headers: dict[str, str], key: str) -> None: ...

    async def close(self) -> None: ...
