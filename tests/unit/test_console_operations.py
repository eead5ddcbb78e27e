"""OperationDriver on a memory runner: MRTR rounds, the cap, cancel and enable-and-retry, folded into a Timeline."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.console.events import ExchangeFinished, ExchangeStarted
from app.console.live_events import OpAnswered, OpEnded, OpRound, OpStarted
from app.console.operations import Operation, OperationDriver
from app.console.state import fold, projection
from app.console.timeline import Timeline
from app.mcp.client import reply_json
from tests.memory_runner import MakeRunner, error, result, until_stopped

CAPS = "io.modelcontextprotocol/clientCapabilities"
ASK_NAME = {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Your name?",
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}


async def pair_server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
    """Asks for two inputs, "a" and "b", under requestState "s1"; completes once they are answered."""
    if "inputResponses" not in message["params"]:
        yield result(message, {"resultType": "input_required", "inputRequests": {"a": ASK_NAME, "b": ASK_NAME},
                               "requestState": "s1"})
    else:
        yield result(message, {"resultType": "complete", "content": []})


def machine_view(op: Operation) -> dict[str, Any]:
    """What the machine itself holds of an operation, in the fold's words."""
    return {"status": op.status, "message": op.message, "rounds": [r.to_data() for r in op.rounds],
            "pending": op.pending, "answers": sorted(op.answers), "errors": op.errors, "drafts": op.drafts,
            "required_capabilities": op.required_capabilities, "params": op.params, "started": op.started,
            "final": reply_json(op.final) if op.final is not None else None, "validation": op.validation}


def fold_view(timeline: Timeline, op_id: str) -> dict[str, Any]:
    record = timeline.state.operations[op_id]
    return {"status": record.status, "message": record.message, "rounds": record.rounds, "pending": record.pending,
            "answers": sorted(record.answers), "errors": record.errors, "drafts": record.drafts,
            "required_capabilities": record.required_capabilities, "params": record.params,
            "started": record.started, "final": record.final.data if record.final is not None else None,
            "validation": record.validation}


@pytest.fixture(autouse=True)
def every_operation_is_its_fold(monkeypatch: pytest.MonkeyPatch, timeline: Timeline) -> Iterator[None]:
    """After each test: every operation a driver ran is, in the fold of its transitions, what its machine holds
    (no state beside the fold), and the fold of the stored events is the live fold."""
    drivers: list[OperationDriver] = []
    init = OperationDriver.__init__

    def keep(self: OperationDriver, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        drivers.append(self)

    monkeypatch.setattr(OperationDriver, "__init__", keep)
    yield
    for driver in drivers:
        for op in driver.ops.values():
            if op.begun:
                assert fold_view(timeline, op.id) == machine_view(op), op.id
    stored = timeline.stored().events(timeline.session_id)
    assert projection(fold(timeline.session_id, stored))["operations"] == projection(timeline.state)["operations"]


async def test_a_plain_call_completes_in_one_round_and_the_fold_records_it(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]})

    driver = OperationDriver(make_runner(server), timeline)
    op = await driver.start("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    record = timeline.state.operations[op.id]
    assert (op.status, record.status, len(record.rounds)) == ("complete", "complete", 1)
    assert record.final is not None and record.final.ok
    [rnd] = [r for r in timeline.state.rounds.values() if r.get("op") == op.id]
    assert rnd["round"] == 1 and rnd["status"] == "ok"
    assert timeline.state.entries[op.key]["kind"] == "operation"


async def test_two_rounds_retry_with_a_new_id_the_answers_and_the_echoed_request_state(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        if "inputResponses" not in message["params"]:
            yield result(message, {"resultType": "input_required", "inputRequests": {"who": ASK_NAME},
                                   "requestState": "opaque-1"})
        else:
            yield result(message, {"resultType": "complete", "content": []})

    runner = make_runner(server)
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "greet", "arguments": {}})
    assert op.status == "awaiting_input"
    assert timeline.state.operations[op.id].pending == {"who": ASK_NAME}
    assert [r.id for r in driver.awaiting()] == [op.id]

    answer = {"action": "accept", "content": {"name": "Ada"}}
    await driver.answer(op, "who", answer)
    first, second = runner.sent("tools/call")
    assert second["id"] != first["id"]
    assert second["params"]["inputResponses"] == {"who": answer}
    assert second["params"]["requestState"] == "opaque-1"
    assert second["params"]["arguments"] == {} and second["params"]["name"] == "greet"
    record = timeline.state.operations[op.id]
    assert record.status == "complete" and [r["n"] for r in record.rounds] == [1, 2]
    assert record.rounds[0]["input_keys"] == ["who"] and record.rounds[0]["human_ms"] is not None
    assert driver.awaiting() == []


