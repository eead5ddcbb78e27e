"""Two tabs acting on one session through the demo server: a roots request answered in one tab (an operator's,
say) while the owner changes the roots in another sends only what the answering tab was shown; an answer for a key
the operation's round does not ask for, and an Abandon from a tab that shows an earlier round, are refused with
nothing sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from app.mcp.operation import MAX_INPUT_REQUESTS
from tests.hostile.fixtures import HostileUrl
from tests.hostile.tools_mrtr import ODD_KEYS
from tests.integration.conftest import JSON, Console, eventually

SHOWN = [{"uri": "file:///tmp/shown", "name": "Shown"}]
CHANGED = [{"uri": "file:///tmp/changed-meanwhile"}]


async def test_roots_changed_after_a_roots_dialog_was_shown_are_not_sent_under_its_send_these_roots(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/shown Shown"}, headers=JSON)
    op = (await console.call_tool(sid, "list_roots"))["operation"]
    assert op["status"] == "awaiting_input", op
    # Another tab (the owner's) changes the roots while this dialog shows the old ones.
    changed = await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/changed-meanwhile"},
                                      headers=JSON)
    assert changed.json()["roots"] == CHANGED, changed.text

    form = {"key": "roots", "key_json": '"roots"', "action": "accept", "round": "1",
            "roots_shown": json.dumps(SHOWN)}  # what the dialog previewed, as its form posts it
    answered = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)
    assert answered.status_code == 200, answered.text
    state = answered.json()
    assert state["status"] == "awaiting_input" and len(state["rounds"]) == 1, state
    assert "changed" in json.dumps(state["errors"].get("roots")), state["errors"]

    # Sent again from the dialog as it is now shown, the current roots go.
    form["roots_shown"] = json.dumps(CHANGED)
    done = (await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data=form, headers=JSON)).json()
    assert done["status"] == "complete", done
    assert done["final"]["result"]["structuredContent"] == {"roots": CHANGED}, done["final"]["result"]


# --- an answer for a key the round does not ask for -----------------------------------------------------------------

HTMX = {"HX-Request": "true", "Accept": "text/html"}


async def _post_answer(console: Console, sid: str, op: str, key: str, round_: int | None = None,
                       headers: dict[str, str] = JSON, **fields: str) -> httpx.Response:
    form = {"key": key, "key_json": json.dumps(key), "action": "decline", **fields}
    if round_ is not None:
        form["round"] = str(round_)  # what a dialog's form posts: the round it was shown for
    return await console.http.post(f"/sessions/{sid}/operations/{op}/answer", data=form, headers=headers)


async def _op(console: Console, sid: str, op: str) -> dict[str, Any]:
    response = await console.http.get(f"/sessions/{sid}/operations/{op}.json", headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def _recorded(console: Console, sid: str, op: str) -> tuple[int, dict[str, Any]]:
    """What the session has recorded: its last sequence number and the operation as the fold knows it."""
    return (await console.session(sid))["seq"], await _op(console, sid, op)


async def test_an_answer_for_a_key_the_round_does_not_ask_for_is_refused_naming_it_and_what_the_round_asks(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "always_more"))["operation"]
    assert op["status"] == "awaiting_input" and op["pending"] == ["more_1"], op
    before = await _recorded(console, sid, op["op"])

    refused = await _post_answer(console, sid, op["op"], "made_up", 1)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"made_up"' in said and '"more_1"' in said and "round 1" in said and "nothing was sent" in said, said
    assert await _recorded(console, sid, op["op"]) == before  # nothing sent, nothing recorded


async def test_an_answer_for_a_key_only_an_earlier_round_asked_is_refused_once_the_server_asks_another(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "always_more"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "more_1", 1)).status_code == 200
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["pending"] == ["more_2"], state
    before = await _recorded(console, sid, op)

    for round_ in (None, 2):  # a client that does not say its round; one that says the current round
        refused = await _post_answer(console, sid, op, "more_1", round_)
        assert refused.status_code == 409, refused.text
        said = refused.json()["error"]
        assert '"more_1"' in said and '"more_2"' in said and "round 2" in said, said
    assert await _recorded(console, sid, op) == before


async def test_a_refused_key_is_said_to_an_htmx_caller_as_an_alert_with_the_servers_keys_escaped(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "odd_keys"))["operation"]
    assert op["pending"] == sorted(ODD_KEYS), op
    before = await _recorded(console, sid, op["op"])

    refused = await _post_answer(console, sid, op["op"], "<i>mine</i>", 1, headers=HTMX)

    assert refused.status_code == 409, refused.text
    assert 'role="alert"' in refused.text and "nothing was sent" in refused.text, refused.text
    assert "<b>" not in refused.text and "<i>" not in refused.text, refused.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in refused.text and "&lt;i&gt;mine&lt;/i&gt;" in refused.text, refused.text
    assert "\u202e" not in refused.text and "\\u202eevil" in refused.text, refused.text  # shown, not obeyed
    assert await _recorded(console, sid, op["op"]) == before


async def test_the_refusal_of_a_long_made_up_key_in_a_round_asking_a_hundred_inputs_stays_short(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    reply = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "many_inputs", "mode": "json", "json": json.dumps({"count": MAX_INPUT_REQUESTS})})
    op = reply.json()["operation"]["op"]

    refused = await _post_answer(console, sid, op, "x" * 10_000, 1)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert len(said) < 1_000 and '"q0"' in said and "more" in said, said


async def test_an_answer_for_a_made_up_key_posted_while_a_retry_runs_is_refused_once_the_server_has_asked(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    first = asyncio.create_task(_post_answer(console, sid, op, "q", 1))
    await _running(console, sid, op)

    refused = await _post_answer(console, sid, op, "nope")

    assert (await first).status_code == 200
    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"nope"' in said and '"q"' in said and "round 2" in said, said
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["status"] == "awaiting_input" and not state["answered"], state


async def _running(console: Console, sid: str, op: str) -> None:
    """Waits until the operation's retry is with the server (the hostile same_key takes its time over it)."""
    async def check() -> bool:
        return (await _op(console, sid, op))["status"] == "running"
    await eventually(check, what=f"operation {op} to be running its retry")


