"""An incremental Server-Sent Events parser that is lenient where real servers differ.

The Python SDK ends lines with CRLF and sends no ids; TypeScript servers use LF, an `id:` on
every event and a priming event with an empty `data:`. Comments (`:` lines) are keep-alives.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

SEEN_IDS_KEPT = 4096  # the ids a session remembers (a replay comes soon after the original: a reopen)
_RETRY_DIGITS = 12
# An id a reconnect can send back as Last-Event-ID: printable ASCII, no edge space (HTTP would trim it), bounded.
_SENDABLE_ID = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,1022}[\x21-\x7e])?")
_SHORT_ID = 128       # longer ids are remembered by digest: 4096 ids of a megabyte each must not stay in memory


class SseEvent(NamedTuple):
    """One event (immutable; a tuple: made in half the time of a frozen dataclass, once per event of a flood)."""

    data: str
    event: str = "message"
    id: str | None = None


_MESSAGE = "event: message\ndata: "  # how the Python SDK begins an event (its CRLFs read as LFs)
_MESSAGE_LEN = len(_MESSAGE)


class SseParser:
    """Feed text chunks in; complete events come out. Holds at most one partial line."""

    def __init__(self, max_event_bytes: int = 64 * 1024 * 1024) -> None:
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._size = 0
        self._max = max_event_bytes
        self.comments = 0
        self.retry_ms: int | None = None  # the server's last `retry:` (how long to wait before reconnecting)
        self.last_id: str | None = None   # the last event id seen (what a reconnect sends as Last-Event-ID)

    def feed(self, chunk: str) -> list[SseEvent]:
        """The chunk's complete lines, split in bulk (str methods over the whole chunk, no copy of the rest of
        the buffer per line: a 64 KiB chunk of small events was quadratic), then read line by line."""
        buf = self._buffer + chunk if self._buffer else chunk
        cut = len(buf) - 1 if buf.endswith("\r") else len(buf)  # a CR at the end may be half of a CRLF: wait
        end = max(buf.rfind("\n", 0, cut), buf.rfind("\r", 0, cut))
        if end < 0:
            self._buffer = buf
            if len(buf) > self._max:
                raise ValueError(f"SSE line longer than {self._max} bytes")
            return []
        complete, self._buffer = buf[: end + 1], buf[end + 1 :]
        if len(self._buffer) > self._max:
            raise ValueError(f"SSE line longer than {self._max} bytes")
        if "\r" in complete:  # CRLF or a lone CR: both end a line, as LF does
            complete = complete.replace("\r\n", "\n").replace("\r", "\n")
        events: list[SseEvent] = []
        if self._data or self._event or "\n\n" not in complete:  # an event begun before, or none ends here
            lines = complete.split("\n")
            lines.pop()  # what follows the last line end: nothing (the rest stayed in the buffer)
            self._read(lines, events)
            return events
        # Whole events, each the text before a blank line (an event ends there: what `_read` would be left with
        # after it is nothing, so the next one starts afresh). Nearly every event of a flood is one data line,
        # maybe after `event: message` (the Python SDK's shape): taken whole, without reading its lines.
        blocks = complete.split("\n\n")
        tail = blocks.pop()  # the lines after the last blank line: an event not ended yet ("" when none)
        limit = self._max
        for block in blocks:
            value = block[_MESSAGE_LEN:] if block.startswith(_MESSAGE) else \
                block[6:] if block.startswith("data: ") else None
            if value is not None and "\n" not in value:
                if len(value) > limit:
                    raise ValueError(f"SSE event larger than {limit} bytes")
                events.append(SseEvent(value, "message", self._id))
            else:
                lines = block.split("\n")
                lines.append("")  # the blank line that ends it
                self._read(lines, events)
        if tail:
            lines = tail.split("\n")
            lines.pop()
            self._read(lines, events)
        return events

    def _read(self, lines: list[str], events: list[SseEvent]) -> None:
        """Read whole lines into the event being built; each event they end goes into `events`."""
        # The lines of nearly every event (`data:`, `event:`, the blank line that ends it) are read here, in the
        # loop, as `_line` reads them: a method call per line was a third of the parser's time in a flood.
        data, size, limit = self._data, self._size, self._max
        for line in lines:
            if line.startswith("data:"):
                value = line[6:] if line.startswith(" ", 5) else line[5:]
                data.append(value)
                size += len(value)
                if size > limit:
                    self._size = size
                    raise ValueError(f"SSE event larger than {limit} bytes")
            elif not line:
                if data or self._event:
                    events.append(SseEvent("\n".join(data), self._event or "message", self._id))
                    data = self._data = []
                    self._event, size = "", 0
            elif line.startswith("event:"):
                self._event = line[7:] if line.startswith(" ", 6) else line[6:]
            else:
                self._size = size
                self._line(line)  # never an event: only a blank line ends one
                size = self._size
        self._size = size

    def finish(self) -> list[SseEvent]:
        """Flush at end of stream: a last event without its blank line still counts."""
        events = self.feed("\n") if self._buffer else []
        if self._data:
            events.append(self._dispatch())
        return [e for e in events if e is not None]

    def unfinished(self) -> str | None:
        """The data of the event being built, when the stream stops inside it: its data lines so far and the line
        not yet ended, if that is a data line. None when no event was begun."""
        data = list(self._data)
        line = self._buffer
        if line.startswith("data:"):
            data.append(line[6:] if line.startswith(" ", 5) else line[5:])
        return "\n".join(data) if data else None

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            return self._dispatch() if (self._data or self._event) else None
        if line.startswith(":"):
            self.comments += 1
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value)
            if self._size > self._max:
                raise ValueError(f"SSE event larger than {self._max} bytes")
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
            self.last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():  # ASCII digits only, as the spec says:
            # str.isdigit() also takes "²" (int() raises) and "١٢" (int() reads 12). Past 12 digits (30 years of
            # milliseconds) the value is no different to a reader that caps it, and int() refuses 4300 digits.
            digits = value.lstrip("0") or "0"
            self.retry_ms = int(digits) if len(digits) <= _RETRY_DIGITS else int("9" * _RETRY_DIGITS)
        return None  # unknown fields are ignored, as the SSE spec says

    def _dispatch(self) -> SseEvent:
        event = SseEvent(data="\n".join(self._data), event=self._event or "message", id=self._id)
        self._data, self._event, self._size = [], "", 0
        return event


class SeenIds:
    """The SSE event ids a 2025-11-25 session has delivered (the last SEEN_IDS_KEPT of them).

    That revision makes an id unique across all of a session's streams, so an id seen again is a replay: a
    resumption that resends what it delivered before (or a server that resends one event on every reopen, for ever).
    Its event is not delivered twice: a server request would open a second dialog, a list_changed refresh again.
    """

    def __init__(self, keep: int = SEEN_IDS_KEPT) -> None:
        self._keep = keep
        self._order: deque[str | bytes] = deque()
        self._seen: set[str | bytes] = set()

    def first_time(self, event_id: str) -> bool:
        """True the first time `event_id` is seen (and it is remembered), False for a replay."""
        mark: str | bytes = event_id if len(event_id) <= _SHORT_ID else \
            hashlib.blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if mark in self._seen:
            return False
        self._seen.add(mark)
        self._order.append(mark)
        if len(self._order) > self._keep:
            self._seen.discard(self._order.popleft())
        return True


def sendable_id(event_id: str) -> bool:
    """Whether an SSE id can go back in a Last-Event-ID header (an SSE id may hold any text but NUL and line ends;
    a header cannot: an id like "événement-1" failed every reopen of the stream that carried it)."""
    return _SENDABLE_ID.fullmatch(event_id) is not None


# What a HAR's SSE text is: the events as the console read them, written out again (the console keeps each event's
# data, not the stream's bytes), so the file does not pass it off as the stream itself.
SSE_REBUILT = ("rebuilt from the events as read: each event's data, as data lines; the stream's comments, event, "
               "id and retry fields and its line endings are not kept (the frames' notes give the ids)")


def sse_text(events: Iterable[str]) -> str:
    """Events' data as SSE text, a `data:` line per line of each (one `data:` before data with a newline in it
    left its later lines without a field name, and any SSE reader drops those)."""
    return "".join("".join(f"data: {line}\n" for line in data.split("\n")) + "\n" for data in events)
