"""A server's surface (its tools, resources, resource templates, prompts and capabilities) and the diff of two.

Pure: no I/O. A **snapshot** is plain JSON (`snapshot_of` builds one from what a connect fetched; the console
records one per connect as a `surface` event, `mcp-console snapshot` writes one to a file):

    {"format": "mcp-console-surface", "version": 1, "taken": <wall clock>, "source": <the target, masked>,
     "era": "modern"|"legacy"|null, "protocol_version": str|null, "supported_versions": [...],
     "server": {"name", "title", "version"}, "capabilities": {...},
     "tools": [...], "resources": [...], "resourceTemplates": [...], "prompts": [...]}

The lists hold the items as the server sent them, every page. `diff(a, b)` classifies each change as **breaking**
(a client that worked against `a` may fail against `b`), **additive** (something new, nothing lost) or
**cosmetic** (nothing a client's code depends on: descriptions, titles, annotations, icons, order). The rules are
in docs/guide.md ("The surface over time"); each has a unit test (tests/unit/test_surface_diff.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from app.mcp import schema_diff
from app.mcp.schema_diff import Found, canonical

FORMAT = "mcp-console-surface"
VERSION = 1
LIST_KEYS = ("tools", "resources", "resourceTemplates", "prompts")
Level = Literal["breaking", "additive", "cosmetic"]
LEVELS: tuple[Level, ...] = ("breaking", "additive", "cosmetic")
MAX_CHANGES = 2000  # a diff lists at most so many (a server that renamed everything is told, not copied)
# Per list: what names an item, and what a person calls one.
IDENTITY = {"tools": ("name", "tool"), "resources": ("uri", "resource"),
            "resourceTemplates": ("uriTemplate", "resource template"), "prompts": ("name", "prompt")}
ITEM_COSMETIC = frozenset({"title", "description", "annotations", "icons", "_meta", "size"})
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@dataclass(frozen=True, slots=True)
class Change:
    level: Level
    rule: str    # what kind of change, for code: tool.removed, argument.added-required, type.narrowed, ...
    where: str   # the item: "tool weather", "prompt greet", "capabilities", "server"
    path: str    # inside it: "arguments.city", "output.temperature", "resources.subscribe" ("" for the item)
    what: str    # for people
    before: Any = None
    after: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "rule": self.rule, "where": self.where, "path": self.path, "what": self.what,
                "before": self.before, "after": self.after}

    def line(self) -> str:
        place = f"{self.where}: {self.path}" if self.path else self.where
        return f"{self.level}: {place}: {self.what}"


@dataclass(frozen=True, slots=True)
class Diff:
    changes: tuple[Change, ...]
    not_listed: int = 0  # changes past MAX_CHANGES

    @property
    def breaking(self) -> bool:
        return any(c.level == "breaking" for c in self.changes)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {level: 0 for level in LEVELS}
        for change in self.changes:
            counts[change.level] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"breaking": self.breaking, "counts": self.counts(), "changes": [c.to_dict() for c in self.changes],
                "not_listed": self.not_listed}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def snapshot_of(discovered: Any, lists: dict[str, Any], *, era: str | None = None,
                protocol_version: str | None = None, source: str = "", taken: float | None = None) -> dict[str, Any]:
    """A snapshot from a connect's discover answer (or initialize's, in that shape) and the lists it fetched."""
    found = _dict(discovered)
    info = _dict(_dict(found.get("_meta")).get(SERVER_INFO))
    versions = found.get("supportedVersions")
    return {"format": FORMAT, "version": VERSION, "taken": time.time() if taken is None else taken,
            "source": source, "era": era, "protocol_version": protocol_version,
            "supported_versions": [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else [],
            "server": {k: info[k] for k in ("name", "title", "version") if isinstance(info.get(k), str)},
            "capabilities": _dict(found.get("capabilities")),
            **{key: _items(lists.get(key)) for key in LIST_KEYS}}


def read_snapshot(data: Any, *, checked: bool = True) -> dict[str, Any]:
    """A snapshot read from a file (or an event), every part of it the type it should be. Raises ValueError for
    what is no snapshot, unless `checked` is False (an event of an imported session file: whatever it holds is
    read as far as it goes, and a page never fails on it)."""
    if not checked:
        data = data if isinstance(data, dict) else {}
    elif not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not an MCP Console surface snapshot")
    elif data.get("version") != VERSION:
        raise ValueError(f"surface snapshot version {data.get('version')!r} is not supported (this reads {VERSION})")
    taken = data.get("taken")
    return {"format": FORMAT, "version": VERSION,
            "taken": taken if isinstance(taken, int | float) and not isinstance(taken, bool) else None,
            "source": data["source"] if isinstance(data.get("source"), str) else "",
            "era": data["era"] if isinstance(data.get("era"), str) else None,
            "protocol_version": data["protocol_version"] if isinstance(data.get("protocol_version"), str) else None,
            "supported_versions": [v for v in data.get("supported_versions") or [] if isinstance(v, str)]
            if isinstance(data.get("supported_versions"), list) else [],
            "server": {k: v for k, v in _dict(data.get("server")).items() if isinstance(v, str)},
            "capabilities": _dict(data.get("capabilities")),
            **{key: _items(data.get(key)) for key in LIST_KEYS}}


def counts(snapshot: dict[str, Any]) -> dict[str, int]:
    return {key: len(_items(snapshot.get(key))) for key in LIST_KEYS}


# -- the diff -----------------------------------------------------------------------------------------------------

def diff(old: dict[str, Any], new: dict[str, Any]) -> Diff:
    """Every change from `old` to `new`, breaking first, then additive, then cosmetic (each in the order met)."""
    changes: list[Change] = []
    total = 0
    for change in _all(old, new):
        total += 1
        if len(changes) < MAX_CHANGES:
            changes.append(change)
    order = {level: i for i, level in enumerate(LEVELS)}
    changes.sort(key=lambda c: order[c.level])
    return Diff(tuple(changes), total - len(changes))


def _all(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    for key in LIST_KEYS:
        yield from _list(key, _items(old.get(key)), _items(new.get(key)))
    yield from _capabilities(_dict(old.get("capabilities")), _dict(new.get("capabilities")), ())
    yield from _versions(old, new)
    yield from _server(_dict(old.get("server")), _dict(new.get("server")))


def _by_id(key: str, items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    field = IDENTITY[key][0]
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        ident = item.get(field)
        if isinstance(ident, str) and ident not in out:  # a second item of one name: the first is the one called
            out[ident] = item
    return out


def _list(key: str, old_items: list[dict[str, Any]], new_items: list[dict[str, Any]]) -> Iterator[Change]:
    noun = IDENTITY[key][1]
    old, new = _by_id(key, old_items), _by_id(key, new_items)
    for ident, item in old.items():
        if ident not in new:
            yield Change("breaking", f"{_rule(key)}.removed", f"{noun} {ident}", "", "removed", _brief(item), None)
    for ident, item in new.items():
        if ident not in old:
            yield Change("additive", f"{_rule(key)}.added", f"{noun} {ident}", "", "added", None, _brief(item))
    for ident in old:
        if ident in new:
            yield from _item(key, f"{noun} {ident}", old[ident], new[ident])
    kept_old = [i for i in old if i in new]
    kept_new = [i for i in new if i in old]
    if kept_old != kept_new:
        yield Change("cosmetic", f"{_rule(key)}.order", f"{key if key != 'resourceTemplates' else 'templates'}", "",
                     "the order changed", kept_old, kept_new)


def _rule(key: str) -> str:
    return {"resourceTemplates": "template"}.get(key, key.rstrip("s"))


def _brief(item: dict[str, Any]) -> dict[str, Any]:
    """What a change says of an item added or removed: its name and what it is, not every schema."""
    return {k: item[k] for k in ("name", "uri", "uriTemplate", "title", "description") if k in item}


def _item(key: str, where: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    if key == "tools":
        yield from _schema(where, "arguments", old.get("inputSchema", {}), new.get("inputSchema", {}), output=False)
        yield from _output(where, old, new)
        yield from _execution(where, old, new)
    elif key == "prompts":
        yield from _prompt_arguments(where, old.get("arguments"), new.get("arguments"))
    else:
        if canonical(old.get("mimeType")) != canonical(new.get("mimeType")):
            level: Level = "additive" if old.get("mimeType") is None else "breaking"
            yield Change(level, "resource.mime-type", where, "mimeType",
                         f"mimeType {_said(old.get('mimeType'))} → {_said(new.get('mimeType'))}",
                         old.get("mimeType"), new.get("mimeType"))
    for field in sorted(ITEM_COSMETIC):
        if canonical(old.get(field)) != canonical(new.get(field)):
            yield Change("cosmetic", f"item.{field.lstrip('_')}", where, field, f"{field} changed", old.get(field),
                         new.get(field))
    handled = {"name", "uri", "uriTemplate", "inputSchema", "outputSchema", "execution", "arguments", "mimeType",
               *ITEM_COSMETIC}
    for field in sorted((old.keys() | new.keys()) - handled):
        if canonical(old.get(field)) != canonical(new.get(field)):
            yield Change("cosmetic", "item.other", where, field, f"{field} changed", old.get(field), new.get(field))


def _said(value: Any) -> str:
    return "none" if value is None else canonical(value)


# A schema difference, by its way, for who writes the values: a client writes arguments (accepting less breaks it);
# a server writes structured output (sending more than it promised breaks its readers, and so does a field gone).
INPUT_LEVELS: dict[str, Level] = {"narrowed": "breaking", "changed": "breaking", "widened": "additive",
                                  "cosmetic": "cosmetic"}
OUTPUT_LEVELS: dict[str, Level] = {"narrowed": "additive", "changed": "breaking", "widened": "breaking",
                                   "cosmetic": "cosmetic"}
OUTPUT_RULES: dict[str, Level] = {"property.removed": "breaking", "property.now-optional": "breaking",
                                  "property.added": "additive", "property.added-required": "additive",
                                  "property.now-required": "additive"}


def _schema(where: str, head: str, old: Any, new: Any, output: bool) -> Iterator[Change]:
    for found in schema_diff.compare(old, new):
        level = (OUTPUT_RULES.get(found.rule) or OUTPUT_LEVELS[found.way]) if output else INPUT_LEVELS[found.way]
        yield Change(level, _schema_rule(found, output), where, ".".join((head, *found.path)), _words(found, output),
                     found.before, found.after)


def _schema_rule(found: Found, output: bool) -> str:
    """An argument at the top of a tool's input is an argument; deeper, and in output, a field."""
    noun = "output" if output else "argument" if len(found.path) == 1 else "field"
    if found.rule.startswith("property."):
        return f"{noun}.{found.rule.removeprefix('property.')}"
    return found.rule


