"""An event's data is built from its class's field names read once, not from `dataclasses.fields()` per event."""

from __future__ import annotations

import dataclasses

import pytest

from app.console import record as record_base
from app.console.events import Notice, StatusChanged


def test_to_data_reads_the_field_names_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    Notice(level="info", message="warm").to_data()  # the class's names are read here, once
    calls: list[object] = []
    real = dataclasses.fields

    def counted(obj: object) -> tuple[dataclasses.Field[object], ...]:
        calls.append(obj)
        return real(obj)  # type: ignore[arg-type]

    monkeypatch.setattr(record_base, "fields", counted)
    for i in range(100):
        Notice(level="info", message=f"n{i}").to_data()
    assert calls == []


def test_to_data_still_writes_every_field_but_kind_in_field_order() -> None:
    for record in (Notice(level="warning", message="m", raw="r"), StatusChanged(status="connected")):
        expected = {f.name: getattr(record, f.name) for f in dataclasses.fields(record) if f.name != "kind"}
        assert record.to_data() == expected and list(record.to_data()) == list(expected)
