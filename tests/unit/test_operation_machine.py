"""The MRTR operation machine (app/mcp/operation.py), step by step and without sockets: events in, commands out."""

from __future__ import annotations

import itertools
from typing import Any

from app.mcp.client import Reply
from app.mcp.errors import RequestCancelled, RpcError
from app.mcp.operation import AskInput, Ended, OperationMachine, SendRound

_ids = itertools.count(1)
FORM = {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?",
                                                     "requestedSchema": {"type": "object", "properties": {}}}}
URL = {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://x.example"}}


def reply(result: dict[str, Any] | None = None, error: Exception | None = None) -> Reply:
    n = next(_ids)
    return Reply(key=f"k{n}", id=n, method="tools/call", params={}, sent=0.0, result=result,
                 error=error)  # type: ignore[arg-type]


def input_required(requests: dict[str, Any] | None = None, state: str | None = None) -> Reply:
    result: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        result["inputRequests"] = requests
    if state is not None:
        result["requestState"] = state
    return reply(result)


def machine(max_rounds: int = 10, **params: Any) -> OperationMachine:
    clock = itertools.count(100.0)
    return OperationMachine("tools/call", {"name": "book", "arguments": {"n": 1}, **params}, max_rounds=max_rounds,
                            clock=lambda: float(next(clock)))


def test_a_complete_first_reply_ends_the_operation_after_one_round() -> None:
    op = machine()
    first = op.start()
    assert isinstance(first, SendRound) and first.round.n == 1
    assert first.params == {"name": "book", "arguments": {"n": 1}}
    assert op.took(reply({"content": []})) == Ended("complete", "")
    assert op.status == "complete" and op.final is not None and len(op.rounds) == 1


def test_the_retry_carries_the_original_params_the_answers_and_the_state_byte_for_byte() -> None:
    op = machine(_meta={"progressToken": 1}, inputResponses={"stale": 1})
    op.start()
    state = "  opaque\u2028state=="
    asked = op.took(input_required({"who": FORM, "where": URL}, state))
    assert asked == AskInput(1, {"who": FORM, "where": URL}) and op.status == "awaiting_input"
    assert op.answer("who", {"action": "accept", "content": {"name": "Ada"}}, 1) == AskInput(1, {"where": URL})
    retry = op.answer("where", {"action": "accept"}, 1)
    assert isinstance(retry, SendRound) and retry.round.n == 2
    assert retry.params == {"name": "book", "arguments": {"n": 1}, "requestState": state,
                            "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}},
                                               "where": {"action": "accept"}}}
    assert op.rounds[0].answered is not None and op.rounds[0].input_kinds == {"who": "form", "where": "url"}


def test_no_state_is_sent_when_none_came_and_a_state_only_round_is_retried_at_once() -> None:
    op = machine()
    op.start()
    again = op.took(input_required(state="busy, try again"))
    assert isinstance(again, SendRound) and again.params["requestState"] == "busy, try again"
    assert op.rounds[0].retried_at_once and op.rounds[0].human_ms is None, "nobody answered it"
    asked = op.took(input_required({"who": FORM}))
    assert isinstance(asked, AskInput)
    retry = op.answer("who", {"action": "decline"}, 2)
    assert isinstance(retry, SendRound) and "requestState" not in retry.params


def test_an_answer_for_another_round_a_key_not_asked_or_a_second_answer_is_not_taken() -> None:
    op = machine()
    op.start()
    op.took(input_required({"a": FORM, "b": FORM}, "s1"))
    assert op.answer("a", {"action": "accept"}, round_=2) is None, "written for a round that is not asking"
    assert op.answer("zzz", {"action": "accept"}, 1) is None
    assert op.answer("a", {"action": "accept"}, 1) == AskInput(1, {"b": FORM})
    assert op.answer("a", {"action": "decline"}, 1) is None, "the first answer stands"
    assert op.answers == {"a": {"action": "accept"}}


