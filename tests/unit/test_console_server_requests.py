"""The fold of `server_request` events: nested under the carrying entry, interrupted by a restart."""

from __future__ import annotations

from app.console.events import ExchangeStarted, Restored, TimelineEvent
from app.console.live_events import OperationSnapshot, ServerRequestSnapshot
from app.console.state import fold


def events(*records: object) -> list[TimelineEvent]:
    return [TimelineEvent("s", n, record) for n, record in enumerate(records, 1)]  # type: ignore[arg-type]


def asked(status: str = "awaiting") -> ServerRequestSnapshot:
    return ServerRequestSnapshot(id="sr3", key="c1x4", request_id="e-1", method="elicitation/create",
                                params={"message": "name?"}, status=status, asked=1.0)


def test_a_server_request_nests_under_the_operation_whose_round_carried_it() -> None:
    state = fold("s", events(
        OperationSnapshot(key="op-1-s", op="1-s", method="tools/call", status="running"),
        ExchangeStarted(key="c1x4", method="tools/call", id=4, op="1-s", round=1),
        asked()))
    assert state.entries["op-1-s"]["server_requests"]["sr3"]["status"] == "awaiting"
    record = state.server_requests["sr3"]
    assert record.request == {"method": "elicitation/create", "params": {"message": "name?"}}
    assert record.dialog_key == "e-1" and record.answers == []


def test_a_plain_exchange_shows_its_server_request_and_a_later_snapshot_replaces_it() -> None:
    state = fold("s", events(ExchangeStarted(key="c1x4", method="tools/call", id=4), asked(), asked("answered")))
    assert state.entries["c1x4"]["server_requests"]["sr3"]["status"] == "answered"
    assert state.server_requests["sr3"].answers == ["e-1"]


def test_a_restart_marks_an_unanswered_server_request_interrupted() -> None:
    state = fold("s", events(ExchangeStarted(key="c1x4", method="tools/call", id=4), asked(), Restored(note="r")))
    assert state.server_requests["sr3"].status == "interrupted"
    assert state.entries["c1x4"]["server_requests"]["sr3"]["status"] == "interrupted"
