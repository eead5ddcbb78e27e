"""Nested objects and arrays in generated forms: inputs named by path are read back into exactly the value the form
shows, JSON is put into a form only when reading that form gives the same JSON, and schemas that would never end
($ref cycles, hostile depth) stay JSON editors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.web.form_tree import NotFitting, fits, pairs_of, path_name
from app.web.form_view import (
    DIALOG_WINDOW,
    WINDOW,
    SchemaFields,
    big_request,
    dialog_window,
    tool_form_json,
    tool_form_view,
)
from app.web.forms import MAX_DEPTH, FormInput, fields_for, parse_form

NOTE = {"type": "object", "required": ["note"], "properties": {
    "note": {"type": "object", "required": ["title"], "properties": {
        "title": {"type": "string"}, "n": {"type": "integer"},
        "flags": {"type": "object", "properties": {"pinned": {"type": "boolean"}}}}},
    "tags": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Tag"}},
    "ids": {"type": "array", "items": {"type": "integer"}},
    "a.b": {"type": "string"}, "a": {"type": "object", "properties": {"b": {"type": "string"}}},
}, "$defs": {"Tag": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}


def read(pairs: list[tuple[str, str]], schema: dict[str, Any] = NOTE) -> tuple[dict[str, Any], dict[str, str]]:
    return parse_form(fields_for(schema), FormInput(pairs))


def at(*path: str | int) -> str:
    return path_name(path)


def test_nested_inputs_are_read_into_the_objects_and_lists_they_stand_for_in_the_order_shown() -> None:
    values, errors = read([(at("note", "title"), "T"), (at("note", "n"), "3"), (at("note", "flags", "pinned"), "false"),
                           (at("tags", 1), "item"), (at("tags", 1, "name"), "b"), (at("tags", 0), "item"),
                           (at("tags", 0, "name"), "a"), (at("ids", 0), "12345678901234567890"),
                           ("arg.a.b", "dotted"), (at("a", "b"), "nested")])
    assert errors == {}
    assert values == {"note": {"title": "T", "n": 3, "flags": {"pinned": False}},
                      "tags": [{"name": "a"}, {"name": "b"}], "ids": [12345678901234567890],
                      "a.b": "dotted", "a": {"b": "nested"}}


def test_an_optional_object_left_empty_is_left_out_and_a_required_one_says_which_part_is_missing() -> None:
    values, errors = read([(at("note", "n"), ""), (at("a", "b"), "")])
    assert values == {"note": {}}
    assert errors == {"note.title": "This field is required."}


def test_an_item_whose_fields_are_empty_is_still_an_item_and_its_required_parts_are_asked_for() -> None:
    _, errors = read([(at("note", "title"), "T"), (at("tags", 0), "item")])
    assert errors == {"tags[0].name": "This field is required."}


def test_an_empty_row_of_a_list_of_integers_is_refused_rather_than_dropped() -> None:
    _, errors = read([(at("note", "title"), "T"), (at("tags", 0, "name"), "x"), (at("ids", 0), "")])
    assert errors == {"ids[0]": "Fill this in or remove the item."}


@pytest.mark.parametrize("value", [
    {"note": {"title": "T", "n": -4, "flags": {"pinned": True}}, "tags": [{"name": "a"}], "ids": [1, 2]},
    {"note": {"title": "x"}, "tags": [{"name": " "}], "a.b": "1", "a": {"b": "2"}},
])
def test_json_that_the_form_can_show_comes_back_from_its_inputs_exactly(value: dict[str, Any]) -> None:
    fields = fields_for(NOTE)
    assert parse_form(fields, FormInput(fits(fields, value))) == (value, {})


@pytest.mark.parametrize(("value", "why"), [
    ([1], "must be a JSON object"), ({"nope": 1}, "no field 'nope'"),
    ({"note": {"title": "t", "x": 1}}, "no field 'x'"), ({"note": {"title": "t", "n": 1.0}}, "Enter a whole number"),
    ({"note": {"title": "t", "n": True}}, "not a integer"),
    ({"note": {"title": "t"}, "tags": [{"name": "a"}], "a.b": ""}, "would send it differently"),
    ({"note": "text"}, "an object is expected"),
    ({"note": {"title": ""}}, "note.title: This field is required"),  # an empty required text is refused
    # What a browser's field would change: an <input> drops line breaks, the parser turns NUL into U+FFFD.
    ({"note": {"title": "line1\nline2"}}, "U\\+000A"), ({"note": {"title": "a\rb"}}, "U\\+000D"),
    ({"note": {"title": "a\x00b"}}, "U\\+0000"),
])
def test_json_the_form_cannot_show_exactly_is_refused_with_the_reason(value: Any, why: str) -> None:
    with pytest.raises(NotFitting, match=why):
        fits(fields_for(NOTE), value)


def test_a_recursive_model_and_a_schema_nested_past_the_limit_become_json_editors() -> None:
    recursive = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {
        "type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array",
                                                                             "items": {"$ref": "#/$defs/Node"}}}}}}
    (tree,) = fields_for(recursive)
    assert tree.kind == "object"
    kids = tree.children[1]
    assert kids.kind == "array" and kids.item is not None and kids.item.kind == "json"
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_DEPTH + 5):
        deep = {"type": "object", "properties": {"d": deep}}
    field = fields_for({"type": "object", "properties": {"d": deep}})[0]
    depth = 0
    while field.kind == "object":
        field, depth = field.children[0], depth + 1
    assert field.kind == "json" and depth == MAX_DEPTH


def test_a_huge_schema_shows_its_first_fields_and_every_field_when_asked_keeping_what_was_typed() -> None:
    huge = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(3000)}}
    view = tool_form_view(huge)
    assert (len(view.shown), view.hidden, view.total) == (WINDOW, 3000 - WINDOW, 3000)
    typed = tool_form_view(huge, [("arg.f2999", "late")])
    assert [f.name for f in typed.shown][-1] == "f2999"  # a field holding a value is always shown
    assert len(tool_form_view(huge, [], show_all=True).shown) == 3000


def test_a_fresh_forms_json_holds_the_required_defaults_and_the_items_min_items_asks_for() -> None:
    schema = {"type": "object", "required": ["n", "rows"], "properties": {
        "n": {"type": "integer", "default": 5}, "opt": {"type": "string", "default": "not sent"},
        "rows": {"type": "array", "minItems": 2, "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}}
    assert json.loads(tool_form_json(schema)) == {"n": 5, "rows": [{}, {}]}


def test_pairs_of_names_every_nested_input_by_its_json_path() -> None:
    pairs = pairs_of(fields_for(NOTE), {"note": {"title": "T"}, "tags": [{"name": "a"}]})
    assert pairs == [('at:["note","title"]', "T"), ('at:["tags",0]', "item"), ('at:["tags",0,"name"]', "a")]


def test_a_dialog_of_thousands_of_fields_reads_only_those_it_shows_and_keeps_what_was_refused_in_view() -> None:
    schema = {"type": "object", "required": ["f2"], "properties": {f"f{i}": {"type": "string"} for i in range(3000)}}
    fields = SchemaFields(schema)
    shown, rest = dialog_window(fields, draft={"arg.f2999": ["typed"]}, errors={"f1500": "Too long."})
    assert [f.name for f in shown] == [f"f{i}" for i in range(DIALOG_WINDOW)] + ["f1500", "f2999"]
    assert len(rest) == 3000 - DIALOG_WINDOW - 2 and 1500 not in rest and 2999 not in rest
    assert len(fields._made) == DIALOG_WINDOW + 2  # the rest are read when "Show all" asks for them
    assert fields[2].required and not fields[3].required
    assert parse_form(fields, FormInput([("arg.f2", "x"), ("arg.f2999", "y")])) == ({"f2": "x", "f2999": "y"}, {})
    assert big_request({"params": {"requestedSchema": schema}}) and not big_request({"params": {}})