# --- Abandon says which round it gives up -------------------------------------------------------------------------


async def _abandon(console: Console, sid: str, op: str, round_: int | None,
                   headers: dict[str, str] = JSON) -> httpx.Response:
    data = {} if round_ is None else {"round": str(round_)}  # what the Abandon button posts: the round shown
    return await console.http.post(f"/sessions/{sid}/operations/{op}/abandon", data=data, headers=headers)


async def test_an_abandon_from_a_tab_still_showing_an_earlier_round_is_refused_and_the_operation_waits_on(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "q", 1)).status_code == 200  # another tab answered round 1
    before = await _recorded(console, sid, op)

    refused = await _abandon(console, sid, op, 1)
    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "round 1" in said and "now at round 2" in said and "nothing was abandoned" in said, said
    shown = await _abandon(console, sid, op, 1, headers=HTMX)
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "round 1" in shown.text, shown.text
    assert await _recorded(console, sid, op) == before

    abandoned = await _abandon(console, sid, op, 2)  # from a tab that shows the round now asked
    assert abandoned.status_code == 200 and abandoned.json()["status"] == "abandoned", abandoned.text


async def test_an_abandon_posted_while_another_tabs_answer_is_retried_is_refused_once_the_server_asks_again(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    answered = asyncio.create_task(_post_answer(console, sid, op, "q", 1))
    await _running(console, sid, op)

    refused = await _abandon(console, sid, op, 1)

    assert (await answered).status_code == 200
    assert refused.status_code == 409 and "now at round 2" in refused.json()["error"], refused.text
    state = await _op(console, sid, op)
    assert len(state["rounds"]) == 2 and state["status"] == "awaiting_input", state


async def test_an_abandon_that_says_no_round_gives_up_the_operation_at_whatever_round_it_is(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("mrtr"))
    op = (await console.call_tool(sid, "same_key"))["operation"]["op"]
    assert (await _post_answer(console, sid, op, "q", 1)).status_code == 200

    abandoned = await _abandon(console, sid, op, None)

    assert abandoned.status_code == 200 and abandoned.json()["status"] == "abandoned", abandoned.text
    assert len(abandoned.json()["rounds"]) == 2, abandoned.json()


# --- a key already answered in this round ---------------------------------------------------------------------------


def _sent_params(detail: dict[str, Any]) -> dict[str, Any]:
    """The params of the request a round sent, parsed from the raw frame that went out on the wire."""
    [out] = [w for w in detail["wire"] if w["direction"] == "out" and '"method"' in w["raw"]]
    params: dict[str, Any] = json.loads(out["raw"])["params"]
    return params


async def test_a_second_answer_to_a_key_already_answered_in_the_round_is_refused_and_the_first_one_is_sent(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "multi_ask"))["operation"]["op"]
    assert (await _op(console, sid, op))["pending"] == ["favorite_color", "workspace_roots"]
    taken = await console.http.post(f"/sessions/{sid}/operations/{op}/answer", headers=JSON, data={
        "key": "favorite_color", "key_json": '"favorite_color"', "round": "1", "action": "accept", "arg.color": "red"})
    assert taken.status_code == 200, taken.text
    before = await _recorded(console, sid, op)

    # Another tab's colour dialog, still showing the question unanswered, sends its answer too.
    refused = await _post_answer(console, sid, op, "favorite_color", 1)
    shown = await _post_answer(console, sid, op, "favorite_color", 1, headers=HTMX)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert '"favorite_color" was already answered' in said and "nothing was sent" in said, said
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "already answered" in shown.text, shown.text
    assert await _recorded(console, sid, op) == before  # nothing changed, nothing recorded
    done = await _post_answer(console, sid, op, "workspace_roots", 1, action="accept")
    assert done.status_code == 200 and done.json()["status"] == "complete", done.text
    retry = done.json()["rounds"][1]["key"]
    sent = _sent_params(await console.entry(sid, retry))["inputResponses"]
    assert sent["favorite_color"] == {"action": "accept", "content": {"color": "red"}}, sent


