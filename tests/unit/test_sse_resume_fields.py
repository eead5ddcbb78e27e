"""What the SSE parser keeps for resuming a 2025-11-25 stream: the server's `retry:` and the last event id."""

from __future__ import annotations

from app.mcp.sse import SseParser


def test_the_parser_keeps_the_servers_retry_and_the_last_event_id() -> None:
    parser = SseParser()
    events = parser.feed("id: event-1\nretry: 500\ndata: \n\nid: event-2\ndata: {}\n\n")
    assert [e.id for e in events] == ["event-1", "event-2"]
    assert parser.retry_ms == 500
    assert parser.last_id == "event-2"


def test_a_retry_that_is_not_a_number_is_ignored() -> None:
    parser = SseParser()
    parser.feed("retry: soon\ndata: x\n\n")
    assert parser.retry_ms is None
    assert parser.last_id is None


def test_a_retry_of_thousands_of_digits_is_read_as_very_long_not_refused_and_leading_zeros_do_not_count() -> None:
    parser = SseParser()
    assert [e.data for e in parser.feed(f"retry: {'9' * 5000}\ndata: x\n\n")] == ["x"]
    assert parser.retry_ms is not None and parser.retry_ms >= 10**11
    parser.feed(f"retry: {'0' * 5000}7\ndata: y\n\n")
    assert parser.retry_ms == 7