async def test_a_request_state_only_round_is_retried_at_once_and_marked_so(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        if message["params"].get("requestState") != "busy-1":
            yield result(message, {"resultType": "input_required", "requestState": "busy-1"})
        else:
            yield result(message, {"resultType": "complete", "content": []})

    runner = make_runner(server)
    op = await OperationDriver(runner, timeline).start("prompts/get", {"name": "p"})
    record = timeline.state.operations[op.id]
    assert record.status == "complete"
    assert [r["retried_at_once"] for r in record.rounds] == [True, False]
    second = runner.sent("prompts/get")[1]["params"]
    assert second["requestState"] == "busy-1" and "inputResponses" not in second


async def test_an_operation_stops_as_capped_at_the_round_cap(make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "input_required", "requestState": f"s{message['id']}"})

    runner = make_runner(server, mrtr_max_rounds=3)
    op = await OperationDriver(runner, timeline).start("tools/call", {"name": "loop"})
    record = timeline.state.operations[op.id]
    assert record.status == "capped" and len(record.rounds) == 3
    assert "the cap is 3" in record.message and "mrtr_max_rounds" in record.message
    assert len(runner.sent("tools/call")) == 3


async def test_cancel_ends_the_round_in_flight_and_records_who_cancelled(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    reached, stop = asyncio.Event(), asyncio.Event()

    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        reached.set()  # the request is on the wire: the cancel goes to the exchange, not just the send
        async for frame in until_stopped(stop):
            yield frame

    runner = make_runner(server)
    driver = OperationDriver(runner, timeline)
    op = driver.create("tools/call", {"name": "slow"})
    task = asyncio.create_task(driver.run(op))
    await asyncio.wait_for(reached.wait(), 2.0)
    assert timeline.state.operations[op.id].status == "running"
    assert await driver.cancel(op, "operator")
    await asyncio.wait_for(task, 2.0)
    stop.set()
    record = timeline.state.operations[op.id]
    assert record.status == "cancelled" and "cancelled by the operator" in record.message
    assert runner.transport.cancelled == ["cancelled by the operator"]
    assert not await driver.cancel(op, "operator")  # nothing left in flight


async def test_missing_capability_offers_enable_and_retry_which_declares_it_and_runs_again(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        if "sampling" not in message["params"]["_meta"][CAPS]:
            yield error(message, -32021, "needs sampling", {"requiredCapabilities": {"sampling": {"tools": {}}}})
        else:
            yield result(message, {"resultType": "complete", "content": []})

    runner = make_runner(server)
    runner.set_capabilities({"elicitation": {"form": {}}})
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "summarise"})
    record = timeline.state.operations[op.id]
    assert record.status == "error" and record.required_capabilities == {"sampling": {"tools": {}}}

    await driver.enable_and_retry(op)
    # A command, folded like any other; what was declared before stays.
    assert timeline.state.capabilities == {"elicitation": {"form": {}}, "sampling": {"tools": {}}}
    assert runner.sent("tools/call")[1]["params"]["_meta"][CAPS]["sampling"] == {"tools": {}}
    record = timeline.state.operations[op.id]
    assert record.status == "complete" and record.required_capabilities is None


@pytest.mark.parametrize("wanted", [["sampling"], "sampling", 5])
async def test_required_capabilities_that_are_not_an_object_offer_nothing_to_enable_and_retry_sends_nothing(
        make_runner: MakeRunner, timeline: Timeline, wanted: Any) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield error(message, -32021, "needs sampling", {"requiredCapabilities": wanted})

    runner = make_runner(server)
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "summarise"})

    assert op.status == "error" and op.required_capabilities is None
    assert "requiredCapabilities is not an object" in op.message
    assert timeline.state.operations[op.id].required_capabilities is None  # so the card offers no button
    assert not await driver.enable_and_retry(op)
    assert len(runner.sent("tools/call")) == 1


