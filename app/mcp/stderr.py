"""A stdio server's stderr as lines of text, each kept up to a bound: no line, however long, is held whole."""

from __future__ import annotations

# The most of one stderr line kept; the rest is counted. A log line longer than this is a dump (a binary blob, a
# progress bar redrawn with \r for minutes), and its start says what it was.
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
