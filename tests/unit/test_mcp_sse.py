"""The incremental SSE parser: every line ending, comments, priming events, and any chunking of the stream."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.mcp.sse import SseEvent, SseParser

# Mixed line endings on purpose: CRLF (Python SDK), LF (TypeScript SDK) and lone CR (legal SSE).
SAMPLE = (
    ": keep-alive\r\n"
    "id: 1\n"
    "data:\n"
    "\n"
    "event: message\r"
    'data: {"a":1}\r'
    "\r"
    "data: line one\r\n"
    "data:line two\r\n"
    "id: 7\r\n"
    "event: custom\r\n"
    "retry: 1000\r\n"
    "\r\n"
    ": another comment\n"
    "data: tail"
)
SAMPLE_EVENTS = [
    SseEvent(data="", event="message", id="1"),
    SseEvent(data='{"a":1}', event="message", id="1"),
    SseEvent(data="line one\nline two", event="custom", id="7"),
    SseEvent(data="tail", event="message", id="7"),
]


def parse_chunks(chunks: list[str]) -> tuple[list[SseEvent], int]:
    parser = SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.finish())
    return events, parser.comments


def test_sse_parser_reads_the_sample_stream_in_one_chunk() -> None:
    assert parse_chunks([SAMPLE]) == (SAMPLE_EVENTS, 2)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_sse_parser_accepts_each_line_ending(ending: str) -> None:
    stream = ending.join(["event: progress", "data: one", "data: two", "", "data: three", "", ""])
    events, _ = parse_chunks([stream])
    assert events == [SseEvent(data="one\ntwo", event="progress"), SseEvent(data="three")]


def test_sse_parser_counts_comments_and_emits_nothing_for_them() -> None:
    parser = SseParser()
    assert parser.feed(": ping\n\n:\n\n: another\r\n\r\n") == []
    assert parser.comments == 3
    assert parser.finish() == []


def test_sse_parser_emits_an_empty_data_line_as_a_priming_event_with_empty_data() -> None:
    parser = SseParser()
    assert parser.feed("id: 0\ndata:\n\n") == [SseEvent(data="", event="message", id="0")]


def test_sse_parser_strips_only_one_space_after_the_colon() -> None:
    assert SseParser().feed("data:  two spaces\n\n") == [SseEvent(data=" two spaces")]


def test_sse_parser_joins_multi_line_data_with_newlines() -> None:
    assert SseParser().feed("data: {\ndata:   \"a\": 1\ndata: }\n\n") == [SseEvent(data='{\n  "a": 1\n}')]


def test_sse_parser_reads_id_and_event_fields_and_resets_the_event_name_after_dispatch() -> None:
    parser = SseParser()
    events = parser.feed("event: endpoint\nid: 42\ndata: /messages\n\ndata: next\n\n")
    assert events == [SseEvent(data="/messages", event="endpoint", id="42"), SseEvent(data="next", id="42")]


def test_sse_parser_ignores_unknown_fields_and_retry() -> None:
    assert SseParser().feed("retry: 5\nfoo: bar\ndata: x\n\n") == [SseEvent(data="x")]


@pytest.mark.parametrize("value", ["\u00b2", "1\u00b3", "\u0661\u0662", "-5", "5 "])
def test_a_retry_that_is_not_ascii_digits_is_ignored_as_the_sse_spec_says_not_a_broken_stream(value: str) -> None:
    # "²" is a digit to str.isdigit() and not a number to int(): the parser raised, and the stream was refused
    # as a protocol violation quoting int()'s message (or, on a last line, the error escaped the reader).
    parser = SseParser()
    assert parser.feed(f"retry: 7\nretry: {value}\ndata: x\n\n") == [SseEvent(data="x")]
    assert parser.retry_ms == 7
    parser.feed(f"retry: {value}")
    assert parser.finish() == []


def test_sse_parser_does_not_dispatch_a_blank_line_with_nothing_pending() -> None:
    assert SseParser().feed("\n\n\r\n\r\r") == []


def test_sse_parser_waits_for_more_input_when_a_chunk_ends_in_a_carriage_return() -> None:
    parser = SseParser()
    assert parser.feed("data: a\r") == []
    # The LF completes the CRLF: one line ending, so no blank line yet and no event.
    assert parser.feed("\n") == []
    assert parser.feed("\r") == []
    assert parser.feed("\n") == [SseEvent(data="a")]


def test_sse_parser_treats_a_lone_carriage_return_followed_by_text_in_the_next_chunk_as_a_line_end() -> None:
    parser = SseParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("data: b\r\r") == []
    assert parser.finish() == [SseEvent(data="a\nb")]


def test_sse_parser_gives_the_same_events_for_every_single_split_point() -> None:
    failures = [(cut, got) for cut in range(len(SAMPLE) + 1)
                if (got := parse_chunks([SAMPLE[:cut], SAMPLE[cut:]])) != (SAMPLE_EVENTS, 2)]
    assert failures == []


def test_sse_parser_gives_the_same_events_for_every_pair_of_split_points() -> None:
    failures = []
    for i, j in itertools.combinations(range(len(SAMPLE) + 1), 2):
        got = parse_chunks([SAMPLE[:i], SAMPLE[i:j], SAMPLE[j:]])
        if got != (SAMPLE_EVENTS, 2):
            failures.append((i, j, got))
    assert failures == []


def test_sse_parser_gives_the_same_events_when_fed_one_character_at_a_time() -> None:
    assert parse_chunks(list(SAMPLE)) == (SAMPLE_EVENTS, 2)


def test_sse_parser_sample_covers_a_crlf_split_between_chunks() -> None:
    # Guard for the property tests above: the sample must contain CRLF pairs a split can cut in half.
    assert "\r\n" in SAMPLE and "\r" in SAMPLE.replace("\r\n", "")


def test_sse_parser_finish_flushes_a_final_event_without_its_blank_line() -> None:
    parser = SseParser()
    assert parser.feed("data: last\n") == []
    assert parser.finish() == [SseEvent(data="last")]


def test_sse_parser_finish_flushes_a_final_line_without_any_line_ending() -> None:
    parser = SseParser()
    assert parser.feed("event: done\ndata: partial") == []
    assert parser.finish() == [SseEvent(data="partial", event="done")]


def test_sse_parser_finish_flushes_a_final_event_ending_in_a_lone_carriage_return() -> None:
    parser = SseParser()
    assert parser.feed("data: x\r") == []
    assert parser.finish() == [SseEvent(data="x")]


def test_sse_parser_finish_on_an_empty_stream_gives_nothing() -> None:
    assert SseParser().finish() == []


def test_sse_parser_raises_value_error_when_one_event_exceeds_the_size_limit() -> None:
    parser = SseParser(max_event_bytes=10)
    assert parser.feed("data: 12345\n") == []
    with pytest.raises(ValueError, match="larger than 10"):
        parser.feed("data: 678901\n")


def test_sse_parser_raises_value_error_when_an_unterminated_line_exceeds_the_size_limit() -> None:
    parser = SseParser(max_event_bytes=10)
    with pytest.raises(ValueError, match="longer than 10"):
        parser.feed("data: " + "x" * 20)


def test_sse_parser_size_limit_applies_per_event_not_per_stream() -> None:
    parser = SseParser(max_event_bytes=10)
    events = []
    for _ in range(5):
        events.extend(parser.feed("data: 12345678\n\n"))
    assert [e.data for e in events] == ["12345678"] * 5


def _line_by_line(text: str) -> tuple[list[SseEvent], int, str | None, int | None]:
    """The stream read one line at a time by the parser's general line reader, as the spec reads it."""
    parser = SseParser()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # what follows the last line end (at the end of the stream an unended line is still one)
    events = [e for line in lines if (e := parser._line(line)) is not None]
    if parser._data:
        events.append(parser._dispatch())
    return events, parser.comments, parser.last_id, parser.retry_ms


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["data:", "data: ", "data:  x", "data", "event:", "event: message", "event:up",
                                 "event", "id: 3", "id:", "retry: 20", "retry: x", ": note", ":", "", "foo: bar",
                                 'data: {"a":1}', "data:é", "dat", " data: x"]), max_size=30),
       st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=3),
       st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_sse_parser_reads_any_stream_in_any_chunking_as_the_line_reader_does(
        lines: list[str], endings: list[str], cuts: list[int]) -> None:
    text = "".join(line + endings[i % len(endings)] for i, line in enumerate(lines))
    edges = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *edges], [*edges, len(text)], strict=True)]
    parser = SseParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)] + parser.finish()
    assert (events, parser.comments, parser.last_id, parser.retry_ms) == _line_by_line(text)


def test_the_unfinished_event_is_its_data_lines_so_far_and_the_line_not_yet_ended() -> None:
    parser = SseParser()
    assert parser.feed("data: one\ndata: tw") == []
    assert parser.unfinished() == "one\ntw"
    assert parser.feed("o\n\n")[0].data == "one\ntwo"
    assert parser.unfinished() is None
    parser.feed("event: x\nid: 7\n")
    assert parser.unfinished() is None  # no data begun
