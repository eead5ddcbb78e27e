"""A stdio server's stderr as lines of text, each kept up to a bound: no line, however long, is held whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.mcp.lines import Line, LineSplitter

# The most of one stderr line kept; the rest is counted. A log line longer than this is a dump (a binary blob), and
# its start says what it was. (A progress bar redrawn with \r for minutes is kept as its last segment: TerminalLines.)
STDERR_LINE_KEEP_BYTES = 2000


def _whole_chars(data: bytes) -> bytes:
    """data without a UTF-8 character the cut split at its end (it would show as a U+FFFD the server never sent)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # ASCII or the lead byte of the last character
            need = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if need <= back else data[:-back]
    return data


def stderr_text(data: bytes, size: int) -> tuple[str, int]:
    """A line's kept start as text, and how many of its bytes were not kept."""
    if size == len(data):
        text = data.decode("utf-8", errors="replace")
        return (text[:-1] if text[-1:] == "\r" else text), 0  # a CRLF line ending is no part of the line
    kept = _whole_chars(data)
    return kept.decode("utf-8", errors="replace"), size - len(kept)


@dataclass(slots=True)
class ShownLine(Line):
    """A line redrawn with carriage returns, as a terminal shows it: its last segment drawn (`data`, `size` as in
    Line, of that segment), with how many bytes of the line came before that segment and were drawn over."""

    redrawn: int = 0


class TerminalLines(LineSplitter):
    """Stderr's lines as a terminal shows them: a carriage return starts the line over, so a line redrawn with \\r
    (tqdm's progress bar, for minutes, with no newline) ends as its last drawn segment, and while it is drawn
    `shown()` is its latest one. A CRLF line is the plain line it was. Chunks without a \\r take the plain path."""

    def __init__(self, keep: int) -> None:
        super().__init__(keep)
        self._start = 0  # where in the line the segment being drawn begins (after the line's last \r so far)
        self._prev: tuple[bytes, int, int] | None = None  # the last segment drawn before it: held start, size, at

    def feed(self, chunk: bytes) -> Iterator[Line]:
        if b"\r" not in chunk:
            yield from super().feed(chunk)  # its whole lines have no \r; the one it ends or begins goes by _add
            return
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        for piece in pieces:
            self._add(piece)
            yield self._take()
        self._add(tail)

    def shown(self) -> Line | None:
        """What a terminal shows of the line not yet ended: the segment being drawn, or (just after a \\r) the one
        before it; None when no line is begun."""
        if not self._seen:
            return None
        size = self._seen - self._start
        if size or self._prev is None:
            return Line(self._joined(), size)
        return Line(self._prev[0], self._prev[1])

    def _add(self, piece: bytes) -> None:
        last = piece.rfind(b"\r")
        if last < 0:
            self._hold(piece, 0, len(piece))
            self._seen += len(piece)
            return
        base, first = self._seen, piece.find(b"\r")
        self._hold(piece, 0, first)
        self._seen = base + first
        self._drawn()
        # Whole segments between the first and the last \r: only the last drawn (not empty) one can still show.
        end, low = last, first + 1
        while end > low:
            cr = piece.rfind(b"\r", low, end)
            begin = cr + 1 if cr >= 0 else low
            if end > begin:
                self._prev = (piece[begin:min(end, begin + self._keep)], end - begin, base + begin)
                break
            end = cr
        self._start = base + last + 1
        self._hold(piece, last + 1, len(piece))
        self._seen = base + len(piece)

    def _take(self) -> Line:
        size = self._seen - self._start
        if size or self._prev is None:
            line = ShownLine(self._joined(), size, self._start if size else 0)
        else:
            line = ShownLine(self._prev[0], self._prev[1], self._prev[2])
        self._pieces, self._held, self._seen, self._start, self._prev = [], 0, 0, 0, None
        return line

    def _drawn(self) -> None:
        """The segment being drawn ends at a \\r: kept as the one shown, unless it is empty."""
        size = self._seen - self._start
        if size:
            self._prev = (self._joined(), size, self._start)
        self._pieces, self._held = [], 0

    def _hold(self, piece: bytes, begin: int, end: int) -> None:
        room = self._keep - self._held
        if room > 0 and end > begin:
            part = piece[begin:min(end, begin + room)]
            self._pieces.append(part)
            self._held += len(part)

    def _joined(self) -> bytes:
        pieces = self._pieces
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
