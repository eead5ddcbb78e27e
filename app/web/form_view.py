"""What a tool's call form shows: which fields, holding which values.

A schema of thousands of fields renders on demand. The first `WINDOW` inputs (in schema order) are rendered, the
rest are counted and offered behind "Show all N fields", which fetches the whole form with what was typed so far.
Chosen over "JSON mode by default above a threshold" because a person looking at a huge tool usually wants the first
few fields, and the JSON box is there either way; and over virtual scrolling, which would need a script that knows
the whole schema. Fields left out are not sent, exactly as empty optional fields are not. 64 calls to tools with
3,000-field schemas made a 52.5 MB page when every field was rendered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from app.web import form_tree
from app.web.form_tree import NotFitting, Tree
from app.web.forms import FormField, FormInput, field_for, fields_for_kept, parse_form
from app.web.schema_refs import Reading

WINDOW = 100  # inputs: some 800 DOM nodes, under the page's budget (tests/browser/test_dom_cost.py)
# A dialog's share: a round may ask up to 100 questions at once (operation.MAX_INPUT_REQUESTS), and 64 of
# 3,000 fields each made the 52.5 MB page; 64 dialogs of 25 fields stay near 0.5 MB.
DIALOG_WINDOW = 25


@dataclass(frozen=True, slots=True)
class FormView:
    shown: list[FormField]
    hidden: int  # inputs not rendered
    total: int
    draft: FormInput | None  # the values shown by flat fields (`arg.<name>`); None: a fresh form, with defaults
    tree: Tree  # the values shown by nested fields, by path

    @property
    def window(self) -> int:
        return WINDOW


def initial_pairs(fields: Sequence[FormField]) -> list[tuple[str, str]]:
    """The inputs a fresh form starts with: required composite fields with their defaults, and the empty items
    `minItems` asks for (optional fields start empty: what is sent is what was typed)."""
    out: list[tuple[str, str]] = []
    for f in fields:
        if f.composite and f.required:
            value = _initial(f)
            try:
                form_tree.pairs_of([f], {f.name: value})
            except NotFitting:
                continue
            out.extend(form_tree.pairs_of([f], {f.name: value}))
    return out


def _initial(f: FormField) -> Any:
    if f.default is not None:
        return f.default
    if f.kind == "object":
        return {c.name: v for c in f.children if c.required for v in [_initial(c)] if v is not None}
    if f.kind in ("array", "list") and f.item is not None:
        item = _initial(f.item) if f.item.composite else None
        return [item] * (f.min_items or 0) if item is not None else []
    return None


def tool_form_view(schema: Any, pairs: Sequence[tuple[str, str]] | None = None, show_all: bool = False) -> FormView:
    """The fields to render and their values: `pairs` (a submitted form, or JSON turned into inputs), else the
    defaults of a fresh form."""
    fields = fields_for_kept(schema)
    given = FormInput(list(pairs) if pairs is not None else initial_pairs(fields))
    draft = given if pairs is not None else None
    tree = form_tree.entries(given)
    total = sum(f.size for f in fields)
    if show_all or total <= WINDOW:
        return FormView(fields, 0, total, draft, tree)
    shown, used = [], 0
    for f in fields:
        has_value = f.name in tree.tops or f.input_name in given
        if used + f.size <= WINDOW or has_value:
            shown.append(f)
            used += f.size
    return FormView(shown, total - used, total, draft, tree)


def tool_form_json(schema: Any) -> str:
    """The arguments a fresh form would send, as the JSON box starts: the form's values, never a bare `{}`."""
    fields = fields_for_kept(schema)
    pairs = initial_pairs(fields)
    for f in fields:
        if not f.composite and f.required and f.default is not None:
            try:
                pairs.extend(form_tree.pairs_of([f], {f.name: f.default}))
            except NotFitting:
                continue
    arguments, _ = parse_form(fields, FormInput(pairs))
    return json.dumps(arguments, indent=2, ensure_ascii=False)


class SchemaFields(Sequence[FormField]):
    """A form schema's fields, each read when first asked for. A dialog renders its first DIALOG_WINDOW; reading
    all 3,000 fields of each of 64 questions again on every push of the inbox took 3.5 s an answer."""

    def __init__(self, schema: Any) -> None:
        props = schema.get("properties") if isinstance(schema, dict) else None
        self._props = list(props.items()) if isinstance(props, dict) else []
        listed = schema.get("required") if isinstance(schema, dict) else None
        self._required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
        self._at = Reading(root=schema)
        self._made: dict[int, FormField] = {}

    def __len__(self) -> int:
        return len(self._props)

    @overload
    def __getitem__(self, index: int) -> FormField: ...
    @overload
    def __getitem__(self, index: slice) -> list[FormField]: ...

    def __getitem__(self, index: int | slice) -> FormField | list[FormField]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        made = self._made.get(index)
        if made is None:
            name, sub = self._props[index]
            made = self._made[index] = field_for(name, sub, name in self._required, self._at)
        return made

    def names(self) -> list[str]:
        return [name for name, _ in self._props]


def dialog_window(fields: Sequence[FormField], draft: Any = None, errors: Any = None) -> tuple[list[FormField],
                                                                                                list[int]]:
    """(the fields rendered with the dialog, the places of those fetched when "Show all" is opened): the first
    DIALOG_WINDOW, and any later one that holds a refused draft's value or an error (what was refused is shown)."""
    if len(fields) <= DIALOG_WINDOW:
        return list(fields), []
    names = fields.names() if isinstance(fields, SchemaFields) else [f.name for f in fields]
    kept = {k.split(".", 1)[1] for k in (draft or {}) if "." in k} | set(errors or {})
    shown = [fields[i] for i in range(len(names)) if i < DIALOG_WINDOW or names[i] in kept]
    return shown, [i for i in range(DIALOG_WINDOW, len(names)) if names[i] not in kept]


def big_request(request: Any) -> bool:
    """An input request whose form schema has more fields than a dialog renders at once: its raw JSON is fetched
    when opened rather than sent with every dialog."""
    params = request.get("params") if isinstance(request, dict) else None
    schema = params.get("requestedSchema") if isinstance(params, dict) else None
    props = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(props, dict) and len(props) > DIALOG_WINDOW
