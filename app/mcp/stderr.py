"""A stdio server's stderr as lines, each kept up to a bound: no line, however long, is held whole.

stderr is the server's log, read in chunks rather than line by line: a reader awaiting one line at a time
holds a whole over-long line in memory (up to the stream's limit, then drops it without a word), and a
buffered flood of short lines came back without suspending, one line per await, for hundreds of ms.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

# The most of one stderr line kept; the rest is counted. A log line longer than this is a dump (a binary blob, a
# progress bar redrawn with \r for minutes), and its start says what it was.
STDERR_LINE_KEEP_BYTES = 2000


@dataclass(slots=True)
class StderrLine:
    text: str
    dropped_bytes: int  # of this line, past the kept start


def _whole_chars(data: bytes) -> bytes:
    """data without a UTF-8 character the cut split at its end (it would show as a U+FFFD the server never sent)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # ASCII or the lead byte of the last character
            need = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if need <= back else data[:-back]
    return data


class StderrLines:
    """Splits the chunks of a byte stream into lines; keeps at most `keep` bytes of each and counts the rest."""

    def __init__(self, keep: int = STDERR_LINE_KEEP_BYTES) -> None:
        self._keep = keep
        self._start = b""  # the kept start of the line not yet ended
        self._seen = 0  # bytes of that line so far, kept or not

    def feed(self, chunk: bytes) -> Iterator[StderrLine]:
        """The lines this chunk ends, one at a time (the reader gives way between them); what follows the last
        newline waits for the next chunk."""
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        if pieces:
            self._add(pieces[0])  # ends the line earlier chunks began
            yield self._take()
            keep = self._keep
            for piece in itertools.islice(pieces, 1, None):
                if len(piece) <= keep:  # whole, as nearly every line is: no copy into the pending start
                    text = piece.decode("utf-8", errors="replace")
                    yield StderrLine(text[:-1] if text.endswith("\r") else text, 0)
                else:
                    self._add(piece)
                    yield self._take()
        self._add(tail)

    def end(self) -> StderrLine | None:
        """The last line, when the stream ends without a newline after it."""
        return self._take() if self._seen else None

    def _add(self, piece: bytes) -> None:
        room = self._keep - len(self._start)
        if room > 0 and piece:
            self._start += piece[:room] if len(piece) > room else piece
        self._seen += len(piece)

    def _take(self) -> StderrLine:
        start, seen = self._start, self._seen
        self._start, self._seen = b"", 0
        kept = _whole_chars(start) if seen > len(start) else start
        text = kept.decode("utf-8", errors="replace")
        if text.endswith("\r") and seen == len(kept):
            text = text[:-1]  # a CRLF line ending is no part of the line
        return StderrLine(text, seen - len(kept))
