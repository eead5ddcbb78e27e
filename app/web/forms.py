"""Forms generated from JSON Schema, shared by tool arguments and elicitation.

What is sent is exactly what the person meant: integers stay integers, booleans are booleans,
empty optional fields are left out. A property the form cannot represent becomes a JSON editor
with a visible note, never a guess.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from app.mcp.jsonrpc import exact_float
from app.web.schema_refs import Reading, resolve

PRIMITIVES = ("string", "number", "integer", "boolean")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:\S*$")
# ASCII digits only: with Unicode ones, a fullwidth "１２" typed into an integer field went out as 12.
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z", re.ASCII)
_INT = re.compile(r"^-?\d+\Z", re.ASCII)
_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?\Z", re.ASCII)


@dataclass(slots=True)
class FormField:
    name: str
    label: str
    kind: str  # string | number | integer | boolean | enum | multi | list | json | object | array
    required: bool = False
    description: str = ""
    default: Any = None
    options: list[tuple[str, str]] = field(default_factory=list)  # (value, label)
    item_kind: str = "string"
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    format: str | None = None
    note: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    children: list[FormField] = field(default_factory=list)  # an object's properties
    item: FormField | None = None  # what one item of an array (or list) is
    size: int = 1  # inputs it renders (an array: one item's worth); what a huge schema is measured by

    @property
    def composite(self) -> bool:
        """Rendered as a tree whose inputs are named by their path (see form_tree)."""
        return self.kind in ("object", "array", "list")

    @property
    def input_name(self) -> str:
        return f"arg.{self.name}"

    @property
    def html_type(self) -> str:
        # date-time stays a text input: datetime-local would drop seconds and the zone, and what is
        # sent must be exactly what was typed (RFC 3339, checked before sending).
        return {"email": "email", "uri": "url", "date": "date"}.get(self.format or "", "text")

    def default_text(self) -> str:
        if self.default is None:
            return ""
        if self.kind == "json":
            return json.dumps(self.default, indent=2)
        if self.kind == "list" and isinstance(self.default, list):
            return "\n".join(str(v) for v in self.default)
        return str(self.default) if not isinstance(self.default, bool) else ("true" if self.default else "false")


def _strip_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """anyOf/oneOf [X, {type: null}] is X that may be left out; type: [X, "null"] likewise."""
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and len(options) == 2:
            rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            if len(rest) == 1 and isinstance(rest[0], dict):
                merged = {k: v for k, v in schema.items() if k != key}
                return {**rest[0], **merged}
    kind = schema.get("type")
    if isinstance(kind, list):
        non_null = [k for k in kind if k != "null"]
        if len(non_null) == 1:
            return {**schema, "type": non_null[0]}
    return schema


def _options(schema: dict[str, Any]) -> list[tuple[str, str]] | None:
    """Choices of a single-select string: enum (with legacy enumNames) or oneOf/anyOf of consts."""
    enum = schema.get("enum")
    if isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        names = schema.get("enumNames")
        if isinstance(names, list) and len(names) == len(enum):
            return [(v, str(n)) for v, n in zip(enum, names, strict=True)]
        return [(v, v) for v in enum]
    for key in ("oneOf", "anyOf"):
        consts = schema.get(key)
        if isinstance(consts, list) and consts and all(
                isinstance(c, dict) and isinstance(c.get("const"), str) for c in consts):
            return [(c["const"], str(c.get("title", c["const"]))) for c in consts]
    return None


# Deeper than this, a property is a JSON editor: a schema nested hundreds deep (a hostile one) stays one box.
MAX_DEPTH = 8


def field_for(name: str, raw: Any, required: bool, at: Reading | None = None) -> FormField:
    at = at or Reading()
    raw, at, cyclic = resolve(raw, at)
    schema = _strip_nullable(raw) if isinstance(raw, dict) else {}
    title = schema.get("title")
    f = FormField(name=name, label=title if isinstance(title, str) and title else name, kind="json",
                  required=required, description=str(schema.get("description") or ""),
                  default=schema.get("default"), schema=schema)
    kind = schema.get("type")
    options = _options(schema)
    if options is not None and kind in ("string", None):
        f.kind, f.options = "enum", options
    elif kind in PRIMITIVES:
        f.kind = kind
        f.minimum, f.maximum = _num(schema.get("minimum")), _num(schema.get("maximum"))
        f.min_length, f.max_length = _int(schema.get("minLength")), _int(schema.get("maxLength"))
        fmt = schema.get("format")
        f.format = fmt if fmt in ("email", "uri", "date", "date-time") else None
    elif cyclic or at.depth >= MAX_DEPTH:
        pass  # a JSON editor
    elif kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        below = Reading(at.root, at.depth + 1, at.refs)
        f.children = _properties(schema, below)
        if f.children:
            f.kind, f.size = "object", sum(c.size for c in f.children)
    elif kind == "array" and isinstance(schema.get("items"), dict):
        items, _, _ = resolve(schema["items"], at)
        items = _strip_nullable(items) if isinstance(items, dict) else {}
        f.min_items, f.max_items = _int(schema.get("minItems")), _int(schema.get("maxItems"))
        item_options = _options(items)
        if item_options is not None:
            f.kind, f.options = "multi", item_options
        else:
            item = field_for(f"{name}[]", schema["items"], True, Reading(at.root, at.depth + 1, at.refs))
            item.label = "Item"
            f.item, f.size = item, item.size
            f.kind = "list" if item.kind in PRIMITIVES else "array"
            if item.kind in PRIMITIVES:
                f.item_kind = item.kind
    if f.kind == "json":
        f.note = "This field's schema is not a simple form field: edit it as JSON."
    return f


def _properties(schema: dict[str, Any], at: Reading) -> list[FormField]:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    return [field_for(name, sub, name in required, at) for name, sub in props.items()]


def _num(v: Any) -> float | None:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def fields_for(schema: Any) -> list[FormField]:
    if not isinstance(schema, dict):
        return []
    return _properties(schema, Reading(root=schema))


# The fields of the schemas forms were last read against: a script calling one tool again and again read the same
# schema into the same fields on every call (a dozen calls for one string field). Keyed by the schema object itself,
# held here so its id cannot be reused while kept; a re-listed tool is a new object. Fields are read, never changed.
_FIELDS_KEPT = 256
_fields_of: dict[int, tuple[Any, list[FormField]]] = {}


def fields_for_kept(schema: Any) -> list[FormField]:
    """`fields_for(schema)`, read once per schema object."""
    kept = _fields_of.get(id(schema))
    if kept is not None and kept[0] is schema:
        return kept[1]
    fields = fields_for(schema)
    if len(_fields_of) >= _FIELDS_KEPT:
        _fields_of.clear()
    _fields_of[id(schema)] = (schema, fields)
    return fields


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (JSON has no NaN or Infinity)")


def strict_json(text: str) -> Any:
    """Parse what a person typed as JSON, refusing NaN/Infinity (Python would accept and resend them,
    and what went on the wire would not be JSON)."""
    value = json.loads(text, parse_constant=_no_constant, parse_float=exact_float)
    _check_finite(value)
    return value


def _check_finite(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a number too large for JSON (it would become Infinity)")
    if isinstance(value, dict):
        for item in value.values():
            _check_finite(item)
    elif isinstance(value, list):
        for item in value:
            _check_finite(item)


class FormInput(Mapping[str, Sequence[str]]):
    """What a submitted form holds: name → every value given (checkbox groups repeat names)."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        self._d: dict[str, list[str]] = {}
        for k, v in pairs:
            self._d.setdefault(k, []).append(v)

    def __getitem__(self, key: str) -> Sequence[str]:
        return self._d[key]

    def __iter__(self) -> Any:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def first(self, key: str) -> str | None:
        values = self._d.get(key)
        return values[0] if values else None


