"""Session files in pieces: written from the store in chunks, read back with a streaming parse.

A session of 100,000 entries is a file of some 120 MB; built as one dict and dumped, it took seconds and
several times its size in memory. Here the export reads the store a chunk at a time (keyset pagination on
the sequence number) and writes each chunk's events as soon as they are masked; the import parses one
event at a time from the file and hands it on, so neither side holds more than a chunk.

The format is the one `export.session_file` always wrote (one JSON object, its `events` a list), so an
old file imports and a new one reads with any JSON parser.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import time
from collections.abc import Callable, Iterator
from itertools import compress, repeat
from json.encoder import encode_basestring_ascii
from json.scanner import make_scanner
from operator import itemgetter
from typing import IO, Any

import orjson

from app import __version__
from app.console import export
from app.console import store as store_module
from app.console.event_types import check_types, types_fit
from app.console.events import (
    EVENT_VERSION,
    TYPED_ANSWER_FIELDS,
    TimelineEvent,
    check,
    data_keys,
    keys_fit,
    load,
)
from app.console.secrets import mask_wire
from app.console.store import ImportRow, Store, StoredEvent
from app.console.target import target_from
from app.mcp import har

LINK_KINDS = frozenset({"link_created", "link_revoked"})  # a session's share links (see session_file)
READ_BYTES = 1 << 20   # characters read from an uploaded file at a time (an event cut at the end is parsed again)
_WS = " \t\r\n"


def session_file(session_id: str, meta: dict[str, Any], created: float, store: Store,
                 include_secrets: bool = False, chunk: int | None = None, share_links: bool = True) -> Iterator[str]:
    """The session file as pieces of text; joined, they are exactly one JSON document.

    `share_links` False leaves out the records of the session's share links (labels, roles, expiry, revocations):
    they are the owner's, and a link holder's page shows none of them, so neither does its file.
    """
    chunk = chunk or store_module.CHUNK
    meta = json.loads(json.dumps(meta))  # a deep copy we may mask
    # The events hold the target's secret values as masks already (app/console/scrub.py). The owner's own file
    # has the target as typed, and says so (see "secrets"); anyone else's has the masks.
    target = target_from(meta.get("target"), store.secrets(session_id) if include_secrets else None)
    meta = {**meta, "target": target.revealed(), "secrets_included": True} if include_secrets else \
        {**meta, "target": target.to_dict()}
    masked = not include_secrets
    head = {"format": export.FORMAT, "version": export.VERSION, "exported_at": har.iso(time.time()),
            "console_version": __version__, "secrets": "included" if include_secrets else "masked",
            "session": {"id": session_id, "created": created, "meta": meta}}
    text = json.dumps(head)
    if "NaN" in text or "Infinity" in text:  # a server's bare NaN in its discover answer or a list (see _strict_json)
        text = _strict_json(text)
    yield text[:-1] + ', "events": ['
    prefix = f'{{"v": {EVENT_VERSION}, "session_id": {json.dumps(session_id)}, "seq": '
    sep = ""
    after = 0
    while True:
        rows = store.event_rows(session_id, after_seq=after, limit=chunk)
        kept = rows if share_links else [row for row in rows if row.kind not in LINK_KINDS]
        if include_secrets and kept:  # the owner's own file: an event recorded with a secret masked, as it was
            exact = store.exact(session_id, [row.seq for row in kept])
            kept = [row._replace(data=exact[row.seq], v=EVENT_VERSION) if row.seq in exact else row for row in kept]
        if kept:
            yield sep + ", ".join(prefix + _event_text(row, masked) for row in kept)
            sep = ", "
        if rows:
            after = rows[-1].seq
        if len(rows) < chunk:
            break
    yield "]}"


def _event_text(row: StoredEvent, masked: bool) -> str:
    """One event of the file from its stored row: the stored JSON text is written as it is, unless it is of an
    older event version (migrated), or the file is masked and the event is a frame with headers (a credential the
    server sent under its name, `mask_wire`) or one that holds what was typed into a refused answer."""
    kind, data = row.kind, row.data
    if row.v != EVENT_VERSION:
        record = load(kind, json.loads(data), row.v)
        kind, data = record.kind, json.dumps(record.to_data())
    if masked and kind == "wire" and '"headers":null' not in data and '"headers": null' not in data:
        data = json.dumps(mask_wire(_loads(data)))
    if masked and kind in _ANSWERED_KINDS and not _nothing_typed(data):
        data = json.dumps({**json.loads(data), **{key: {} for key in TYPED_ANSWER_FIELDS}})
    elif masked and kind == "op_answered":  # an answer typed: the retry's frame carries what was sent
        data = json.dumps({**json.loads(data), "value": None})
    if "NaN" in data or "Infinity" in data:  # a C scan of each event's text: most have neither word in them
        data = _strict_json(data)
    return f'{row.seq}, "kind": {_json_str(kind)}, "at": {_json_at(row.at)}, "data": {data}}}'


# The events with TYPED_ANSWER_FIELDS: a masked file (the one that is shared) leaves them out.
_ANSWERED_KINDS = frozenset({"op_snapshot", "op_refused", "sr_snapshot", "sr_refused"})


def _nothing_typed(text: str) -> bool:
    """Whether the event's own `drafts` and `errors` are empty, read off its text as json.dumps writes it: each key
    spelled once in the whole text (a string cannot hold `"drafts": ` with its quotes unescaped, but a key of
    the server's, such as `x"drafts`, can) and empty. Anything else is parsed to be sure."""
    return (text.count('"drafts": ') == 1 and '"drafts": {}' in text
            and text.count('"errors": ') == 1 and '"errors": {}' in text)


def _strict_json(text: str) -> str:
    """The text with a bare NaN, Infinity or -Infinity written as null, as the JSON twin writes them.

    A server may send those words (Python's decoder takes them, and json.dumps writes them back), so an event's
    data can hold them; the file is then JSON to no reader but Python's (jq, a browser and orjson refuse it). The
    frame on the wire keeps them as they came: its raw text is a string. Words inside strings are left alone."""
    bare = False

    def null(_word: str) -> None:
        nonlocal bare
        bare = True
    value = json.loads(text, parse_constant=null)
    return json.dumps(value) if bare else text


# `json.dumps` of a lone string or float builds an encoder per call: some 1 and 3-8 µs, twice per event of an
# export (800,000 calls at 100k entries, most of its time). These spell the same text directly.
def _loads(text: str) -> Any:
    """`json.loads(text)`, by orjson where it reads the text as the stdlib would (`_fast_data`)."""
    value = _UNREAD if _has_long_digits(text) else _fast_data(text)
    return json.loads(text) if value is _UNREAD else value


def _json_str(kind: str) -> str:
    return encode_basestring_ascii(kind) if type(kind) is str else json.dumps(kind)


def _json_at(at: float) -> str:
    """`json.dumps(at)`: a finite float is its repr there too; anything else (NaN, a value of another type from an
    old row) goes the general way."""
    return float.__repr__(at) if type(at) is float and math.isfinite(at) else json.dumps(at)


class SessionFileReader:
    """A streaming parse of a session file: the header fields first, then its events one at a time.

    Reads the top-level object field by field; every value but the events list is small and parsed
    whole. Events that come before the session's header (a file some other tool wrote in another order)
    are kept until the header is read: the file's size limit bounds them.
    """

    def __init__(self, read: Callable[[int], str]) -> None:
        self._read = read
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._fields = 0
        self._items: Iterator[Any] | None = None
        self._early: list[ImportRow] = []
        self._long_digits = False  # the buffer has a run of 19 digits (a number orjson may read otherwise)
        # Where the buffer starts in the file, so an error says where in the file (not in the buffer) it is: the
        # characters dropped before it, the newlines among them, and where the line it starts in began.
        self._dropped = 0
        self._lines = 0
        self._line_start = 0
        self.header: dict[str, Any] = {}
        self._last_seq = 0  # the seq of the last event read (they must go up)

    @classmethod
    def of(cls, file: IO[bytes]) -> SessionFileReader:
        decoder = codecs.getincrementaldecoder("utf-8")()

        def read(n: int) -> str:
            data = file.read(n)
            return decoder.decode(data, final=not data)
        return cls(read)

    def open(self) -> tuple[dict[str, Any], float]:
        """Read the header (up to the events); validate it; returns (meta, created). Raises ValueError."""
        self._expect("{")
        self._items = self._next_fields()
        if self._items is not None and not isinstance(self.header.get("session"), dict):
            # Events before the header: kept (as rows) until it is read.
            self._early = [v if isinstance(v, ImportRow) else _row_of(_event(v)) for vs in self._items for v in vs]
            self._items = self._next_fields()
        meta, created, _ = export.read_session_file(self.header)
        return meta, created

    def events(self, session_id: str | None = None) -> Iterator[TimelineEvent]:
        """The file's events in order as typed events (placed in `session_id` when given); see `rows`."""
        for row in self.rows():
            event = TimelineEvent(session_id or self._session_id, row.seq, load(row.kind, row.data), row.at)
            event._data_json = row.text
            yield event

    def rows(self) -> Iterator[ImportRow]:
        """The file's events in order, each checked as it is read, as store rows (see `chunks`)."""
        for chunk in self.chunks():
            yield from chunk

    def chunks(self) -> Iterator[list[ImportRow]]:
        """The file's events in order, a chunk at a time, each checked as it is read, as store rows: no typed
        record is built for an event written as the console writes it (an import stores most of them as
        their text), and the loop over them is one function's (400,000 events at 100k entries)."""
        if self._early:
            yield self._in_order(self._early)
        self._early = []
        if self._items is not None:
            for items in self._items:
                yield self._in_order([item if isinstance(item, ImportRow) else _row_of(_event(item))
                                      for item in items])
            if self._next_fields() is not None:
                raise ValueError("the file has two events lists")
        self._ends()

    def _ends(self) -> None:
        """Past the session object's closing brace only whitespace may follow: anything more (a second object, a
        file pasted twice, a cut and joined download) was left out of the import without a word."""
        while True:
            if self._buf[self._pos:].strip(_WS):
                raise ValueError("there is data after the end of the session file's object")
            self._pos = len(self._buf)
            if not self._fill():
                return

    def _in_order(self, rows: list[ImportRow]) -> list[ImportRow]:
        """The rows, checked to go up one seq after another from 1 (as a session's events do): a repeated seq
        replaced the event before it in the store, one at 0 or below was stored and never read back, and events
        out of order showed in the file's order but exported in the store's."""
        last = self._last_seq
        for row in rows:
            if not last < row.seq <= MAX_SEQ:
                raise ValueError(f"the file's events do not go up one seq after another (seq {row.seq} after {last})")
            last = row.seq
        self._last_seq = last
        return rows

    @property
    def _session_id(self) -> str:
        session = self.header.get("session")
        return str(session.get("id") or "") if isinstance(session, dict) else ""

    def _next_fields(self) -> Iterator[Any] | None:
        """Header fields up to the events list (then its items, to iterate) or the object's end (None)."""
        while True:
            c = self._peek()
            if c == "}":
                self._pos += 1
                return None
            if self._fields:
                self._expect(",")
            self._fields += 1
            key = self._value()
            if not isinstance(key, str):
                raise ValueError("not an MCP Console session file")
            self._expect(":")
            if key in _READ_ONCE and key in self.header:
                # JSON's readers take the last of a repeated key; the import had already used the first.
                raise ValueError(f"the file has two {key!r} fields")
            if key == "events" and self._peek() == "[":
                self._pos += 1
                self.header["events"] = []  # validated as a list; its items stream
                return self._list_items()
            self.header[key] = self._value()

    def _list_items(self) -> Iterator[list[Any]]:
        """The events list's items, a chunk at a time: rows (read on the fast path) or parsed values."""
        first = True
        chunk: list[Any] = []
        scan, head_at, known = _SCAN, _EVENT_HEAD.match, _KNOWN
        misses, fast = 0, True
        slow = 0  # events left to the loop below before `_region` is tried again (it stopped short of them)
        after = -1  # where the last event ended when the next one's head as `session_file` writes it follows
        chunk_from = self._dropped + self._pos  # where in the file the chunk's first event begins
        while True:
            here = self._dropped + (after if after >= 0 else self._pos)
            if len(chunk) >= CHUNK or (chunk and here - chunk_from >= CHUNK_CHARS):
                yield chunk
                chunk = []
                chunk_from = here
            if after >= 0:  # past its "}, " at once: nothing there for `_peek` to skip or check
                buf, pos = self._buf, after + 3
                self._pos = after + 2  # where the general path below reads from (as after the "," below)
                after = -1
            else:
                c = self._peek()
                if c == "]":
                    self._pos += 1
                    if chunk:
                        yield chunk
                    return
                if not first:
                    if c != ",":
                        raise ValueError("the events list is not valid JSON")
                    self._pos += 1
                first = False
                buf, pos = self._buf, self._pos
                if buf.startswith(" ", pos):
                    pos += 1
            # The usual case inline: an event as the console writes it, right after ", ". Its data's JSON
            # text is kept as parsed, so the store need not serialize it again (400,000 times at 100k), and
            # its data is checked as a record would be (its keys), without building one.
            head = head_at(buf, pos)
            if head is not None and fast and not self._long_digits:
                if slow:
                    slow -= 1
                else:
                    rows, end, slow = _region(buf, head)
                    if rows:
                        after = end
                        chunk.extend(rows)
                        if len(chunk) >= CHUNK:
                            while len(chunk) >= CHUNK:  # the chunks the loop below makes, one event at a time
                                yield chunk[:CHUNK]
                                chunk = chunk[CHUNK:]
                            # The rest begins this much text before the run's end (their data, less their heads).
                            chunk_from = self._dropped + end - sum(len(row.text) for row in chunk)
                        continue
            if head is not None:
                start = head.end()
                # Faster still: the data's text ends where the next event's head begins; parsed by orjson when
                # it reads it as the stdlib would (see `_fast_data`), else scanned as before.
                end = buf.find(_NEXT_EVENT, start) if fast and not self._long_digits else -1
                text = buf[start:end] if end > start else ""
                data = _fast_data(text) if text else _UNREAD
                if data is _UNREAD:
                    try:
                        data, end = scan(buf, start) if len(buf) - start > _TAIL else _scan_tail(buf, start)
                    except (StopIteration, json.JSONDecodeError, RecursionError):  # cut off, not JSON, too deep:
                        # the general path below reads it again and says which (a deep file is a 400)
                        head = None
                    else:
                        text = buf[start:end]
                        if fast and end + len(_NEXT_EVENT) < len(buf) and not buf.startswith(_NEXT_EVENT, end):
                            # A whole event not followed by a head as the console writes it: a file of some other
                            # writer, whose next head `find` would look for in vain to the buffer's end each time.
                            misses += 1
                            fast = misses < _MISSES
                if head is not None and buf.startswith("}", end) and end + 1 < len(buf):
                    self._pos = end + 1
                    seq, kind, at = head.groups()
                    names = known.get(kind)
                    if names is None or type(data) is not dict or not names.issuperset(data):
                        check(kind, data)  # raises, or says this kind's check is a test of its keys
                        known.setdefault(kind, data_keys(kind))
                    check_types(kind, data)  # the values too: the fold and the pages read them as typed
                    chunk.append(ImportRow(_stored_seq(int(seq)), kind, _stored_at(float(at)), data, text))
                    if buf.startswith(_NEXT_EVENT, end):
                        after = end
                    continue
            chunk.append(self._value())

    def _peek(self) -> str:
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WS:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                raise ValueError("the session file ends too early")

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise ValueError("not an MCP Console session file" if not self._fields else "the file is not valid JSON")
        self._pos += 1

    def _value(self) -> Any:
        """One JSON value, reading more while it is cut off (at least doubling, so a big value costs little)."""
        self._peek()  # past the whitespace: raw_decode starts at a value
        want = len(self._buf) - self._pos
        while True:
            try:
                if self._eof or len(self._buf) - self._pos > _TAIL:
                    value, end = _decode(self._buf, self._pos)
                else:  # most likely cut off (the last event of a buffer): more is read, the error is not said
                    value, end = _decode(self._buf[self._pos:], 0)
                    end += self._pos
            except json.JSONDecodeError as exc:
                if self._eof:
                    raise self._located(exc) from exc
                want = max(2 * want, READ_BYTES)
                while len(self._buf) - self._pos < want and self._fill():
                    pass
                continue
            if end == len(self._buf) and self._fill():  # a number may go on past what was read
                continue
            self._pos = end
            return value

    def _located(self, exc: json.JSONDecodeError) -> ValueError:
        """The decoder's error, placed in the file: its own line, column and character count from the buffer's
        start, which is somewhere inside a file of any size."""
        at = self._dropped + exc.pos
        newlines = self._buf.count("\n", 0, exc.pos)
        line_start = (self._dropped + self._buf.rindex("\n", 0, exc.pos) + 1) if newlines else self._line_start
        return ValueError(f"{exc.msg}: line {self._lines + newlines + 1} column {at - line_start + 1} "
                          f"(char {at} of the file)")

    def _fill(self) -> bool:
        if self._eof:
            return False
        text = self._read(READ_BYTES)
        if not text:
            self._eof = True
            return False
        buf, pos = self._buf, self._pos
        if (lines := buf.count("\n", 0, pos)):
            self._lines += lines
            self._line_start = self._dropped + buf.rindex("\n", 0, pos) + 1
        self._dropped += pos
        self._buf = buf[pos:] + text
        self._pos = 0
        self._long_digits = _has_long_digits(self._buf)
        return True


def _event(value: Any, session_id: str | None = None) -> TimelineEvent:
    try:
        return TimelineEvent.of_dict(session_id, value) if session_id is not None else TimelineEvent.from_dict(value)
    except (TypeError, KeyError, AttributeError) as exc:  # not the shape of an event: the file is at fault
        raise ValueError(f"an event in the file is not valid ({type(exc).__name__}: {exc})") from exc


_DECODER = json.JSONDecoder()


def _decode(text: str, pos: int) -> tuple[Any, int]:
    """One JSON value at `pos`. A file nested deeper than the parser recurses is the file's fault, said as such:
    a ValueError (the import answers 400), not a RecursionError that fails the request."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError as exc:
        raise ValueError("the file nests JSON deeper than it can be read") from exc


def _scan_tail(buf: str, pos: int) -> tuple[Any, int]:
    """`_SCAN(buf, pos)` on a copy of the buffer's short rest: the event a buffer's end cuts fails there, and a
    JSONDecodeError counts the lines of all it was given (the buffer, 1 MB) for a message no one reads."""
    value, end = _SCAN(buf[pos:], 0)
    return value, pos + end


_READ_ONCE = frozenset({"format", "version", "session"})  # header fields an import reads: each may come once
_TAIL = 4096  # characters left in the buffer below which a value is parsed from a copy of them (see `_scan_tail`)
# What raw_decode calls, called directly on the hot path (typeshed types its argument as the scanner itself).
_SCAN: Callable[[str, int], tuple[Any, int]] = make_scanner(_DECODER)  # type: ignore[arg-type]
REGION_CHARS = 1 << 20  # characters of the buffer one run reads at most (READ_BYTES: a buffer as it is read)
# Events handed on at a time (an import stores a chunk while it reads the next): a power of two, so that a chunk
# is one multi-row INSERT (see app/console/sql_rows.py); two chunks held are some 10 MB.
CHUNK = 4096
# ... or fewer, when their text passes this many characters: a file of big events (a 36 MB file of 9 kB events is
# one chunk of 4,096) held two chunks' parsed values at once, ten times the file's share of them.
CHUNK_CHARS = 8 << 20
_KNOWN: dict[str, frozenset[str] | None] = {}  # kind → its data's keys, when a check is a test of them
# The keys before "data" as `session_file` writes them (at this event version; the session id is the new
# session's, whatever the file says); anything else takes the general path.
# The session id's string is matched unrolled (runs of plain characters between escapes): no alternation to try
# at every character, and linear whatever the text.
_EVENT_HEAD = re.compile(r'\{"v": ' + str(EVENT_VERSION) + r', "session_id": "[^"\\]*(?:\\.[^"\\]*)*", "seq": (\d+), '
                         r'"kind": "([a-z_]+)", "at": (-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?), "data": ')


# What ends an event's data when the next event follows as `session_file` writes it. The text can hold it only
# outside a string (a string's quotes are escaped), so a first match before the data's true end cuts the data
# short, and a value cut short is no JSON: whatever orjson parses whole between a head and this is the data.
_NEXT_EVENT = '}, {"v": ' + str(EVENT_VERSION) + ', "session_id": '
_MISSES = 8  # events not followed by such a head before the reader stops looking for it (a file of another writer)
_UNREAD: Any = object()  # not parsed here (Any: the caller's `data` is either)
_DEEP = 512  # brackets in a text from which the stdlib decides (it recurses; past some 990 levels it refuses)
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19  # 19 digits: a number past 64 bits may be one (orjson reads it as a float, the stdlib not)


def _fast_data(text: str) -> Any:
    """The data's text parsed by orjson, where it reads the text exactly as the stdlib's parser would; else
    `_UNREAD` (the caller scans it with the stdlib, which says what is wrong, if anything).

    orjson refuses what the stdlib reads and orjson does not (a lone surrogate, NaN, a float past the double's
    range, nesting past 1024) and those take the stdlib's path. What it reads differently is an integer past 64
    bits (a float): a buffer with a run of 19 digits is not parsed here at all (`_has_long_digits`). So too a
    text that could nest deeper than the stdlib reads: it must fail in the import as it fails on every read.
    """
    if text[0] != "{" or text[-1] != "}" or (len(text) > 2 * _DEEP and text.count("{") + text.count("[") >= _DEEP):
        return _UNREAD  # an object, from its first character to its last (else as the stdlib reads it); deep: its job
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _UNREAD


# A buffer's run of events as `session_file` writes them, read in one pass (`_region`): the separator between two
# events with the second one's head, whose `re.split` gives every head's fields and every data text of the run at
# once. It matches where the per-event loop finds `_NEXT_EVENT` and then matches `_EVENT_HEAD` after its "}, ".
_SPLIT = re.compile(r"\}, " + _EVENT_HEAD.pattern)
_FIELDS_PER_EVENT = _SPLIT.groups + 1  # what `_SPLIT.split` gives an event after the first: its head's groups, its data


def _region(buf: str, head: re.Match[str]) -> tuple[list[ImportRow], int, int]:
    """The events from `head` on to the last one whose data the buffer's last `_NEXT_EVENT` ends, read in one pass
    exactly as the per-event loop of `_list_items` reads them: (the rows of those it read, where the last of them
    ends, how many of the run's events the loop is to read itself before another run is tried). No rows: the
    loop reads them all (the first is read another way, or one is refused: the loop says which and why).

    Some 24 µs of Python per event went on finding its head, its end and its fields one at a time; here C loops
    do that for a run (some 3,000 events a buffer) and the checks go a field at a time over all events of a kind.
    The run stops before the first event the loop reads in another way (whitespace around its data, the next
    event's head inside it, ...): the loop reads that one and the rest of the run, so a file of such events costs
    one try a buffer, not one an event.
    """
    start = head.end()
    # At most REGION_CHARS of the buffer a run: after a big value the buffer grows to its size, and a run over all
    # of it held every part and row of it at once (three times the old reader's memory); the next run goes on.
    last = buf.rfind(_NEXT_EVENT, start, start + REGION_CHARS)
    if last <= start:
        return [], -1, 0
    text = buf[start:last]
    parts = _SPLIT.split(text)
    texts = parts[0::_FIELDS_PER_EVENT]
    values = _values(texts, text.count(_NEXT_EVENT) == len(texts) - 1)
    count = len(values)
    if not count:
        return [], -1, len(texts)
    seq, kind, at = head.groups()
    stop = _FIELDS_PER_EVENT * (count - 1)
    try:  # a seq or time of Unicode digits past int's limit: the loop raises what it raises
        seqs = _numbers(int, [seq, *parts[1:stop:_FIELDS_PER_EVENT]])
        ats = _numbers(float, [at, *parts[3:stop:_FIELDS_PER_EVENT]])
    except ValueError:
        return [], -1, len(texts)
    kinds = [kind, *parts[2:stop:_FIELDS_PER_EVENT]]
    # What `_stored_seq` and `_stored_at` refuse (the regex's digits make non-negative ints and finite or
    # infinite floats, never a NaN), and what `check` and `check_types` refuse: the loop says which event.
    if max(seqs) >= _INT64 or min(ats) < har.EARLIEST or max(ats) > har.LATEST or not _fit(kinds, values):
        return [], -1, len(texts)
    # `tuple.__new__(ImportRow, fields)`: the row without the generated `__new__` (a Python call per event)
    rows = list(map(tuple.__new__, repeat(ImportRow), zip(seqs, kinds, ats, values, texts[:count], strict=True)))
    end = last if count == len(texts) else start + _nth_match(text, count)  # where the event after them begins
    return rows, end, len(texts) - count


def _numbers(kind: type[int] | type[float], texts: list[str]) -> list[Any]:
    """`list(map(kind, texts))` for the head's numbers (digits as `_EVENT_HEAD` matches them): one orjson call
    where they are all JSON's spelling, a tenth of what `float` costs a time; else `kind` of each (a seq of
    other digits, a leading zero). JSON's spelling of a number reads as `kind` reads it: `int` of digits the
    same integer, `float` the nearest double (both round correctly; a time spelled as an integer is made one)."""
    try:
        numbers = orjson.loads("[" + ",".join(texts) + "]")
    except orjson.JSONDecodeError:
        return list(map(kind, texts))
    if len(numbers) != len(texts) or set(map(type, numbers)) != {kind}:  # a time spelled "1796289887": an int
        return list(map(kind, texts))
    return numbers  # type: ignore[no-any-return]


def _nth_match(text: str, n: int) -> int:
    """Where the `n`-th (from 1) separator of the run begins (a run that stops short of its end: rare)."""
    for i, match in enumerate(_SPLIT.finditer(text), 1):
        if i == n:
            return match.start()
    raise AssertionError("fewer separators than the split made")


def _values(texts: list[str], whole: bool) -> list[Any]:
    """The data of the run's events, from the first, as the per-event loop parses each text (orjson, or the
    stdlib where it declines), up to the first the loop reads otherwise. `whole`: no text holds an
    `_NEXT_EVENT` the split did not cut at (whose head is not as the console writes it)."""
    values: list[Any] = []
    plain = whole and _plain(texts)
    # One iterator for every restart: orjson's error leaves it past the text it refused (read below by `_one`).
    # An islice from len(values) for each restart stepped over every text read before: quadratic in a buffer of
    # texts orjson and the stdlib read differently (every other one a NaN).
    rest = iter(texts)
    while len(values) < len(texts):
        if plain:  # every text an object from its first character to its last, none deep: `_fast_data` parses it
            try:  # orjson's error keeps what the map gave before it (the texts it read): the next is read below
                values.extend(map(orjson.loads, rest))
                break
            except orjson.JSONDecodeError:
                pass
        value = _one(texts[len(values)])
        if value is _UNREAD:
            break
        values.append(value)
    return values


_FIRST, _LAST = itemgetter(slice(0, 1)), itemgetter(slice(-1, None))  # "" of an empty text: never equal


def _plain(texts: list[str]) -> bool:
    """Whether `_fast_data` gives each text to orjson whole (an object's text, not one that could nest deep)."""
    # Each text's first and last character joined: two C loops and a compare (half of a startswith map's cost)
    if "".join(map(_FIRST, texts)) != "{" * len(texts) or "".join(map(_LAST, texts)) != "}" * len(texts):
        return False
    if max(map(len, texts)) <= 2 * _DEEP:  # the usual run: no text long enough to be deep
        return True
    long = compress(texts, map((2 * _DEEP).__lt__, map(len, texts)))
    return not any(t.count("{") + t.count("[") >= _DEEP for t in long)


def _one(text: str) -> Any:
    """One event's data as the per-event loop reads it when it is the whole text between two heads; else `_UNREAD`
    (empty, the next event's head inside it, not JSON, cut short, ending before the next head, not an object)."""
    if not text or _NEXT_EVENT in text:
        return _UNREAD
    value = _fast_data(text)
    if value is _UNREAD:
        try:  # as the loop's stdlib scan of the buffer, which stops at the same character (a value ends at its last)
            value, end = _SCAN(text, 0)
        except (StopIteration, json.JSONDecodeError, RecursionError):  # deeper here than in the loop: its call
            return _UNREAD
        if end != len(text):
            return _UNREAD
    return value if type(value) is dict else _UNREAD


def _fit(kinds: list[str], values: list[dict[str, Any]]) -> bool:
    """Whether `check` and `check_types` pass every event's data: all events of a kind at once."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for kind, value in zip(kinds, values, strict=True):
        group = by_kind.get(kind)
        if group is None:
            group = by_kind[kind] = []
        group.append(value)
    return all(keys_fit(kind, group) and types_fit(kind, group) for kind, group in by_kind.items())


def _has_long_digits(text: str) -> bool:
    """Whether the text holds 19 digits in a row (in a number or not: a cheap and sufficient test)."""
    return _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(_DIGITS)


def _row_of(event: TimelineEvent) -> ImportRow:
    check_types(event.kind, event.data)  # after a version-1 event's migration: what is stored is checked
    return ImportRow(_stored_seq(event.seq), event.kind, _stored_at(event.at), event.data, event.data_json)


_INT64 = 1 << 63
MAX_SEQ = 1 << 53  # the highest seq of a file's event: a page's script reads seqs as doubles, exact up to here


# What the events table can hold (seq INTEGER NOT NULL, at REAL NOT NULL), checked as a file's event is read:
# a NaN binds as NULL and an integer past 64 bits does not bind at all, and the writer thread's failed statement
# took its whole chunk (2,000 events) with it while the import answered 200. Such a file is refused instead.
def _stored_seq(seq: Any) -> int:
    if type(seq) is not int or not -_INT64 <= seq < _INT64:
        raise ValueError(f"an event's seq is not a 64-bit integer: {str(seq)[:40]!r}")
    return seq


def _stored_at(at: Any) -> float:
    if not ((type(at) is float and math.isfinite(at)) or (type(at) is int and -_INT64 <= at < _INT64)):
        raise ValueError(f"an event's time is not a finite number: {str(at)[:40]!r}")
    if not har.EARLIEST <= at <= har.LATEST:  # every page shows an entry's time: a clock must show it
        raise ValueError(f"an event's time is not a time a clock shows: {str(at)[:40]!r}")
    return at
