"""The types of an imported event's data, checked against its record's annotations.

`events.check` tests an event's keys; the console's own events have the types their dataclasses say, but a
session file's may hold anything under a known key: a key that is a list (unhashable: the fold raised), a
`discovered` result that is a string (the session's page raised, for as long as the session was kept), rounds
that are numbers. The fold and the pages read stored events as typed, so the import is where a value of
another type is refused: as the file's fault (ValueError, a 400), before anything of it is stored.

Each record's checker is built once from its annotations: `Any` takes anything, `float` an int too (another
writer may spell 1.0 as 1), containers are checked element by element, `X | None` either.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from app.console.events import RECORDS
from app.console.operations import Round

Check = Callable[[Any], bool]
_CHECKERS: dict[str, dict[str, Check]] = {}


def check_types(kind: str, data: dict[str, Any]) -> None:
    """Raise ValueError unless every value of `data` has the type its `kind` record declares for it
    (the keys were checked already: `events.check`)."""
    checkers = _CHECKERS.get(kind)
    if checkers is None:
        checkers = _CHECKERS[kind] = _record_checkers(kind)
    for name, value in data.items():
        check = checkers.get(name)
        if check is not None and not check(value):
            raise ValueError(f"a {kind} event's {name!r} is not of its type: {str(value)[:40]!r}")


def _record_checkers(kind: str) -> dict[str, Check]:
    hints = typing.get_type_hints(RECORDS[kind])
    checkers = {name: _checker(hint) for name, hint in hints.items() if name not in ("kind", "KIND")}
    for name, shape in _ITEMS.get(kind, {}).items():
        checkers[name] = _list_of(_shape(shape))
    return checkers


def _list_of(item: Check) -> Check:
    return lambda v: type(v) is list and all(item(x) for x in v)


def _shape(fields: dict[str, Any]) -> Check:
    """An object with (at least) these keys, each of its type: what a page reads of it by name."""
    checks = {name: _checker(hint) for name, hint in fields.items()}
    return lambda v: type(v) is dict and all(name in v and check(v[name]) for name, check in checks.items())


# Items of a list a record types only as JSON objects, and that the pages read key by key: an operation's rounds
# (as `operations._round_data` writes them) and a subscription's notifications (as `listen` records them).
_ITEMS: dict[str, dict[str, dict[str, Any]]] = {
    "operation": {"rounds": {**typing.get_type_hints(Round), "human_ms": float | None}},
    "subscription": {"notifications": {"method": str, "params": dict[str, Any], "at": float}},
}


def _checker(hint: Any) -> Check:
    if hint is Any:
        return lambda _v: True
    if hint is float:
        return lambda v: type(v) is float or type(v) is int
    if hint is type(None):
        return lambda v: v is None
    if hint in (str, int, bool):
        return lambda v: type(v) is hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        options = [_checker(a) for a in args]
        return lambda v: any(option(v) for option in options)
    if origin is list:
        item = _checker(args[0])
        return lambda v: type(v) is list and all(item(x) for x in v)
    if origin is dict:
        key, value = _checker(args[0]), _checker(args[1])
        if args[1] is Any:  # a JSON object: its keys are strings by JSON, only its own type is checked
            return lambda v: type(v) is dict
        return lambda v: type(v) is dict and all(key(k) and value(x) for k, x in v.items())
    if origin is typing.Literal:
        return lambda v: v in args
    raise TypeError(f"no type check for {hint!r}")  # a record's new annotation: add its case here