async def test_enable_and_retry_sends_nothing_twice_and_nothing_for_an_operation_that_asked_for_no_capability(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        if "sampling" not in message["params"]["_meta"][CAPS]:
            yield error(message, -32021, "needs sampling", {"requiredCapabilities": {"sampling": {}}})
        else:
            yield result(message, {"resultType": "complete", "content": []})

    runner = make_runner(server)
    runner.set_capabilities({})
    driver = OperationDriver(runner, timeline)
    asked = await driver.start("tools/call", {"name": "summarise"})
    assert asked.status == "error" and asked.required_capabilities == {"sampling": {}}
    # Two tabs press Enable and retry at once: the second waits on the lock, then finds nothing asked.
    first, second = await asyncio.gather(driver.enable_and_retry(asked), driver.enable_and_retry(asked))
    assert (first, second) == (True, False)
    plain = await driver.start("tools/call", {"name": "echo"})  # sampling is declared now: it completes
    sent = len(runner.sent("tools/call"))

    assert plain.status == "complete" and not await driver.enable_and_retry(plain)
    assert not await driver.enable_and_retry(asked)  # complete now: what it asked was enabled
    assert len(runner.sent("tools/call")) == sent
    assert timeline.state.operations[plain.id].status == "complete"
    assert len(timeline.state.operations[asked.id].rounds) == 2


async def test_a_second_answer_to_a_key_already_answered_in_the_round_is_not_taken_and_the_first_is_sent(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    runner = make_runner(pair_server)
    driver = OperationDriver(runner, timeline)
    op = await driver.start("tools/call", {"name": "pair"})
    first, second = {"action": "accept", "content": {"name": "Ada"}}, {"action": "decline"}
    assert await driver.answer(op, "a", first)
    recorded = timeline.seq

    assert not await driver.answer(op, "a", second)
    assert op.answers == {"a": first} and timeline.seq == recorded  # nothing changed, nothing recorded
    assert await driver.answer(op, "b", second)
    assert runner.sent("tools/call")[1]["params"]["inputResponses"] == {"a": first, "b": second}


async def test_a_refused_answer_keeps_what_was_typed_until_an_answer_is_taken_and_the_round_is_timed(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    driver = OperationDriver(make_runner(pair_server), timeline)
    op = await driver.start("tools/call", {"name": "pair"})
    driver.refuse(op, "a", {"name": "too long"}, {"name": ["x" * 9]}, round_=1)
    driver.refuse(op, "a", {"name": "stale"}, {"name": ["y"]}, round_=2)  # another round's: not taken
    record = timeline.state.operations[op.id]
    assert record.errors == {"a": {"name": "too long"}} and record.drafts == {"a": {"name": ["x" * 9]}}
    assert "drafts" not in timeline.state.entries[op.key]  # the entry a viewer sees never carries them
    assert await driver.answer(op, "a", {"action": "decline"})
    assert timeline.state.operations[op.id].errors == {} and timeline.state.operations[op.id].answers == ["a"]
    assert await driver.answer(op, "b", {"action": "decline"})
    record = timeline.state.operations[op.id]
    assert record.status == "complete" and record.rounds[0]["answered"] is not None
    assert record.rounds[0]["human_ms"] == pytest.approx((record.rounds[0]["answered"]
                                                          - record.rounds[0]["received"]) * 1000)


async def test_an_operation_taken_up_again_from_the_fold_keeps_the_answers_given_before_and_sends_them_all(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    before = OperationDriver(make_runner(pair_server), timeline)
    op = await before.start("tools/call", {"name": "pair"})
    first = {"action": "accept", "content": {"name": "Ada"}}
    assert await before.answer(op, "a", first)
    before.ops.clear()  # that console is gone (its process killed)
    # A console that starts again has only the fold: it takes the operation up from it.
    runner = make_runner(pair_server)
    again = OperationDriver(runner, timeline)
    revived = again.revive(op.id)
    assert revived is not None and revived.answers == {"a": first}
    assert await again.answer(revived, "b", {"action": "decline"})
    (retry,) = runner.sent("tools/call")
    assert retry["params"]["inputResponses"] == {"a": first, "b": {"action": "decline"}}
    assert retry["params"]["requestState"] == "s1" and retry["params"]["name"] == "pair"
    assert timeline.state.operations[op.id].status == "complete"


async def test_an_operation_answered_in_full_whose_retry_never_went_out_sends_it_when_taken_up_again(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    before = OperationDriver(make_runner(pair_server), timeline)
    op = await before.start("tools/call", {"name": "pair"})
    # The console stopped after recording both answers and before its retry reached the wire.
    for key in ("a", "b"):
        timeline.append(OpAnswered(key=op.key, op=op.id, round=1, input=key, at=op.started + 1, value={"k": key}))
    before.ops.clear()
    runner = make_runner(pair_server)
    again = OperationDriver(runner, timeline)
    assert again.answered_in_full() == [op.id]
    assert await again.resume(op.id)
    (retry,) = runner.sent("tools/call")
    assert retry["params"]["inputResponses"] == {"a": {"k": "a"}, "b": {"k": "b"}}
    assert retry["params"]["requestState"] == "s1"
    assert timeline.state.operations[op.id].status == "complete" and again.answered_in_full() == []
    assert not await again.resume(op.id)  # nothing twice


async def test_more_rounds_than_an_operation_keeps_fold_into_the_latest_thousand(timeline: Timeline) -> None:
    timeline.append(OpStarted(key="op-x", op="x", method="tools/call", name="t", round={"n": 1, "status": "pending"}))
    asked = {f"k{i}": {"method": "roots/list"} for i in range(101)}
    for n in range(1, 1201):
        timeline.append(OpRound(key="op-x", op="x", round={"n": n, "status": "input_required"},
                                status="awaiting_input", pending_requests=asked))
    record = timeline.state.operations["x"]
    assert [r["n"] for r in record.rounds] == list(range(201, 1201))  # the last one is the one asking
    assert len(record.pending) == 100  # as many questions as the machine takes in one round
    assert timeline.state.entries["op-x"]["rounds"] == record.rounds


async def test_an_answer_recorded_for_an_earlier_round_is_not_the_answer_of_the_round_asking(
        timeline: Timeline) -> None:
    timeline.append(OpStarted(key="op-x", op="x", method="tools/call", name="t", round={"n": 1, "status": "pending"}))
    timeline.append(OpRound(key="op-x", op="x", round={"n": 2, "status": "input_required"}, status="awaiting_input",
                            pending_requests={"k": ASK_NAME}))
    timeline.append(OpAnswered(key="op-x", op="x", round=1, input="k", value={"late": True}))
    record = timeline.state.operations["x"]
    assert record.answers == [] and record.answer_values == {}
    timeline.append(OpAnswered(key="op-x", op="x", round=2, input="k", value={"now": True}))
    assert timeline.state.operations["x"].answer_values == {"k": {"now": True}}


async def test_abandoning_a_waiting_operation_ends_it_with_the_reason_and_no_questions(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "input_required", "inputRequests": {"a": ASK_NAME},
                               "requestState": "s1"})

    driver = OperationDriver(make_runner(server), timeline)
    op = await driver.start("tools/call", {"name": "ask"})
    assert not await driver.abandon(op, "not this one", round_=2)
    assert await driver.abandon(op, "Abandoned by the user", round_=1)
    record = timeline.state.operations[op.id]
    assert (record.status, record.message, record.pending) == ("abandoned", "Abandoned by the user", {})
    assert [e.kind for e in timeline.stored().events(timeline.session_id) if e.kind.startswith("op_")] == [
        "op_started", "op_round", "op_ended"]


async def test_structured_content_is_checked_against_the_output_schema_of_the_listed_tool(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "complete", "content": [], "structuredContent": {"n": "seven"}})

    runner = make_runner(server)
    runner.offer_tools([{"name": "count", "inputSchema": {"type": "object"},
                         "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}])
    op = await OperationDriver(runner, timeline).start("tools/call", {"name": "count"})
    validation = timeline.state.operations[op.id].validation
    assert validation is not None and validation["valid"] is False and "at n" in validation["message"]


class _CountingOps(OrderedDict[str, Any]):
    """The fold's operations, counting how often something walks all of them."""

    walks = 0

    def __iter__(self) -> Iterator[str]:
        type(self).walks += 1
        return super().__iter__()


async def test_new_operation_ids_pass_the_folds_ids_and_read_the_fold_once_not_per_call(
        make_runner: MakeRunner, timeline: Timeline) -> None:
    async def server(message: dict[str, Any], _h: dict[str, str]) -> AsyncIterator[str]:
        yield result(message, {"resultType": "complete", "content": []})

    restored = _CountingOps()
    restored["900000-abcd"] = None  # as a restored session's fold holds it: ids must go past it
    timeline.state.operations = restored  # type: ignore[assignment]
    driver = OperationDriver(make_runner(server), timeline)
    ids = [driver.create("tools/call", {"name": "echo", "arguments": {}}).id for _ in range(50)]
    numbers = [int(i.split("-")[0]) for i in ids]
    assert numbers[0] > 900000 and numbers == sorted(set(numbers))
    assert _CountingOps.walks == 1
    del restored["900000-abcd"]  # a stand-in, not a record: the fold of the stored events has nothing of it


async def test_load_older_finds_a_page_of_entries_past_an_operation_of_many_rounds(timeline: Timeline) -> None:
    for n in range(1, 6):
        timeline.append(ExchangeStarted(key=f"e{n}", method="ping", id=n))
        timeline.append(ExchangeFinished(key=f"e{n}", status="ok"))
    timeline.append(OpStarted(key="op-x", op="x", method="tools/call", name="t", round={"n": 1, "status": "pending"}))
    for n in range(1, 51):
        timeline.append(OpRound(key="op-x", op="x", round={"n": n, "status": "input_required"},
                                status="awaiting_input", pending_requests={"k": ASK_NAME}))
    timeline.append(OpEnded(key="op-x", op="x", status="abandoned", message="given up"))
    newer = timeline.seq + 1
    page = timeline.older(newer, 2)
    assert [e["key"] for e in page] == ["op-x", "e5"]
    assert page[0]["kind"] == "operation" and page[0]["status"] == "abandoned" and len(page[0]["rounds"]) == 50
    assert [e["key"] for e in timeline.older(page[-1]["seq0"], 10)] == ["e4", "e3", "e2", "e1"]