def _words(found: Found, output: bool) -> str:
    if found.rule == "property.removed":
        return f"{'field' if output else 'argument' if len(found.path) == 1 else 'field'} {found.what}"
    return found.what


def _output(where: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    a, b = old.get("outputSchema"), new.get("outputSchema")
    if a is None and b is None:
        return
    if a is None:
        yield Change("additive", "output.schema-added", where, "outputSchema", "declares an outputSchema now", None, b)
    elif b is None:
        yield Change("breaking", "output.schema-removed", where, "outputSchema",
                     "no longer declares an outputSchema (no structuredContent is promised)", a, None)
    else:
        yield from _schema(where, "output", a, b, output=True)


def _execution(where: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """`execution.taskSupport`: a tool that now requires a task breaks a client that cannot run one."""
    a = _dict(old.get("execution")).get("taskSupport")
    b = _dict(new.get("execution")).get("taskSupport")
    if canonical(old.get("execution")) == canonical(new.get("execution")):
        return
    level: Level = "breaking" if b == "required" and a != "required" else \
        "additive" if a != b else "cosmetic"
    yield Change(level, "tool.task-support", where, "execution", f"taskSupport {_said(a)} → {_said(b)}", a, b)


def _prompt_arguments(where: str, old: Any, new: Any) -> Iterator[Change]:
    def named(value: Any) -> dict[str, dict[str, Any]]:
        return {a["name"]: a for a in _items(value) if isinstance(a.get("name"), str)}

    a, b = named(old), named(new)
    for name, arg in a.items():
        if name not in b:
            yield Change("breaking", "argument.removed", where, f"arguments.{name}", "argument removed", arg, None)
    for name, arg in b.items():
        if name not in a:
            required = arg.get("required") is True
            yield Change("breaking" if required else "additive",
                         "argument.added-required" if required else "argument.added", where, f"arguments.{name}",
                         "added, required" if required else "added, optional", None, arg)
    for name in a:
        if name in b:
            was, now = a[name].get("required") is True, b[name].get("required") is True
            if now and not was:
                yield Change("breaking", "argument.now-required", where, f"arguments.{name}", "now required")
            elif was and not now:
                yield Change("additive", "argument.now-optional", where, f"arguments.{name}", "now optional")
            for field in sorted((a[name].keys() | b[name].keys()) - {"name", "required"}):
                if canonical(a[name].get(field)) != canonical(b[name].get(field)):
                    yield Change("cosmetic", f"argument.{field}", where, f"arguments.{name}", f"{field} changed",
                                 a[name].get(field), b[name].get(field))
    if [n for n in a if n in b] != [n for n in b if n in a]:
        yield Change("cosmetic", "argument.order", where, "arguments", "the arguments' order changed")


def _capabilities(old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> Iterator[Change]:
    """A capability (or a flag of one: `listChanged`, `subscribe`) removed or turned off is breaking; one added or
    turned on is additive; any other value changed, cosmetic."""
    for key in old:
        if key not in new:
            yield Change("breaking", "capability.removed", "capabilities", ".".join((*path, key)), "removed",
                         old[key], None)
    for key in new:
        if key not in old:
            yield Change("additive", "capability.added", "capabilities", ".".join((*path, key)), "added", None,
                         new[key])
    for key in old:
        if key not in new or canonical(old[key]) == canonical(new[key]):
            continue
        a, b = old[key], new[key]
        if isinstance(a, dict) and isinstance(b, dict) and len(path) < 8:
            yield from _capabilities(a, b, (*path, key))
        elif a is True or b is True or isinstance(a, bool) or isinstance(b, bool):
            level: Level = "breaking" if a and not b else "additive" if b and not a else "cosmetic"
            yield Change(level, "capability.turned-off" if level == "breaking" else "capability.turned-on"
                         if level == "additive" else "capability.changed", "capabilities", ".".join((*path, key)),
                         f"{_said(a)} → {_said(b)}", a, b)
        else:
            yield Change("cosmetic", "capability.changed", "capabilities", ".".join((*path, key)),
                         f"{_said(a)} → {_said(b)}", a, b)


def _versions(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """The versions a server lists in `server/discover`. A 2025-11-25 connect has no such list (its snapshot holds
    the one version initialize settled), so a snapshot of either era that is legacy compares no lists."""
    legacy = "legacy" in (old.get("era"), new.get("era"))
    a = [] if legacy else [v for v in old.get("supported_versions") or [] if isinstance(v, str)]
    b = [] if legacy else [v for v in new.get("supported_versions") or [] if isinstance(v, str)]
    for version in a:
        if version not in b and b:
            yield Change("breaking", "version.removed", "server", "supportedVersions", f"{version} no longer "
                         "supported", version, None)
    for version in b:
        if version not in a and a:
            yield Change("additive", "version.added", "server", "supportedVersions", f"{version} supported now",
                         None, version)
    if old.get("protocol_version") != new.get("protocol_version") and old.get("protocol_version") \
            and new.get("protocol_version"):
        yield Change("cosmetic", "version.negotiated", "server", "protocol_version",
                     f"negotiated {old.get('protocol_version')} → {new.get('protocol_version')}",
                     old.get("protocol_version"), new.get("protocol_version"))


def _server(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    for key in ("name", "title", "version"):
        if old.get(key) != new.get(key):
            yield Change("cosmetic", f"server.{key}", "server", key, f"{key} {_said(old.get(key))} → "
                         f"{_said(new.get(key))}", old.get(key), new.get(key))