def test_a_refused_answer_keeps_what_was_typed_until_an_answer_is_taken() -> None:
    op = machine()
    op.start()
    op.took(input_required({"a": FORM}))
    assert op.refuse("a", {"age": "not a number"}, {"age": ["x"]}, 1)
    assert op.errors == {"a": {"age": "not a number"}} and op.drafts == {"a": {"age": ["x"]}}
    op.answer("a", {"action": "accept"}, 1)
    assert op.errors == {} and op.drafts == {}


def test_rounds_past_the_cap_end_the_operation_as_capped() -> None:
    op = machine(max_rounds=2)
    op.start()
    op.took(input_required(state="1"))
    assert op.took(input_required(state="2")) == Ended("capped", op.message)
    assert op.status == "capped" and "the cap is 2" in op.message and len(op.rounds) == 2


def test_the_last_round_allowed_asks_nobody_since_no_retry_could_carry_the_answers() -> None:
    op = machine(max_rounds=2)
    op.start()
    assert isinstance(op.took(input_required({"a": FORM}, "1")), AskInput)
    op.answer("a", {"action": "accept"}, 1)
    ended = op.took(input_required({"b": FORM}, "2"))
    assert ended == Ended("capped", op.message) and op.pending == {}
    assert "round 2 asked for input again" in op.message


def test_errors_cancellation_unknown_result_types_and_tool_errors_end_it_each_in_its_own_way() -> None:
    cases = [
        (reply(error=RpcError(-32602, "bad arguments")), "error", "bad arguments"),
        (reply(error=RequestCancelled("cancelled by owner")), "cancelled", "Cancelled: cancelled by owner"),
        (reply({"resultType": "incomplete"}), "error", 'pre-release name of "input_required"'),
        (reply({"isError": True, "content": []}), "tool_error", ""),
    ]
    for answer, status, said in cases:
        op = machine()
        op.start()
        ended = op.took(answer)
        assert isinstance(ended, Ended) and ended.status == status and said in ended.message, (status, ended)


def test_a_required_capabilities_error_offers_one_retry_of_the_whole_operation() -> None:
    op = machine()
    op.start()
    op.took(reply(error=RpcError(-32021, "needs sampling", data={"requiredCapabilities": {"sampling": {}}})))
    assert op.required_capabilities == {"sampling": {}}
    again = op.retry_enabled()
    assert isinstance(again, SendRound) and again.params == {"name": "book", "arguments": {"n": 1}}
    assert op.retry_enabled() is None, "only once"
    op.took(reply({"content": []}))
    assert op.retry_enabled() is None, "never after it completed"


def test_a_malformed_input_required_with_nothing_to_answer_or_echo_is_an_error() -> None:
    op = machine()
    op.start()
    ended = op.took(reply({"resultType": "input_required", "inputRequests": "nope"}))
    assert isinstance(ended, Ended) and ended.status == "error" and "inputRequests is not an object" in ended.message


def test_giving_up_ends_it_only_while_it_asks_and_only_for_the_round_that_asks() -> None:
    op = machine()
    op.start()
    assert op.abandon("no", 1) is None, "it is not asking yet"
    op.took(input_required({"a": FORM}, "s"))
    assert op.abandon("no", 2) is None
    assert op.abandon("declined", 1) == Ended("abandoned", "declined")
    assert op.pending == {}


def test_a_revived_operation_asks_its_last_rounds_requests_again_and_retries_with_its_state() -> None:
    """What the console does after a restart: the fold's record is all there is."""
    first = machine()
    first.start()
    first.took(input_required({"a": FORM, "b": FORM}, "state-7"))
    first.answer("a", {"action": "accept"}, 1)  # given before the restart: never sent
    revived = machine()
    revived.revive("awaiting_input", "", [r.to_data() for r in first.rounds], dict(first.pending), first.started)
    assert revived.answer("b", {"action": "decline"}, 1) == AskInput(1, {"a": FORM}), "asked again"
    retry = revived.answer("a", {"action": "accept"}, 1)
    assert isinstance(retry, SendRound) and retry.round.n == 2
    assert retry.params["requestState"] == "state-7"
    assert retry.params["inputResponses"] == {"a": {"action": "accept"}, "b": {"action": "decline"}}
