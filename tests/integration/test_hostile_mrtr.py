"""Hostile Multi Round-Trip Requests through the console: a round asking for thousands of inputs at once, and one
that asks again forever. Each ends in a bounded operation, and the session page stays small."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from app.mcp.operation import MAX_INPUT_REQUESTS
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


async def _answer(console: Console, sid: str, op: str, round_: int | None, ok: bool) -> tuple[int, str]:
    form = {"key": "q", "key_json": '"q"', "action": "accept", "ok": "true" if ok else "false"}
    if round_ is not None:
        form["round"] = str(round_)  # what a dialog's form posts: the round it was shown for
    response = await console.http.post(f"/sessions/{sid}/operations/{op}/answer", headers=JSON, data=form)
    return response.status_code, response.text


async def test_two_tabs_answering_the_same_dialog_at_once_leave_the_next_rounds_question_unanswered(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await _call(console, sid, "same_key", {})
    assert reply["status"] == "awaiting_input", reply["status"]
    op = reply["operation"]["op"]
    # Both tabs saw round 1's question under key "q"; the server asks round 2's under "q" too.
    answers = await asyncio.gather(_answer(console, sid, op, 1, True), _answer(console, sid, op, 1, False))
    assert sorted(status for status, _ in answers) == [200, 409], answers
    # The later tab is told its answer came too late: round 1's question was answered (its answer reached the fold
    # first) or round 2 asks now (it waited for the retry); either way nothing of it was sent.
    refused = max(answers)[1]
    assert ("written for round 1" in refused or "already answered in round 1" in refused) \
        and "nothing was sent" in refused, answers
    state = (await console.http.get(f"/sessions/{sid}/operations/{op}.json", headers=JSON)).json()
    assert len(state["rounds"]) == 2, [r["status"] for r in state["rounds"]]
    assert state["status"] == "awaiting_input" and not state["answered"], state


async def test_an_answer_posted_for_an_earlier_round_is_not_given_to_the_question_asked_now(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await _call(console, sid, "same_key", {}))["operation"]["op"]
    assert (await _answer(console, sid, op, 1, True))[0] == 200
    status, said = await _answer(console, sid, op, 1, False)  # a tab that still shows round 1, late
    assert status == 409 and "now at round 2" in said, said
    state = (await console.http.get(f"/sessions/{sid}/operations/{op}.json", headers=JSON)).json()
    assert len(state["rounds"]) == 2 and state["status"] == "awaiting_input" and not state["answered"], state


async def test_an_answer_to_an_operation_another_tab_abandoned_is_refused_saying_so(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await _call(console, sid, "same_key", {}))["operation"]["op"]
    abandoned = await console.http.post(f"/sessions/{sid}/operations/{op}/abandon", headers=JSON)
    assert abandoned.status_code == 200 and abandoned.json()["status"] == "abandoned", abandoned.text
    status, said = await _answer(console, sid, op, 1, True)
    assert status == 409 and "abandoned" in said and "nothing was sent" in said, said
    state = (await console.http.get(f"/sessions/{sid}/operations/{op}.json", headers=JSON)).json()
    assert len(state["rounds"]) == 1 and state["status"] == "abandoned", state
