"""Timeouts and hung answers: a target that sends the head and no body, a body shorter than it said and then
silence, a body a byte at a time, an event stream gone quiet. The deadline fires, other sessions of the console
are answered meanwhile, and what arrived before the deadline stays on the record."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console

IDLE_S = 0.6
MAX_S = 3.0


async def _call(console: Console, sid: str, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                       data={"tool": tool, "mode": "json", "json": json.dumps(arguments or {})})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


@pytest.mark.parametrize("tool", ["head_only", "short_body", "drip", "sse_then_silence"])
async def test_a_hung_answer_is_stopped_by_the_deadline_while_another_session_is_answered(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl], tool: str) -> None:
    console = make_console(request_idle_timeout_s=IDLE_S, request_max_s=MAX_S)
    url = hostile_http("hang", "basic")
    hung_sid, other_sid = await console.connected_http(url), await console.connected_http(url)
    started = time.monotonic()
    hung = asyncio.ensure_future(_call(console, hung_sid, tool))
    for _ in range(5):  # meanwhile, another session's calls are answered at once
        quick = await asyncio.wait_for(_call(console, other_sid, "echo", {"text": "still here"}), IDLE_S)
        assert quick["ok"], quick
    assert not hung.done()
    reply = await asyncio.wait_for(hung, MAX_S + 5)
    took = time.monotonic() - started
    assert not reply["ok"], reply
    assert took < MAX_S + 2, took
    entry = await console.entry(hung_sid, reply["key"])
    directions = [w["direction"] for w in entry["wire"]]
    assert "out" in directions and any(w.get("http_status") == 200 for w in entry["wire"]), entry["wire"]
    return None


@pytest.mark.parametrize(("tool", "fails_as"), [
    ("short_body", "RequestTimedOut"), ("drip", "RequestTimedOut"), ("short_then_close", "StreamLost")])
async def test_the_part_of_a_body_that_arrived_before_it_broke_off_stays_on_the_record(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl], tool: str,
        fails_as: str) -> None:
    console = make_console(request_idle_timeout_s=IDLE_S, request_max_s=MAX_S)
    sid = await console.connected_http(hostile_http("hang"))
    reply = await _call(console, sid, tool)
    assert not reply["ok"] and reply["error"]["type"] == fails_as, reply
    entry = await console.entry(sid, reply["key"])
    (part,) = [w for w in entry["wire"] if w["direction"] == "in"]
    expected = json.dumps({"jsonrpc": "2.0", "id": reply["id"], "result": {"resultType": "complete", "content": [
        {"type": "text", "text": ("x" if tool != "drip" else "y") * (200 if tool != "drip" else 100_000)}]}})
    assert expected.startswith(part["raw"]) and len(part["raw"]) < len(expected), part["raw"]
    if tool != "drip":
        assert len(part["raw"]) == 40
    assert "broke off" in part["note"] and f"Content-Length {len(expected)}" in part["note"], part["note"]


@pytest.mark.parametrize("close", [False, True], ids=["then silence", "then a close"])
async def test_the_part_of_an_event_that_arrived_before_the_stream_broke_off_stays_on_the_record(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl], close: bool) -> None:
    console = make_console(request_idle_timeout_s=IDLE_S, request_max_s=MAX_S)
    sid = await console.connected_http(hostile_http("hang"))
    reply = await _call(console, sid, "sse_cut_inside_an_event", {"close": close})
    assert not reply["ok"], reply
    entry = await console.entry(sid, reply["key"])
    ins = [w for w in entry["wire"] if w["direction"] == "in"]
    assert len(ins) == 1 and len(ins[0]["raw"]) == 50 and ins[0]["raw"].startswith('{"jsonrpc": "2.0"'), ins
    assert "inside this event" in (ins[0]["note"] or ""), ins[0]
