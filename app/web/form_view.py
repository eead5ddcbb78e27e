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
from typing import Any

from app.web import form_tree
from app.web.form_tree import NotFitting, Tree
from app.web.forms import FormField, FormInput, fields_for_kept, parse_form

WINDOW = 100  # inputs: some 800 DOM nodes, under the page's budget (tests/browser/test_dom_cost.py)


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
