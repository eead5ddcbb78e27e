"""A pipe's bytes as lines, read in chunks: each line's start is held up to a bound, the rest only counted.

Awaiting one line at a time (StreamReader.readuntil) returns every buffered line without suspending, and it
needs the stream's buffer limit as large as the longest line: asyncio then reads up to twice that ahead (32 MB
for a 16 MB message) and copies the whole buffer each time it is resized, tens of ms of the event loop at a
time during a flood. Split from chunks, a line costs a slice of one, and the read-ahead stays small.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(slots=True)  # not frozen: a frozen __init__ sets each field through object.__setattr__, per line
class Line:
    data: bytes  # the line's start, at most `keep` bytes, without its newline
    size: int  # the whole line's length in bytes, without its newline

    @property
    def cut(self) -> bool:
        return self.size > len(self.data)


class LineSplitter:
    """Splits the chunks of a byte stream into lines; holds at most `keep` bytes of each and counts the rest."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._pieces: list[bytes] = []  # the held start of the line not yet ended (joined once, when it ends)
        self._held = 0
        self._seen = 0  # bytes of that line so far, held or not

    @property
    def pending(self) -> int:
        """Bytes of a line begun and not yet ended."""
        return self._seen

    def head(self, size: int) -> bytes:
        """The first `size` bytes held of the line not yet ended."""
        return b"".join(self._pieces)[:size] if len(self._pieces) > 1 else (self._pieces or [b""])[0][:size]

    def feed(self, chunk: bytes) -> Iterator[Line]:
        """The lines this chunk ends, one at a time (a reader gives way between them); what follows the last
        newline waits for the next chunk."""
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        if pieces:
            self._add(pieces[0])  # ends the line earlier chunks began
            yield self._take()
            keep = self._keep
            for piece in itertools.islice(pieces, 1, None):
                # Whole within the chunk, as nearly every line is: no copy into the held start.
                yield Line(piece if len(piece) <= keep else piece[:keep], len(piece))
        self._add(tail)

    def end(self) -> Line | None:
        """The last line, when the stream ends without a newline after it."""
        return self._take() if self._seen else None

    def _add(self, piece: bytes) -> None:
        room = self._keep - self._held
        if room > 0 and piece:
            part = piece[:room] if len(piece) > room else piece
            self._pieces.append(part)
            self._held += len(part)
        self._seen += len(piece)

    def _take(self) -> Line:
        pieces = self._pieces
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        line = Line(data, self._seen)
        self._pieces, self._held, self._seen = [], 0, 0
        return line
