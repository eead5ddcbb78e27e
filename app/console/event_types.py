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
from itertools import repeat
from typing import Any

from app.console.events import RECORDS
from app.mcp.operation import Round

Check = Callable[[Any], bool]
# A field's check: the exact types its value may have (most fields: one set test), or a function (containers).
FieldCheck = frozenset[type] | Check
_CHECKERS: dict[str, dict[str, FieldCheck]] = {}
_ANY: frozenset[type] = frozenset()  # `Any`: nothing to check (left out of a record's checks)


def check_types(kind: str, data: dict[str, Any]) -> None:
    """Raise ValueError unless every value of `data` has the type its `kind` record declares for it
    (the keys were checked already: `events.check`). Some 1-2 µs an event: an import checks every one."""
    checkers = _CHECKERS.get(kind)
    if checkers is None:
        checkers = _CHECKERS[kind] = _record_checkers(kind)
    for name, value in data.items():
        check = checkers.get(name)
        if check is None:
            continue
        if type(check) is frozenset:
            if type(value) in check:
                continue
        elif check(value):  # type: ignore[operator]  # a frozenset is handled above
            continue
        raise ValueError(f"a {kind} event's {name!r} is not of its type: {str(value)[:40]!r}")


def types_fit(kind: str, datas: list[dict[str, Any]]) -> bool:
    """Whether `check_types(kind, data)` passes for every one of these objects (their keys checked already): a
    field at a time over all of them, in C loops where a field's check is a set of types (most are), instead of
    an event at a time (an import checks a buffer's events of one kind at once; when one fails, `check_types`
    of each says which and why)."""
    checkers = _CHECKERS.get(kind)
    if checkers is None:
        checkers = _CHECKERS[kind] = _record_checkers(kind)
    for name, check in checkers.items():
        if isinstance(check, frozenset):
            if type(None) in check:  # a missing key reads as None: passes either way, as a key not there is not checked
                found = set(map(type, map(dict.get, datas, repeat(name))))
            else:
                found = set(map(type, map(dict.get, datas, repeat(name), repeat(_ABSENT))))
                found.discard(_Absent)
            if not found <= check:
                return False
            continue
        values = [v for v in map(dict.get, datas, repeat(name), repeat(_ABSENT)) if v is not _ABSENT]
        # An empty value (None, [], {}, "", 0, False) passes or fails every check here as any other empty one of
        # its type does (they are equal, and empty): one of each type is checked (most optional lists are empty).
        empty = {type(v): v for v in values if not v}
        if not all(map(check, empty.values())) or not all(map(check, [v for v in values if v])):
            return False
    return True


class _Absent:
    """What a missing key reads as in `types_fit` (no JSON value has this type)."""


_ABSENT = _Absent()


def _record_checkers(kind: str) -> dict[str, FieldCheck]:
    hints = typing.get_type_hints(RECORDS[kind])
    checkers = {name: _field(hint) for name, hint in hints.items() if name not in ("kind", "KIND")}
    for name, shape in _ITEMS.get(kind, {}).items():
        checkers[name] = _list_of(_shape(shape))
    for name, shape in _ONE.get(kind, {}).items():
        checkers[name] = _none_or(_shape(shape))
    for name in _PAIRS.get(kind, ()):
        checkers[name] = _none_or(_list_of(_pair))
    return {name: check for name, check in checkers.items() if check is not _ANY}


def _field(hint: Any) -> FieldCheck:
    """The exact types a value of `hint` may have, when that says it all; else a function that checks it."""
    if hint is Any:
        return _ANY
    if hint is float:
        return frozenset({float, int})  # another writer may spell 1.0 as 1
    if hint in (str, int, bool, type(None)):
        return frozenset({hint})
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict and args[1] is Any:  # a JSON object: its keys are strings by JSON
        return frozenset({dict})
    if origin is typing.Union or origin is types.UnionType:
        options = [_field(a) for a in args]
        if _ANY in options:
            return _ANY
        exact = frozenset().union(*(o for o in options if type(o) is frozenset))
        functions = [o for o in options if type(o) is not frozenset]
        if not functions:
            return exact
        return lambda v: type(v) in exact or any(f(v) for f in functions)  # type: ignore[operator]
    if origin is list:
        item = _checker(args[0])
        return lambda v: type(v) is list and all(item(x) for x in v)
    if origin is dict:
        key, value = _checker(args[0]), _checker(args[1])
        return lambda v: type(v) is dict and all(key(k) and value(x) for k, x in v.items())
    if origin is typing.Literal:
        return lambda v: v in args
    raise TypeError(f"no type check for {hint!r}")  # a record's new annotation: add its case here


def _checker(hint: Any) -> Check:
    check = _field(hint)
    if type(check) is frozenset:
        return (lambda _v: True) if check is _ANY else (lambda v: type(v) in check)
    return check  # type: ignore[return-value]


def _list_of(item: Check) -> Check:
    return lambda v: type(v) is list and all(item(x) for x in v)


def _none_or(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _pair(value: Any) -> bool:
    return type(value) is list and len(value) == 2 and type(value[0]) is str and type(value[1]) is str


def _shape(fields: dict[str, Any]) -> Check:
    """An object with (at least) these keys, each of its type: what a page reads of it by name."""
    checks = {name: _checker(hint) for name, hint in fields.items()}
    return lambda v: type(v) is dict and all(name in v and check(v[name]) for name, check in checks.items())


# Lists of [name, value] pairs, which a record can type only as lists of strings: a wire event's headers of
# another length (["a"]) imported, and its entry's cURL, its HAR and the session's HAR export raised on them.
_PAIRS: dict[str, tuple[str, ...]] = {"wire": ("headers",)}
# Items of a list a record types only as JSON objects, and that the pages read key by key: an operation's rounds
# (as `Round.to_data` writes them) and a subscription's notifications (as `listen` records them).
_ROUND = {**typing.get_type_hints(Round), "human_ms": float | None}
_NOTE = {"method": str, "params": dict[str, Any], "at": float}
_ITEMS: dict[str, dict[str, dict[str, Any]]] = {
    "op_snapshot": {"rounds": _ROUND},
    "sub_snapshot": {"notifications": _NOTE},
}
# One such object (or None) under a key: the round an operation's transition carries.
_ONE: dict[str, dict[str, dict[str, Any]]] = {
    **{kind: {"round": _ROUND} for kind in ("op_started", "op_round", "op_ended")},
    "sub_notified": {"notification": _NOTE},
}


