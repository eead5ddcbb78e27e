"""A pipe's bytes split into lines, each held up to a bound, whatever the chunks' boundaries; stderr's as text."""

from __future__ import annotations

from app.mcp.lines import Line, LineSplitter
from app.mcp.stderr import ShownLine, TerminalLines, stderr_text


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


def _shown(lines: TerminalLines) -> tuple[str, int] | None:
    view = lines.shown()
    return None if view is None else stderr_text(view.data, view.size)


def test_a_line_redrawn_with_carriage_returns_shows_its_latest_segment_while_it_is_drawn() -> None:
    lines = TerminalLines(2000)
    assert list(lines.feed(b"\r  0%|     |")) == []
    assert _shown(lines) == ("  0%|     |", 0)
    assert list(lines.feed(b"\r 40%|##   |\r 6")) == []
    assert _shown(lines) == (" 6", 0)  # a terminal shows what is drawn so far
    assert list(lines.feed(b"0%|###  |\r")) == []
    assert _shown(lines) == (" 60%|###  |", 0)  # just after a \r the last segment is still on screen


def test_a_redrawn_line_ends_as_its_last_segment_and_says_how_many_bytes_were_drawn_over() -> None:
    lines = TerminalLines(2000)
    [line] = [*lines.feed(b"\r 10%\r 50%"), *lines.feed(b"\r100% done\nnext")]
    assert isinstance(line, ShownLine)
    assert stderr_text(line.data, line.size) == ("100% done", 0)
    assert line.redrawn == len(b"\r 10%\r 50%\r")
    assert _shown(lines) == ("next", 0)
    last = lines.end()
    assert last is not None and (last.data, last.size) == (b"next", 4)
    assert lines.shown() is None


def test_a_redrawn_line_within_one_chunk_and_one_ending_in_a_lone_return_show_their_last_drawn_segment() -> None:
    assert [(line.data, line.redrawn) for line in TerminalLines(2000).feed(b"a\rbb\rccc\r\r\nplain\n")] \
        == [(b"ccc", 5), (b"plain", 0)]


def test_crlf_lines_through_the_terminal_splitter_are_the_plain_lines_they_were() -> None:
    lines = TerminalLines(2000)
    out = [*lines.feed(b"one\r\ntw"), *lines.feed(b"o\r"), *lines.feed(b"\n\r\n")]
    assert [(stderr_text(line.data, line.size), getattr(line, "redrawn", 0)) for line in out] \
        == [(("one", 0), 0), (("two", 0), 0), (("", 0), 0)]


def test_a_redrawn_segment_past_the_bound_keeps_its_start_and_counts_the_rest() -> None:
    lines = TerminalLines(keep=4)
    list(lines.feed(b"old\rabcdef"))
    assert _shown(lines) == ("abcd", 2)
    [line] = list(lines.feed(b"gh\n"))
    assert (line.data, line.size, getattr(line, "redrawn", 0)) == (b"abcd", 8, 4)
