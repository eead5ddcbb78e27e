"""Nested objects and arrays in a generated form: inputs named by their path, read back into one value.

A nested input is named `at:` + the JSON array of its path (`at:["note","title"]`, `at:["tags",0,"name"]`).
Property names are the server's to choose and may hold any character, so no separator could be told apart from a
name; a JSON array can. Top-level flat fields keep `arg.<name>` (scripts post that).

An item that holds fields (an object, an array) has a marker input named by the item's own path: an item whose
fields are all empty is still an item, and what the form shows is what is sent. Leaves inside a tree are never
checkboxes (a checkbox left unticked sends nothing): a boolean is a select of not set / true / false.

The inverse, `pairs_of`, turns a JSON value into the inputs that would send it, so the JSON box and the form can
be synced both ways with one reading of the form: JSON fits the form when reading its inputs gives it back exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.web.forms import FormField, FormInput, check_value, convert, parse_form

PREFIX = "at:"
Seg = str | int
Path = tuple[Seg, ...]
ITEM_MARK = "item"


def path_name(path: Sequence[Seg]) -> str:
    """The input name of a nested field (ASCII, so a lone surrogate in a property name survives the round trip)."""
    return PREFIX + json.dumps(list(path), ensure_ascii=True, separators=(",", ":"))


@dataclass(slots=True)
class Tree:
    """The path-named inputs of a submitted form: values by path, and what sits below each path, in order."""
    values: dict[Path, list[str]] = field(default_factory=dict)
    below: dict[Path, dict[Seg, None]] = field(default_factory=dict)
    tops: set[str] = field(default_factory=set)

    def first(self, path: Sequence[Seg]) -> str | None:
        got = self.values.get(tuple(path))
        return got[0] if got else None

    def every(self, path: Sequence[Seg]) -> list[str]:
        return self.values.get(tuple(path), [])

    def indices(self, path: Sequence[Seg]) -> list[int]:
        """The items under an array's path, in order (an int segment is an item's place)."""
        return sorted(s for s in self.below.get(tuple(path), {}) if isinstance(s, int) and not isinstance(s, bool))


def _path(name: str) -> Path | None:
    try:
        raw = json.loads(name[len(PREFIX):])
    except ValueError:
        return None
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
        return None
    if not all(isinstance(s, str) or (isinstance(s, int) and not isinstance(s, bool)) for s in raw):
        return None
    return tuple(raw)


def entries(form: Mapping[str, Sequence[str]]) -> Tree:
    tree = Tree()
    for key in form:
        if not key.startswith(PREFIX):
            continue
        path = _path(key)
        if path is None:
            continue
        tree.values[path] = list(form[key])
        tree.tops.add(str(path[0]))
        for i in range(len(path)):
            tree.below.setdefault(path[:i], {})[path[i]] = None
    return tree


def read(f: FormField, path: Path, tree: Tree, where: str, errors: dict[str, str],
         forced: bool = False) -> tuple[bool, Any]:
    """(present, value) of one field of the tree; problems go into `errors` under `where` (a path people read).

    `forced`: the field is there whatever it holds (an item, or a required part of an object that is sent)."""
    if f.kind == "object":
        return _read_object(f, path, tree, where, errors, forced)
    if f.kind in ("array", "list") and f.item is not None:
        items = []
        for n, i in enumerate(tree.indices(path)):
            _, value = read(f.item, (*path, i), tree, f"{where}[{n}]", errors, forced=True)
            items.append(value)
        present = bool(items) or forced
        problem = check_value(f, items) if present else None
        if problem:
            errors[where] = problem
        return present, items if present else None
    return _read_leaf(f, path, tree, where, errors, forced)


def _read_object(f: FormField, path: Path, tree: Tree, where: str, errors: dict[str, str],
                 forced: bool) -> tuple[bool, Any]:
    out: dict[str, Any] = {}
    before = len(errors)
    for c in f.children:
        present, value = read(c, (*path, c.name), tree, f"{where}.{c.name}", errors)
        if present:
            out[c.name] = value
    if not (out or forced or len(errors) > before or path in tree.values):
        return False, None  # an optional object left empty is left out, as an empty optional field is
    for c in f.children:
        if c.required and c.name not in out and not any(k.startswith(f"{where}.{c.name}") for k in errors):
            if c.composite:
                out[c.name] = read(c, (*path, c.name), tree, f"{where}.{c.name}", errors, forced=True)[1]
            else:
                errors[f"{where}.{c.name}"] = "This field is required."
    return True, out


def _read_leaf(f: FormField, path: Path, tree: Tree, where: str, errors: dict[str, str],
               forced: bool) -> tuple[bool, Any]:
    if f.kind == "multi":
        chosen = [v for v in tree.values.get(path, []) if v != ""]
        if not chosen and not forced:
            return False, None
        value: Any = chosen
    else:
        text = tree.first(path)
        if text is None or text == "" or (text.strip() == "" and f.kind != "string"):
            if not forced:
                return False, None
            if f.kind != "string":
                errors[where] = "Fill this in or remove the item."
                return True, None
            text = ""
        try:
            value = _bool(text) if f.kind == "boolean" else convert(f, text)
        except ValueError as exc:
            errors[where] = str(exc)
            return True, None
    problem = check_value(f, value)
    if problem:
        errors[where] = problem
    return True, value


def _bool(text: str) -> bool:
    if text in ("true", "false"):
        return text == "true"
    raise ValueError("Choose true or false.")


class NotFitting(ValueError):
    """JSON the form cannot show exactly; the message says where."""


def pairs_of(fields: list[FormField], value: Any) -> list[tuple[str, str]]:
    """The inputs (name, text) that would send `value` from this form; NotFitting when no inputs could."""
    if not isinstance(value, dict):
        raise NotFitting("the arguments must be a JSON object")
    known = {f.name: f for f in fields}
    for key in value:
        if key not in known:
            raise NotFitting(f"the form has no field {key!r}")
    out: list[tuple[str, str]] = []
    for f in fields:
        if f.name in value:
            (_tree_pairs if f.composite else _flat_pairs)(f, (f.name,), value[f.name], out)
    return out


def fits(fields: list[FormField], value: Any) -> list[tuple[str, str]]:
    """`pairs_of(value)` when reading those inputs gives `value` back exactly (types, numbers, keys), else
    NotFitting with the reason: the form never claims to show JSON it would send differently."""
    unheld = _text_no_field_holds(value)
    if unheld:
        raise NotFitting(f"{unheld}: a form field cannot hold it as it is (an input drops line breaks), so the JSON "
                         "is what is sent")
    pairs = pairs_of(fields, value)
    got, errors = parse_form(fields, FormInput(pairs))
    if errors:
        where, problem = next(iter(errors.items()))
        raise NotFitting(f"{where}: {problem}")
    if _canonical(got) != _canonical(value):
        raise NotFitting("the form would send it differently (an empty text, or a value it leaves out)")
    return pairs


_UNHELD = re.compile("[\r\n\x00\ud800-\udfff]")


def _text_no_field_holds(value: Any, depth: int = 0) -> str:
    """What in `value` a browser's field would change: a line break (an <input> drops it, a one-per-line list
    splits on it), NUL (the HTML parser turns it into U+FFFD) or a lone surrogate. "" when there is none."""
    if isinstance(value, str):
        match = _UNHELD.search(value)
        return f"a text holds U+{ord(match.group(0)):04X}" if match else ""
    if depth > 64:
        return ""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _text_no_field_holds(key, depth + 1) if isinstance(key, str) else ""
        found = found or _text_no_field_holds(item, depth + 1)
        if found:
            return found
    return ""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def _text(f: FormField, v: Any, where: str) -> str:
    if f.kind == "string" and isinstance(v, str):
        return v
    if f.kind == "enum" and isinstance(v, str):
        return v
    if f.kind in ("integer", "number") and isinstance(v, int | float) and not isinstance(v, bool):
        return repr(v) if isinstance(v, float) else str(v)
    if f.kind == "boolean" and isinstance(v, bool):
        return "true" if v else "false"
    if f.kind == "json":
        return json.dumps(v, indent=2, ensure_ascii=False)
    raise NotFitting(f"{where}: {json.dumps(v)[:60]} is not a {f.kind} value")


def _flat_pairs(f: FormField, path: Path, v: Any, out: list[tuple[str, str]]) -> None:
    if f.kind == "multi":
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise NotFitting(f"{f.name}: a list of the offered values is expected")
        out.append((f"present.{f.name}", "multi"))
        out.extend((f.input_name, x) for x in v)
    elif f.kind == "boolean" and f.required:  # a checkbox (see _fields.html): present marker, ticked or not
        if not isinstance(v, bool):
            raise NotFitting(f"{f.name}: true or false is expected")
        out.append((f"present.{f.name}", "checkbox"))
        if v:
            out.append((f.input_name, "true"))
    else:
        out.append((f.input_name, _text(f, v, f.name)))


def _tree_pairs(f: FormField, path: Path, v: Any, out: list[tuple[str, str]], item: bool = False) -> None:
    where = ".".join(str(s) for s in path)
    if f.kind == "object":
        if not isinstance(v, dict):
            raise NotFitting(f"{where}: an object is expected")
        known = {c.name: c for c in f.children}
        for key in v:
            if key not in known:
                raise NotFitting(f"{where}: the form has no field {key!r}")
        if item:
            out.append((path_name(path), ITEM_MARK))
        for c in f.children:
            if c.name in v:
                _tree_pairs(c, (*path, c.name), v[c.name], out)
    elif f.kind in ("array", "list") and f.item is not None:
        if not isinstance(v, list):
            raise NotFitting(f"{where}: a list is expected")
        if item:
            out.append((path_name(path), ITEM_MARK))
        for i, x in enumerate(v):
            _tree_pairs(f.item, (*path, i), x, out, item=True)
    elif f.kind == "multi":
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise NotFitting(f"{where}: a list of the offered values is expected")
        out.extend((path_name(path), x) for x in v)
    else:
        out.append((path_name(path), _text(f, v, where)))
