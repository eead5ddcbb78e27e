"""Reading a JSON Schema the way a form needs it: local `$ref`s followed (pydantic puts models in `$defs`), `allOf`
of one schema merged, and a model that refers to itself noticed, so its form ends (it becomes a JSON editor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Reading:
    """Where a property is read from: the root schema (for local $refs), its depth, the $refs followed to it."""
    root: Any = None
    depth: int = 0
    refs: frozenset[str] = frozenset()


def resolve(raw: Any, at: Reading) -> tuple[Any, Reading, bool]:
    """Follow a local `$ref` (pydantic's `#/$defs/Model`), and `allOf` of one schema; (schema, reading, cyclic)."""
    for _ in range(16):
        if not isinstance(raw, dict):
            return raw, at, False
        all_of = raw.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            raw = {**all_of[0], **{k: v for k, v in raw.items() if k != "allOf"}}
            continue
        ref = raw.get("$ref")
        if not isinstance(ref, str):
            return raw, at, False
        if ref in at.refs:
            return raw, at, True  # a recursive model: its form would never end
        target = _pointer(at.root, ref)
        if not isinstance(target, dict):
            return raw, at, False
        at = Reading(at.root, at.depth, at.refs | {ref})
        raw = {**target, **{k: v for k, v in raw.items() if k != "$ref"}}
    return raw, at, True


def _pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
