"""A pipe's bytes split into lines, each held up to a bound, whatever the chunks' boundaries; stderr's as text."""

from __future__ import annotations

from app.mcp.lines import Line, LineSplitter
from app.mcp.stderr import stderr_text


def _all(lines: LineSplitter, *chunks: bytes) -> list[Line]:
    out = [line for chunk in chunks for line in lines.feed(chunk)]
    last = lines.end()
    return [*out, last] if last is not None else out


def _texts(keep: int, *chunks: bytes) -> list[tuple[str, int]]:
    return [stderr_text(line.data, line.size) for line in _all(LineSplitter(keep), *chunks)]


def test_lines_split_across_chunks_come_out_whole_with_their_crlf_endings_dropped() -> None:
    assert _texts(2000, b"one\r\ntw", b"o\n\nthr", b"ee") == [("one", 0), ("two", 0), ("", 0), ("three", 0)]


def test_a_line_past_the_bound_keeps_its_start_and_counts_the_rest_across_chunks() -> None:
    assert _all(LineSplitter(keep=4), b"abcdef", b"gh\nij\n") == [Line(b"abcd", 8), Line(b"ij", 2)]
    assert _all(LineSplitter(keep=4), b"ab\nabcdefgh\n") == [Line(b"ab", 2), Line(b"abcd", 8)]  # within one chunk


def test_a_line_held_from_many_chunks_is_the_chunks_joined_in_order() -> None:
    splitter = LineSplitter(keep=1 << 20)
    assert [line for i in range(100) for line in splitter.feed(bytes([65 + i % 26]) * 1000)] == []
    assert splitter.pending == 100_000
    [line] = list(splitter.feed(b"\n"))
    assert line.size == 100_000 and line.data == b"".join(bytes([65 + i % 26]) * 1000 for i in range(100))


def test_a_cut_never_splits_a_utf8_character_into_a_replacement_mark() -> None:
    # "é" is two bytes: a cut after 3 bytes would leave half of the second one.
    assert _texts(3, "aéé\n".encode()) == [("aé", 2)]


def test_invalid_utf8_shows_as_replacement_marks_not_an_error() -> None:
    assert _texts(2000, b"bad \xff\xfe end\n") == [("bad \ufffd\ufffd end", 0)]
