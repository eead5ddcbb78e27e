"""SSE framing faults in a whole response stream, as text: what the transport's lenient parser forgives.

The live transport keeps only each event's data, so the live lint sees framing through what that data
parsed to; this looks at the stream itself (a saved body, `mcp-console check` of a capture, the tests).
"""

from __future__ import annotations

from app.mcp.jsonrpc import parse_frame
from app.mcp.lint.rules import RULES, Finding
from app.mcp.sse import SseParser

CHUNK = 4096


def _finding(message: str, exchange: str | None, index: int | None) -> Finding:
    row = RULES["sse.framing"]
    return Finding(row.id, row.severity, message, exchange, 0, index, row.spec_url)


def lint_sse_text(text: str, exchange: str | None = None, max_event_bytes: int = 16 * 1024 * 1024) -> list[Finding]:
    """Findings for one SSE response stream; an empty list is a clean verdict. Never raises."""
    parser = SseParser(max_event_bytes)
    findings: list[Finding] = []
    events = []
    try:
        for start in range(0, len(text), CHUNK):
            events.extend(parser.feed(text[start:start + CHUNK]))
        unterminated = bool(text) and not text.endswith(("\n\n", "\r\n\r\n", "\r\r"))
        tail = parser.finish()
    except ValueError as exc:  # the parser's own bound: an over-long line or event
        return [_finding(str(exc), exchange, len(events))]
    if tail and unterminated:
        findings.append(_finding("the stream ends inside an event (no blank line after it)", exchange,
                                 len(events)))
    for index, event in enumerate([*events, *tail]):
        if event.data == "":
            continue  # a priming event carries nothing
        if event.event != "message":
            findings.append(_finding(f"event type {event.event[:60]!r}: MCP streams carry only message events",
                                     exchange, index))
        frame = parse_frame(event.data)
        if frame.kind == "invalid":
            findings.append(_finding(f"event {index}'s data is not one JSON-RPC message: {frame.problem}",
                                     exchange, index))
    return findings