def parse_form(fields: Sequence[FormField], form: FormInput) -> tuple[dict[str, Any], dict[str, str]]:
    """Turn submitted text into typed JSON values. Returns (values, errors by field name)."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    tree = form_tree.entries(form)
    for f in fields:
        if f.composite and (f.name in tree.tops or f.input_name not in form):
            present, value = form_tree.read(f, (f.name,), tree, f.name, errors, forced=f.required)
            if present:
                values[f.name] = value
            continue
        try:
            present, value = _read(f, form)
        except ValueError as exc:
            errors[f.name] = str(exc)
            continue
        if not present:
            if f.required:
                errors[f.name] = "This field is required."
            continue
        problem = check_value(f, value)
        if problem:
            errors[f.name] = problem
        else:
            values[f.name] = value
    return values, errors


def _read(f: FormField, form: FormInput) -> tuple[bool, Any]:
    name = f.input_name
    if f.kind == "multi":
        if form.first(f"present.{f.name}") is None and name not in form:
            return False, None
        chosen = list(form.get(name, []))
        return (bool(chosen) or f.required), chosen
    text = form.first(name)
    if f.kind == "boolean":
        if text in ("true", "on"):
            return True, True
        if text == "false" or (text is None and form.first(f"present.{f.name}") == "checkbox"):
            return True, False
        return False, None
    if text is None or (text.strip() == "" and f.kind != "string"):
        return False, None
    if f.kind == "string" and text == "":
        return False, None
    return True, convert(f, text)


def _whole(digits: str) -> int:
    """The integer typed; one past Python's digit limit (4,300) is refused in words, not in the interpreter's."""
    try:
        return int(digits)
    except ValueError:
        raise ValueError("This number has too many digits to send.") from None


def convert(f: FormField, text: str) -> Any:
    if f.kind == "integer":
        if not _INT.match(text.strip()):
            raise ValueError("Enter a whole number.")
        return _whole(text.strip())
    if f.kind == "number":
        t = text.strip()
        if not _NUMBER.match(t):
            raise ValueError("Enter a number.")
        if _INT.match(t):
            return _whole(t)
        try:
            return exact_float(t)
        except ValueError as exc:
            raise ValueError(f"{exc}.") from exc
    if f.kind in ("json", "object", "array"):  # a script may post a whole object or array as JSON text
        try:
            return strict_json(text)
        except ValueError as exc:
            raise ValueError(f"Not valid JSON: {exc}") from exc
    if f.kind == "list":
        item = FormField(name=f.name, label=f.label, kind=f.item_kind)
        return [convert(item, line) if f.item_kind != "boolean" else _bool(line)
                for line in text.splitlines() if line.strip()]
    return text


def _bool(text: str) -> bool:
    if text.strip().lower() in ("true", "1", "yes"):
        return True
    if text.strip().lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"{text!r} is not true or false")


def check_value(f: FormField, value: Any) -> str | None:
    """Validate one typed value against its field's schema; the message is shown next to the field."""
    if f.kind in ("integer", "number"):
        if f.minimum is not None and value < f.minimum:
            return f"Must be at least {_fmt(f.minimum)}."
        if f.maximum is not None and value > f.maximum:
            return f"Must be at most {_fmt(f.maximum)}."
    elif f.kind == "string":
        if f.min_length is not None and len(value) < f.min_length:
            return f"Must be at least {f.min_length} characters."
        if f.max_length is not None and len(value) > f.max_length:
            return f"Must be at most {f.max_length} characters."
        return _check_format(f.format, value)
    elif f.kind == "object" and not isinstance(value, dict):
        return "Enter a JSON object."
    elif f.kind == "enum":
        if value not in [v for v, _ in f.options]:
            return "Choose one of the offered values."
    elif f.kind in ("multi", "list", "array"):
        if not isinstance(value, list):
            return "Enter a JSON array."
        allowed = [v for v, _ in f.options]
        if f.kind == "multi" and any(v not in allowed for v in value):
            return "Choose only offered values."
        if f.min_items is not None and len(value) < f.min_items:
            return f"Choose at least {f.min_items}."
        if f.max_items is not None and len(value) > f.max_items:
            return f"Choose at most {f.max_items}."
    return None


def _check_format(fmt: str | None, value: str) -> str | None:
    if fmt == "email" and not _EMAIL.fullmatch(value):
        return "Enter an email address."
    if fmt == "uri" and not _URI.fullmatch(value):
        return "Enter a URI with a scheme, such as https://…"
    if fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return "Enter a date as YYYY-MM-DD."
    if fmt == "date-time" and not _DATETIME.match(value):
        return "Enter a date and time as in 2026-07-28T09:30:00Z (RFC 3339, with a zone)."
    return None


def _fmt(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


from app.web import form_tree  # noqa: E402  (it reads leaves with the functions above)
