"""The base of every timeline event record: a dataclass whose data fields are the keys of its data object.

Kept apart from the records themselves (`app/console/events.py`, and the transitions of what lives across
requests in `app/console/live_events.py`), which both build on it.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, ClassVar, TypeVar

Json = dict[str, Any]
R = TypeVar("R", bound="Record")


_FIELDS: dict[type[Any], tuple[tuple[str, ...], frozenset[str], frozenset[str]]] = {}


def fields_of(cls: type[Any]) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """(names, as a set, the required ones) of a record's data fields, worked out once per class:
    `dataclasses.fields()` is slow on a hot path (every event stored, read, exported or imported)."""
    found = _FIELDS.get(cls)
    if found is None:
        data = [f for f in fields(cls) if f.name != "kind"]
        names = tuple(f.name for f in data)
        required = frozenset(f.name for f in data if f.default is MISSING and f.default_factory is MISSING)
        found = _FIELDS[cls] = (names, frozenset(names), required)
    return found


def names_of(cls: type[Any]) -> tuple[str, ...]:
    return fields_of(cls)[0]


class Record:
    """Shared serialization: every dataclass field but `kind` is a key of the data object."""

    kind: Any
    __slots__ = ()
    KIND: ClassVar[str]

    def to_data(self) -> Json:
        return {name: getattr(self, name) for name in names_of(type(self))}

    @classmethod
    def check(cls, data: Json) -> None:
        """What `from_data` checks, without building the record (an import stores most events as their text)."""
        _, names, required = fields_of(cls)
        keys = data.keys()
        if missing := required - keys:
            raise ValueError(f"{cls.KIND} event without its {sorted(missing)[0]!r} field")
        if unknown := keys - names:  # every key consumed: an unknown key means a newer writer, so say so
            raise ValueError(f"unknown keys in {cls.KIND} event: {sorted(unknown)}")

    @classmethod
    def from_data(cls: type[R], data: Json) -> R:
        cls.check(data)
        return cls(**data)