# --- Cancel and Enable and retry on an operation that is past them ---------------------------------------------------


async def _tools_calls_sent(console: Console, sid: str) -> int:
    """tools/call requests the session has sent: every round of every tools/call operation is one."""
    ops = (await console.session(sid))["operations"]
    return sum(len(o["rounds"]) for o in ops if o["method"] == "tools/call")


async def test_cancel_on_an_operation_that_has_completed_is_refused_saying_nothing_was_cancelled(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "echo", text="done"))["operation"]["op"]
    before = await _recorded(console, sid, op)

    refused = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=JSON)
    shown = await console.http.post(f"/sessions/{sid}/operations/{op}/cancel", headers=HTMX)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "Nothing was cancelled" in said and "is complete" in said and op in said, said
    assert shown.status_code == 409 and 'role="alert"' in shown.text and "Nothing was cancelled" in shown.text
    assert await _recorded(console, sid, op) == before
    assert before[1]["status"] == "complete"


async def test_enable_and_retry_on_a_completed_operation_is_refused_and_sends_no_tools_call(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "echo", text="once"))["operation"]["op"]
    before, sent = await _recorded(console, sid, op), await _tools_calls_sent(console, sid)

    refused = await console.http.post(f"/sessions/{sid}/operations/{op}/enable-and-retry", headers=JSON)

    assert refused.status_code == 409, refused.text
    said = refused.json()["error"]
    assert "No client capability is asked for" in said and "nothing was sent" in said and "complete" in said, said
    assert await _recorded(console, sid, op) == before
    assert await _tools_calls_sent(console, sid) == sent


async def test_enable_and_retry_pressed_again_after_it_retried_is_refused_and_the_tool_is_not_called_again(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    saved = await console.http.post(f"/sessions/{sid}/capabilities", data={"mode": "json", "caps_json": "{}"},
                                    headers=JSON)
    assert saved.status_code == 200 and saved.json()["client_capabilities"] == {}, saved.text
    op = (await console.call_tool(sid, "profile_form"))["operation"]
    assert op["status"] == "error" and op["required_capabilities"] == {"elicitation": {"form": {}}}, op
    retried = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/enable-and-retry", headers=JSON)
    assert retried.status_code == 200 and retried.json()["status"] == "awaiting_input", retried.text
    before, sent = await _recorded(console, sid, op["op"]), await _tools_calls_sent(console, sid)

    again = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/enable-and-retry", headers=JSON)

    assert again.status_code == 409 and "nothing was sent" in again.json()["error"], again.text
    assert await _recorded(console, sid, op["op"]) == before
    assert await _tools_calls_sent(console, sid) == sent == 2


# --- a round that is no round number ---------------------------------------------------------------------------------


@pytest.mark.parametrize("round_", ["1 ", "+1", "1.0", "\u00b2", "\u0661", "9" * 5000])
async def test_an_answer_or_abandon_whose_round_is_not_plain_digits_is_refused_and_takes_nothing(
        console: Console, demo_url: str, round_: str) -> None:
    sid = await console.connected_http(demo_url)
    op = (await console.call_tool(sid, "multi_ask"))["operation"]["op"]
    before = await _recorded(console, sid, op)

    answered = await _post_answer(console, sid, op, "favorite_color", round=round_)
    abandoned = await console.http.post(f"/sessions/{sid}/operations/{op}/abandon", data={"round": round_},
                                        headers=JSON)

    for refused in (answered, abandoned):
        assert refused.status_code == 400, refused.text
        assert "not a round number" in refused.json()["error"], refused.text
    assert await _recorded(console, sid, op) == before
    assert (await _op(console, sid, op))["status"] == "awaiting_input"
