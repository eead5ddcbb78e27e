"""Hostile Multi Round-Trip Requests through the console: a round asking for thousands of inputs at once, and one
that asks again forever. Each ends in a bounded operation, and the session page stays small."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.console.operations import MAX_INPUT_REQUESTS
from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console


async def _call(console: Console, sid: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                       data={"tool": tool, "mode": "json", "json": json.dumps(arguments)})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


async def test_a_round_asking_for_thousands_of_inputs_at_once_ends_the_operation_and_keeps_the_page_small(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await _call(console, sid, "many_inputs", {"count": 5000})
    assert reply["status"] == "error", reply["status"]
    assert f"at most {MAX_INPUT_REQUESTS}" in reply["operation"]["message"], reply["operation"]["message"]
    page = await console.http.get(f"/sessions/{sid}")
    assert page.status_code == 200 and len(page.content) < 1_000_000, len(page.content)
    twin = await console.http.get(f"/sessions/{sid}.json")
    assert len(twin.content) < 1_000_000, len(twin.content)


async def test_a_round_asking_for_as_many_inputs_as_the_bound_still_waits_for_them(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await _call(console, sid, "many_inputs", {"count": MAX_INPUT_REQUESTS})
    assert reply["status"] == "awaiting_input", reply["status"]


async def test_a_server_that_asks_again_forever_is_stopped_at_the_round_cap(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl]) -> None:
    console = make_console(mrtr_max_rounds=7)
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await _call(console, sid, "forever", {})
    assert reply["status"] == "capped", reply["status"]
    assert len(reply["operation"]["rounds"]) == 7


async def test_progress_under_another_requests_token_is_not_shown_as_this_calls_progress(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await _call(console, sid, "foreign_progress", {})
    assert reply["status"] == "complete", reply["status"]
    entries = (await console.session(sid))["timeline"]
    shown = [e["progress"] for e in entries if e.get("progress")]
    assert shown and all(p["message"] == "mine" for p in shown), shown
    entry = await console.entry(sid, reply["operation"]["rounds"][0]["key"])
    assert any("not mine" in w["raw"] for w in entry["wire"])  # still on the record, as it came
