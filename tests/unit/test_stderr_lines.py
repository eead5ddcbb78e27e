"""A stdio server's stderr split into lines, each kept up to a bound, whatever the chunks' boundaries."""

from __future__ import annotations

from app.mcp.stderr import StderrLine, StderrLines


def _all(lines: StderrLines, *chunks: bytes) -> list[StderrLine]:
    out = [line for chunk in chunks for line in lines.feed(chunk)]
    last = lines.end()
    return [*out, last] if last is not None else out


def test_lines_split_across_chunks_come_out_whole_with_their_crlf_endings_dropped() -> None:
    assert _all(StderrLines(), b"one\r\ntw", b"o\n\nthr", b"ee") == [
        StderrLine("one", 0), StderrLine("two", 0), StderrLine("", 0), StderrLine("three", 0)]


def test_a_line_past_the_bound_keeps_its_start_and_counts_the_rest_across_chunks() -> None:
    assert _all(StderrLines(keep=4), b"abcdef", b"gh\nij\n") == [StderrLine("abcd", 4), StderrLine("ij", 0)]


def test_a_cut_never_splits_a_utf8_character_into_a_replacement_mark() -> None:
    # "é" is two bytes: a cut after 3 bytes would leave half of the second one.
    [line] = _all(StderrLines(keep=3), "aéé\n".encode())
    assert line == StderrLine("aé", 2)


def test_invalid_utf8_shows_as_replacement_marks_not_an_error() -> None:
    [line] = _all(StderrLines(), b"bad \xff\xfe end\n")
    assert line == StderrLine("bad \ufffd\ufffd end", 0)
