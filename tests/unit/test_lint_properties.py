"""Property tests: random and mutated frames and SSE streams never make the parser or the lint raise, and
every input yields a finding or a clean verdict."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.mcp.jsonrpc import parse_frame
from app.mcp.lint import RULES, Linter, lint_sse_text
from app.mcp.wire import WireEvent

BOUNDED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)
KEYS = ["jsonrpc", "id", "method", "params", "result", "error", "resultType", "content", "tools", "ttlMs",
        "cacheScope", "structuredContent", "requestState", "inputRequests", "_meta", "progressToken",
        "notifications", "code", "name", "inputSchema", "outputSchema"]
METHODS = ["tools/call", "tools/list", "subscriptions/listen", "server/discover", "resources/read",
           "notifications/progress", "notifications/subscriptions/acknowledged", "notifications/cancelled"]
frames = st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0"])}, optional={
    "id": st.one_of(st.integers(0, 5), st.text(max_size=3), st.none()),
    "method": st.sampled_from(METHODS),
    "params": st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5),
    "result": st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6),
    "error": st.dictionaries(st.sampled_from(["code", "message", "data"]), json_values, max_size=3)})


def _event(direction: str, raw: str, key: str | None, code: int | None, ctype: str) -> WireEvent:
    if direction == "transport":
        return WireEvent(direction="transport", raw="", exchange=key, http_status=code,
                         headers=[("content-type", ctype)] if code is not None else None, note=raw[:40])
    return WireEvent(direction="in" if direction == "in" else "out", raw=raw, frame=parse_frame(raw), exchange=key,
                     http_status=code, headers=[("mcp-method", raw[:10])] if direction == "out" else None)


events = st.tuples(st.sampled_from(["in", "out", "transport"]),
                   st.one_of(frames.map(json.dumps), st.text(max_size=60)),
                   st.sampled_from([None, "x1", "x2"]), st.sampled_from([None, 200, 202, 400, 404]),
                   st.sampled_from(["application/json", "text/event-stream"]))


@BOUNDED
@given(st.lists(events, max_size=25))
def test_random_wire_events_never_make_the_lint_raise(stream: list[tuple[Any, ...]]) -> None:
    linter = Linter()
    for item in stream:
        findings = linter.observe(_event(*item))
        assert all(f.rule in RULES and f.rule != "lint.internal" for f in findings), findings


@BOUNDED
@given(st.lists(st.one_of(frames.map(lambda f: "data: " + json.dumps(f)), st.text(max_size=40)), max_size=12),
       st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_random_sse_streams_yield_findings_or_a_clean_verdict(lines: list[str], eol: str, terminate: bool) -> None:
    text = eol.join(lines) + (eol * 2 if terminate else "")
    findings = lint_sse_text(text)
    assert isinstance(findings, list)
    assert all(f.rule == "sse.framing" for f in findings)


@BOUNDED
@given(frames, st.integers(0, 200), st.text(max_size=3))
def test_a_mutated_valid_stream_is_parsed_without_raising(frame: dict[str, Any], at: int, junk: str) -> None:
    good = f"data: {json.dumps(frame)}\n\n"
    mutated = good[:at] + junk + good[at:]
    lint_sse_text(mutated)
    parse_frame(mutated)


def test_a_clean_sse_stream_is_a_clean_verdict() -> None:
    good = 'data: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}\n\n'
    assert lint_sse_text(": keep-alive\n\n" + good) == []


def test_an_unknown_event_type_and_an_unterminated_event_are_framing_faults() -> None:
    text = 'event: weird\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\ndata: {"a"'
    messages = [f.message for f in lint_sse_text(text)]
    assert any("event type 'weird'" in m for m in messages)
    assert any("ends inside an event" in m for m in messages)


class _FullPathLinter(Linter):
    """The lint without its shortcut for plain progress: every frame takes the general path."""

    def _plain_progress(self, event: Any) -> bool:
        return False


_TOKENS = st.sampled_from(["t1", "t2", 1, 2, True, None, 1.5, "x1"])
_progress_params = st.fixed_dictionaries(
    {"progressToken": _TOKENS, "progress": st.sampled_from([1, 2.5, True, "3", float("inf"), None])},
    optional={"total": st.sampled_from([10, None, "10", 1e400]), "message": st.sampled_from(["m", 3, None]),
              "_meta": st.just({}), "extra": st.just(1)})
_flow = st.one_of(
    # a request going out, with or without a progress token (a listen stream takes none: it may get one anyway)
    st.tuples(st.just("out"), st.sampled_from(["x1", "x2", "x3"]), st.sampled_from(["tools/call",
              "subscriptions/listen"]), st.sampled_from([1, 2, 3]), st.one_of(st.none(), _TOKENS)),
    st.tuples(st.just("progress"), st.sampled_from(["x1", "x2", "x3", None]), _progress_params),
    st.tuples(st.just("answer"), st.sampled_from(["x1", "x2", "x3"]), st.sampled_from([1, 2, 3])),
    st.tuples(st.just("cancel"), st.sampled_from(["x1", "x2", "x3"])))


def _flow_event(item: tuple[Any, ...]) -> WireEvent:
    if item[0] == "out":
        _, key, method, id_, token = item
        params: dict[str, Any] = {"name": "p"} if token is None else {"name": "p", "_meta": {"progressToken": token}}
        raw = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        return WireEvent(direction="out", raw=raw, frame=parse_frame(raw), exchange=key)
    if item[0] == "progress":
        raw = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": item[2]})
        return WireEvent(direction="in", raw=raw, frame=parse_frame(raw), exchange=item[1], http_status=200)
    if item[0] == "answer":
        raw = json.dumps({"jsonrpc": "2.0", "id": item[2], "result": {"resultType": "complete", "content": []}})
        return WireEvent(direction="in", raw=raw, frame=parse_frame(raw), exchange=item[1], http_status=200)
    return WireEvent(direction="transport", raw="", exchange=item[1], note="closed the response stream to cancel (x)")


@BOUNDED
@given(st.lists(_flow, max_size=30))
def test_the_plain_progress_shortcut_finds_and_checks_what_the_full_path_does(flow: list[tuple[Any, ...]]) -> None:
    fast, full = Linter(), _FullPathLinter()
    for item in flow:
        event = _flow_event(item)
        assert fast.observe(event) == full.observe(event)
    assert fast.checked == full.checked
    counted = [(r.key, r.frames_in) for r in fast._by_key.values()]
    assert counted == [(r.key, r.frames_in) for r in full._by_key.values()]
