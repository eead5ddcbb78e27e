"""How two JSON Schemas differ, for the surface diff (app/mcp/surface.py). Pure: no I/O, no jsonschema.

Each difference is a `Found`: where (a path of names), a rule id, words for people and whether the schema now
accepts less (`narrowed`), more (`widened`), or the same values (`cosmetic`: a description, a title, an
example). Whether narrowing breaks someone depends on who writes the values: a client writes a tool's arguments
(an input schema: narrowing breaks it), a server writes its structured output (an output schema: widening
breaks its readers, and a field it no longer sends is gone). `surface.py` makes that call; this module only
says which way the set of accepted values moved.

Covered: `type` (a list too; integer is within number), `enum` and `const`, the bounds (min/max length, items,
properties, minimum/maximum and their exclusive forms, multipleOf), `pattern` and `format`, `properties` and
`required`, `additionalProperties`, `items` (a schema or a tuple) and `prefixItems`, `anyOf`/`oneOf` (members
matched by equality, then by type), `allOf`, `not`, and `$ref` within the schema (`#/...` pointers, `$defs`,
`definitions`), followed once per pair (a recursive schema ends). Boolean schemas: `true` accepts anything,
`false` nothing. Bounded: at most MAX_DEPTH levels; a deeper difference is one "changed" finding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

Way = Literal["narrowed", "widened", "cosmetic", "changed"]  # changed: both ways, or past what is compared
MAX_DEPTH = 40
ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
COSMETIC_KEYS = frozenset({"description", "title", "examples", "example", "default", "$comment", "deprecated",
                           "readOnly", "writeOnly", "$schema", "$id", "$anchor", "markdownDescription",
                           "enumDescriptions", "x-order"})
# Numeric bounds: for each, whether a larger value accepts more (maximum) or less (minimum).
UPPER = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum", "maxContains")
LOWER = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum", "minContains")
HANDLED = frozenset({"type", "enum", "const", "properties", "required", "additionalProperties", "items",
                     "prefixItems", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "definitions", "pattern",
                     "format", "multipleOf", "uniqueItems", *UPPER, *LOWER, *COSMETIC_KEYS})


@dataclass(frozen=True, slots=True)
class Found:
    path: tuple[str, ...]
    rule: str
    way: Way
    what: str
    before: Any = None
    after: Any = None


def canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # a key of no JSON form
        return repr(value)
    except RecursionError:  # a cycle or a depth past the encoder: repr would recurse as deep
        return f"<nested past the encoder: {type(value).__name__}>"


def _pointer(root: Any, ref: str) -> Any:
    """The schema a `#/...` pointer names inside `root`; None for anything else (a remote $ref is not fetched)."""
    if not ref.startswith("#"):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


class _Walk:
    def __init__(self, old_root: Any, new_root: Any) -> None:
        self.roots = (old_root, new_root)
        self.seen: set[tuple[str, str]] = set()

    def resolve(self, schema: Any, side: int) -> tuple[Any, str | None]:
        """The schema with a `$ref` (alone or beside other keys: those are kept over the target's) followed."""
        ref_name: str | None = None
        for _ in range(16):  # a chain of refs ends
            if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
                break
            ref_name = schema["$ref"]
            target = _pointer(self.roots[side], ref_name)
            if target is None:
                break
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **rest} if isinstance(target, dict) else rest if rest else target
        return schema, ref_name

    def compare(self, old: Any, new: Any, path: tuple[str, ...], depth: int = 0) -> Iterator[Found]:
        old, old_ref = self.resolve(old, 0)
        new, new_ref = self.resolve(new, 1)
        if old_ref is not None or new_ref is not None:
            pair = (f"{old_ref}@{canonical(path)}" if old_ref else canonical(old)[:200],
                    f"{new_ref}@{canonical(path)}" if new_ref else canonical(new)[:200])
            key = (old_ref or pair[0], new_ref or pair[1])
            if key in self.seen:  # a recursive schema: this pair is being compared above
                return
            self.seen.add(key)
        if canonical(old) == canonical(new):
            return
        if depth > MAX_DEPTH:
            yield Found(path, "schema.too-deep", "changed", f"differs deeper than {MAX_DEPTH} levels")
            return
        if isinstance(old, bool) or isinstance(new, bool) or not isinstance(old, dict) or not isinstance(new, dict):
            yield from self._booleans(old, new, path)
            return
        yield from self._types(old, new, path)
        yield from self._values(old, new, path)
        yield from self._bounds(old, new, path)
        yield from self._strings(old, new, path)
        yield from self._objects(old, new, path, depth)
        yield from self._arrays(old, new, path, depth)
        yield from self._unions(old, new, path, depth)
        yield from self._cosmetic(old, new, path)

    def _booleans(self, old: Any, new: Any, path: tuple[str, ...]) -> Iterator[Found]:
        def accepts_all(s: Any) -> bool:
            return s is True or s == {}

        def accepts_none(s: Any) -> bool:
            return s is False or (isinstance(s, dict) and s.get("not") == {})

        if accepts_all(old) or accepts_none(new):
            yield Found(path, "schema.narrowed", "narrowed", "accepts less than before (it was any value)"
                        if accepts_all(old) else "accepts nothing now", old, new)
        elif accepts_all(new) or accepts_none(old):
            yield Found(path, "schema.widened", "widened", "accepts any value now", old, new)
        else:
            yield Found(path, "schema.changed", "changed", "the schema changed in a way not compared", old, new)

    # -- type ----------------------------------------------------------------------------------------------
    @staticmethod
    def _type_set(schema: dict[str, Any]) -> frozenset[str]:
        t = schema.get("type")
        if t is None:
            return ALL_TYPES
        names = [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []
        found = set(names)
        if "number" in found:
            found.add("integer")
        return frozenset(found)

    def _types(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Found]:
        if canonical(old.get("type")) == canonical(new.get("type")):
            return
        before, after = self._type_set(old), self._type_set(new)
        lost, gained = before - after, after - before
        said = f"type {_spell(old.get('type'))} → {_spell(new.get('type'))}"
        if lost and gained:
            yield Found(path, "type.changed", "changed", said, old.get("type"), new.get("type"))
        elif lost:
            yield Found(path, "type.narrowed", "narrowed", f"{said} (narrowed)", old.get("type"), new.get("type"))
        elif gained:
            yield Found(path, "type.widened", "widened", f"{said} (widened)", old.get("type"), new.get("type"))
        else:
            yield Found(path, "type.spelled", "cosmetic", f"{said} (the same types)", old.get("type"),
                        new.get("type"))

    # -- enum, const ----------------------------------------------------------------------------------------
    def _values(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Found]:
        def allowed(s: dict[str, Any]) -> list[Any] | None:
            if "const" in s:
                return [s["const"]]
            return list(s["enum"]) if isinstance(s.get("enum"), list) else None

        before, after = allowed(old), allowed(new)
        if before is None and after is None:
            return
        if before is None:
            yield Found(path, "enum.added", "narrowed", f"now only {_spell(after)}", None, after)
            return
        if after is None:
            yield Found(path, "enum.removed", "widened", "no longer limited to listed values", before, None)
            return
        old_keys, new_keys = {canonical(v): v for v in before}, {canonical(v): v for v in after}
        for key, value in old_keys.items():
            if key not in new_keys:
                yield Found(path, "enum.value-removed", "narrowed", f"value {_spell(value)} removed", value, None)
        for key, value in new_keys.items():
            if key not in old_keys:
                yield Found(path, "enum.value-added", "widened", f"value {_spell(value)} added", None, value)
        if set(old_keys) == set(new_keys) and list(old_keys) != list(new_keys):
            yield Found(path, "enum.order", "cosmetic", "the values' order changed", before, after)

    # -- numeric bounds ----------------------------------------------------------------------------------------
    def _bounds(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Found]:
        for key in (*UPPER, *LOWER):
            a, b = old.get(key), new.get(key)
            if canonical(a) == canonical(b):
                continue
            upper = key in UPPER
            if not _number(a) and not _number(b) and not (isinstance(a, bool) or isinstance(b, bool)):
                continue
            if a is None or (isinstance(a, bool) and not a):  # a bound added
                narrowed = True
            elif b is None or (isinstance(b, bool) and not b):  # a bound removed
                narrowed = False
            elif _number(a) and _number(b):
                narrowed = (b < a) if upper else (b > a)
            else:  # draft 4's boolean exclusiveMaximum turned on (or a value of no number): treated as narrower
                narrowed = True
            word = "lowered" if (upper and narrowed) or (not upper and not narrowed) else "raised"
            if a is None:
                word = "added"
            elif b is None:
                word = "removed"
            yield Found(path, f"bound.{key}", "narrowed" if narrowed else "widened",
                        f"{key} {word} ({_spell(a)} → {_spell(b)})", a, b)
        a, b = old.get("multipleOf"), new.get("multipleOf")
        if canonical(a) != canonical(b):
            way: Way = "narrowed" if a is None else "widened" if b is None else \
                "widened" if _number(a) and _number(b) and b and (a / b) == int(a / b) else "narrowed"
            yield Found(path, "bound.multipleOf", way, f"multipleOf {_spell(a)} → {_spell(b)}", a, b)
        if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
            yield Found(path, "bound.uniqueItems", "narrowed" if new.get("uniqueItems") else "widened",
                        "items must be unique" if new.get("uniqueItems") else "items need not be unique")

    def _strings(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Found]:
        for key in ("pattern", "format"):
            a, b = old.get(key), new.get(key)
            if canonical(a) == canonical(b):
                continue
            way: Way = "narrowed" if a is None else "widened" if b is None else "changed"
            yield Found(path, f"{key}.{'added' if a is None else 'removed' if b is None else 'changed'}", way,
                        f"{key} {_spell(a)} → {_spell(b)}", a, b)

    # -- objects -----------------------------------------------------------------------------------------------
    def _objects(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...],
                 depth: int) -> Iterator[Found]:
        old_props, new_props = _dict(old.get("properties")), _dict(new.get("properties"))
        old_req = {r for r in old.get("required") or [] if isinstance(r, str)} \
            if isinstance(old.get("required"), list) else set()
        new_req = {r for r in new.get("required") or [] if isinstance(r, str)} \
            if isinstance(new.get("required"), list) else set()
        for name in old_props:
            if name not in new_props:  # whoever sent or read it may not any more (even where the object is open)
                yield Found((*path, name), "property.removed", "narrowed",
                            "removed" + (" (it was required)" if name in old_req else ""), old_props[name], None)
        for name in new_props:
            if name not in old_props:
                required = name in new_req
                yield Found((*path, name), "property.added-required" if required else "property.added",
                            "narrowed" if required else "widened",
                            "added, required" if required else "added, optional", None, new_props[name])
        for name in old_props:
            if name in new_props:
                if name in new_req and name not in old_req:
                    yield Found((*path, name), "property.now-required", "narrowed", "now required")
                elif name in old_req and name not in new_req:
                    yield Found((*path, name), "property.now-optional", "widened", "now optional")
                yield from self.compare(old_props[name], new_props[name], (*path, name), depth + 1)
        for name in sorted((new_req - old_req) - set(new_props)):  # required without a declared property
            yield Found((*path, name), "property.now-required", "narrowed", "now required")
        for name in sorted((old_req - new_req) - set(old_props)):
            yield Found((*path, name), "property.now-optional", "widened", "now optional")
        if list(old_props) != list(new_props) and set(old_props) == set(new_props):
            yield Found(path, "property.order", "cosmetic", "the properties' order changed")
        a, b = old.get("additionalProperties"), new.get("additionalProperties")
        if canonical(a) != canonical(b):
            if b is False:
                yield Found(path, "additionalProperties.closed", "narrowed", "additionalProperties closed", a, b)
            elif a is False and (b is None or b is True):
                yield Found(path, "additionalProperties.opened", "widened", "additionalProperties opened", a, b)
            else:
                yield from self.compare(True if a is None else a, True if b is None else b, (*path, "{*}"),
                                        depth + 1)

    # -- arrays ------------------------------------------------------------------------------------------------
    def _arrays(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...],
                depth: int) -> Iterator[Found]:
        a, b = old.get("items"), new.get("items")
        if isinstance(a, list) or isinstance(b, list):  # a tuple (draft 4-2019): item by item
            a_list = a if isinstance(a, list) else []
            b_list = b if isinstance(b, list) else []
            for i in range(max(len(a_list), len(b_list))):
                yield from self.compare(a_list[i] if i < len(a_list) else True,
                                        b_list[i] if i < len(b_list) else True, (*path, f"[{i}]"), depth + 1)
        elif a is not None or b is not None:
            yield from self.compare(True if a is None else a, True if b is None else b, (*path, "[]"), depth + 1)
        pa, pb = old.get("prefixItems"), new.get("prefixItems")
        if isinstance(pa, list) or isinstance(pb, list):
            pa = pa if isinstance(pa, list) else []
            pb = pb if isinstance(pb, list) else []
            for i in range(max(len(pa), len(pb))):
                yield from self.compare(pa[i] if i < len(pa) else True, pb[i] if i < len(pb) else True,
                                        (*path, f"[{i}]"), depth + 1)

    # -- anyOf, oneOf, allOf, not ------------------------------------------------------------------------------
    def _unions(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...],
                depth: int) -> Iterator[Found]:
        for key in ("anyOf", "oneOf"):
            a, b = old.get(key), new.get(key)
            if canonical(a) == canonical(b):
                continue
            if not isinstance(a, list):
                yield Found(path, f"{key}.added", "narrowed", f"now one of {len(b) if isinstance(b, list) else 0} "
                            "alternatives", None, b)
                continue
            if not isinstance(b, list):
                yield Found(path, f"{key}.removed", "widened", f"no longer {key}", a, None)
                continue
            yield from self._members(key, a, b, path, depth)
        a, b = old.get("allOf"), new.get("allOf")
        if canonical(a) != canonical(b):
            a_list = a if isinstance(a, list) else []
            b_list = b if isinstance(b, list) else []
            for i in range(max(len(a_list), len(b_list))):
                yield from self.compare(a_list[i] if i < len(a_list) else True, b_list[i] if i < len(b_list) else True,
                                        (*path, f"<allOf {i + 1}>"), depth + 1)
        a, b = old.get("not"), new.get("not")
        if canonical(a) != canonical(b):
            # `not` turns the way round: what the inner schema accepts more of, the whole accepts less of.
            flip = {"narrowed": "widened", "widened": "narrowed"}
            for found in self.compare(False if a is None else a, False if b is None else b, (*path, "<not>"),
                                      depth + 1):
                way: Way = flip.get(found.way, found.way)  # type: ignore[assignment]
                yield Found(found.path, found.rule, way, found.what, found.before, found.after)

    def _members(self, key: str, a: list[Any], b: list[Any], path: tuple[str, ...],
                 depth: int) -> Iterator[Found]:
        """A union's members: the same ones matched by equality, then those of one type paired and compared; the
        rest are a member lost (narrowed) or gained (widened)."""
        new_left = list(range(len(b)))
        old_left: list[int] = []
        for i, member in enumerate(a):
            same = next((j for j in new_left if canonical(b[j]) == canonical(member)), None)
            if same is None:
                old_left.append(i)
            else:
                new_left.remove(same)
        for i in list(old_left):
            kind = _kind(a[i])
            pair = next((j for j in new_left if _kind(b[j]) == kind), None)
            if pair is None and len(old_left) == 1 and len(new_left) == 1:
                pair = new_left[0]
            if pair is not None:
                new_left.remove(pair)
                old_left.remove(i)
                yield from self.compare(a[i], b[pair], (*path, f"<{key} {pair + 1}>"), depth + 1)
        for i in old_left:
            yield Found(path, "union.member-removed", "narrowed", f"{key} lost the member {_spell(a[i], 60)}",
                        a[i], None)
        for j in new_left:
            yield Found(path, "union.member-added", "widened", f"{key} gained the member {_spell(b[j], 60)}",
                        None, b[j])

    def _cosmetic(self, old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Found]:
        for key in sorted(COSMETIC_KEYS):
            if canonical(old.get(key)) != canonical(new.get(key)):
                yield Found(path, f"annotation.{key}", "cosmetic", f"{key} changed", old.get(key), new.get(key))
        for key in sorted((old.keys() | new.keys()) - HANDLED):
            if canonical(old.get(key)) != canonical(new.get(key)):
                yield Found(path, f"keyword.{key}", "changed", f"keyword {key} changed", old.get(key), new.get(key))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(schema: Any) -> str:
    if isinstance(schema, dict):
        return canonical(schema.get("type")) if "type" in schema else canonical(sorted(schema))[:100]
    return canonical(schema)


def _spell(value: Any, width: int = 80) -> str:
    text = canonical(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def compare(old: Any, new: Any) -> list[Found]:
    """Every difference between two schemas (each a dict or a boolean; anything else compares as a value)."""
    return list(_Walk(old, new).compare(old, new, ()))
