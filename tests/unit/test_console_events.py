"""Typed timeline events: explicit, versioned serialization; every key consumed; v1 payloads migrate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.console.events import (
    EVENT_VERSION,
    RECORDS,
    CapabilitiesChanged,
    ExchangeFinished,
    ExchangeStarted,
    ListsRefreshed,
    RequestSettingsChanged,
    RootsChanged,
    StatusChanged,
    TimelineEvent,
    Wire,
    load,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_timeline_event_round_trips_through_to_dict_and_from_dict() -> None:
    event = TimelineEvent("s1", 4, ExchangeStarted(key="x1", method="m", name={"list": [1, None, "é"]}), at=12.5)
    raw = event.to_dict()
    assert raw["v"] == EVENT_VERSION == 3
    assert raw["kind"] == "exchange_started" and raw["data"]["name"] == {"list": [1, None, "é"]}
    assert TimelineEvent.from_dict(raw) == event
    assert TimelineEvent.from_json(event.to_json()) == event
    assert raw["v"] == EVENT_VERSION  # from_dict does not consume the caller's dict


@pytest.mark.parametrize(("session_id", "at"), [
    ("s1", 12.5), ("ünïcode \"quoted\" \ud800", 1764600000.123456), ("x", 1e-07), ("x", 5.0), ("x", float("nan")),
])
def test_an_events_json_is_exactly_what_json_dumps_writes_for_its_dict(session_id: str, at: float) -> None:
    event = TimelineEvent(session_id, 7, ExchangeStarted(key="x1", method="m", name={"é": [1.5, None]}), at=at)
    assert event.to_json() == json.dumps(event.to_dict(), separators=(",", ":"))


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_every_kind_round_trips_with_its_defaults(kind: str) -> None:
    record = RECORDS[kind]()
    assert record.kind == kind
    assert load(kind, record.to_data()) == record


def test_timeline_event_from_dict_rejects_unknown_keys() -> None:
    raw = {**TimelineEvent("s1", 1, StatusChanged()).to_dict(), "extra": True}
    with pytest.raises(ValueError, match=r"unknown keys.*extra"):
        TimelineEvent.from_dict(raw)


def test_a_record_rejects_an_unknown_key_in_its_data() -> None:
    with pytest.raises(ValueError, match=r"unknown keys in status event.*colour"):
        load("status", {"status": "connected", "message": "", "colour": "red"})


@pytest.mark.parametrize("version", [0, 4, "1", None])
def test_timeline_event_from_dict_rejects_unknown_versions(version: object) -> None:
    raw = {**TimelineEvent("s1", 1, StatusChanged()).to_dict(), "v": version}
    with pytest.raises(ValueError, match="version"):
        TimelineEvent.from_dict(raw)


def test_the_five_shapes_of_the_v1_session_kind_become_five_kinds() -> None:
    assert load("session", {"status": "connected", "message": "hi"}, 1) == StatusChanged("connected", "hi")
    assert load("session", {"lists": {"tools": 2}, "only": "tools"}, 1) == \
        ListsRefreshed(only="tools", lists={}, counts={"tools": 2})
    assert load("session", {"capabilities": {"roots": {}}}, 1) == CapabilitiesChanged({"roots": {}}, saved=False)
    assert load("session", {"roots": [{"uri": "file:///a"}], "saved": True}, 1) == RootsChanged([{"uri": "file:///a"}])
    assert load("session", {"request_settings": {"log_level": "info", "progress": False, "auto_refresh": True}},
                1) == RequestSettingsChanged("info", False, True)
    with pytest.raises(ValueError, match="no known shape"):
        load("session", {"mystery": 1}, 1)


def test_v1_exchanges_and_frames_migrate_to_their_v2_records() -> None:
    started = load("exchange", {"key": "c1-1", "method": "m", "name": None, "id": 1, "status": "pending",
                                "op": None, "round": None, "replay_of": None}, 1)
    assert isinstance(started, ExchangeStarted) and started.id == 1
    finished = load("exchange", {"key": "c1-1", "status": "ok", "duration_ms": 3.0}, 1)
    assert isinstance(finished, ExchangeFinished) and finished.duration_ms == 3.0
    wire = load("wire", {"direction": "in", "raw": "{}", "kind": "response", "problem": None, "exchange": "c1-1",
                         "http_status": 200, "headers": None, "note": None, "wall": 1.0}, 1)
    assert isinstance(wire, Wire) and wire.frame_kind == "response"


def documented_kinds() -> set[str]:
    return set(re.findall(r"^## `([a-z_]+)`", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE))


def test_docs_events_md_documents_every_kind_and_nothing_else() -> None:
    assert documented_kinds() == set(RECORDS)


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_docs_events_md_lists_every_field_of_each_kind(kind: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split(f"## `{kind}`", 1)[1].split("\n## ", 1)[0]
    for name in RECORDS[kind]().to_data():
        assert f"`{name}`" in section, f"docs/events.md: {kind} does not describe its field {name!r}"
