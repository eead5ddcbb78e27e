"""The surface diff (app/mcp/surface.py, app/mcp/schema_diff.py): one test for each rule, on plain snapshots."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.mcp.surface import Change, diff, read_snapshot, snapshot_of

CAPS = {"tools": {"listChanged": True}, "resources": {"subscribe": True}, "prompts": {}}


def snap(tools: list[dict[str, Any]] | None = None, *, caps: dict[str, Any] | None = None,
         **lists: list[dict[str, Any]]) -> dict[str, Any]:
    discovered = {"capabilities": copy.deepcopy(CAPS if caps is None else caps),
                  "supportedVersions": ["2026-07-28", "2025-11-25"],
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "1.0"}}}
    return snapshot_of(discovered, {"tools": tools or [], **lists}, era="modern", protocol_version="2026-07-28")


def tool(name: str = "weather", props: dict[str, Any] | None = None, required: list[str] | None = None,
         **more: Any) -> dict[str, Any]:
    props = props if props is not None else {"city": {"type": "string"}}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    return {"name": name, "inputSchema": schema, **more}


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    return list(diff(old, new).changes)


def only(old: dict[str, Any], new: dict[str, Any]) -> Change:
    found = changes(old, new)
    assert len(found) == 1, [c.line() for c in found]
    return found[0]


def arg_change(before: dict[str, Any], after: dict[str, Any]) -> Change:
    """The one change between a tool whose argument `x` has schema `before` and one where it has `after`."""
    return only(snap([tool(props={"x": before})]), snap([tool(props={"x": after})]))


# -- items ----------------------------------------------------------------------------------------------------

def test_the_same_snapshot_twice_has_no_changes() -> None:
    assert changes(snap([tool()]), snap([tool()])) == []
    assert not diff(snap([tool()]), snap([tool()])).breaking


def test_a_removed_tool_is_breaking() -> None:
    change = only(snap([tool(), tool("other")]), snap([tool()]))
    assert (change.level, change.rule, change.where) == ("breaking", "tool.removed", "tool other")


def test_an_added_tool_is_additive() -> None:
    change = only(snap([tool()]), snap([tool(), tool("added")]))
    assert (change.level, change.rule, change.where) == ("additive", "tool.added", "tool added")


@pytest.mark.parametrize(("key", "item", "noun"), [
    ("resources", {"uri": "demo://a", "name": "a"}, "resource demo://a"),
    ("resourceTemplates", {"uriTemplate": "demo://{id}", "name": "t"}, "resource template demo://{id}"),
    ("prompts", {"name": "greet"}, "prompt greet"),
])
def test_a_removed_resource_template_or_prompt_is_breaking_and_an_added_one_additive(
        key: str, item: dict[str, Any], noun: str) -> None:
    removed = only(snap(**{key: [item]}), snap(**{key: []}))
    added = only(snap(**{key: []}), snap(**{key: [item]}))
    assert (removed.level, removed.where) == ("breaking", noun)
    assert (added.level, added.where) == ("additive", noun)


@pytest.mark.parametrize("field", ["description", "title", "annotations", "icons"])
def test_a_tools_description_title_annotations_or_icons_changing_is_cosmetic(field: str) -> None:
    change = only(snap([tool(**{field: "one" if field != "annotations" else {"readOnlyHint": True}})]),
                  snap([tool(**{field: "two" if field != "annotations" else {"readOnlyHint": False}})]))
    assert (change.level, change.path) == ("cosmetic", field)


def test_a_new_order_of_tools_is_cosmetic() -> None:
    change = only(snap([tool("a"), tool("b")]), snap([tool("b"), tool("a")]))
    assert (change.level, change.rule) == ("cosmetic", "tool.order")


def test_a_resources_mime_type_changing_is_breaking() -> None:
    change = only(snap(resources=[{"uri": "demo://a", "mimeType": "text/plain"}]),
                  snap(resources=[{"uri": "demo://a", "mimeType": "application/json"}]))
    assert (change.level, change.rule) == ("breaking", "resource.mime-type")


# -- arguments ---------------------------------------------------------------------------------------------

def test_a_required_argument_added_is_breaking() -> None:
    change = only(snap([tool()]), snap([tool(props={"city": {"type": "string"}, "unit": {"type": "string"}},
                                             required=["unit"])]))
    assert (change.level, change.rule, change.path) == ("breaking", "argument.added-required", "arguments.unit")


def test_an_optional_argument_added_is_additive() -> None:
    change = only(snap([tool()]), snap([tool(props={"city": {"type": "string"}, "unit": {"type": "string"}})]))
    assert (change.level, change.rule) == ("additive", "argument.added")


def test_an_argument_removed_is_breaking() -> None:
    change = only(snap([tool(props={"city": {"type": "string"}, "unit": {"type": "string"}})]), snap([tool()]))
    assert (change.level, change.rule, change.path) == ("breaking", "argument.removed", "arguments.unit")


def test_an_argument_made_required_is_breaking_and_made_optional_additive() -> None:
    optional, required = snap([tool()]), snap([tool(required=["city"])])
    assert (only(optional, required).level, only(optional, required).rule) == ("breaking", "argument.now-required")
    assert (only(required, optional).level, only(required, optional).rule) == ("additive", "argument.now-optional")


def test_number_to_integer_is_a_narrowed_type_and_breaking() -> None:
    change = arg_change({"type": "number"}, {"type": "integer"})
    assert (change.level, change.rule) == ("breaking", "type.narrowed")


def test_integer_to_number_is_a_widened_type_and_additive() -> None:
    change = arg_change({"type": "integer"}, {"type": "number"})
    assert (change.level, change.rule) == ("additive", "type.widened")


def test_string_to_number_is_breaking() -> None:
    assert arg_change({"type": "string"}, {"type": "number"}).level == "breaking"


def test_a_type_list_losing_null_is_narrowed() -> None:
    change = arg_change({"type": ["string", "null"]}, {"type": "string"})
    assert (change.level, change.rule) == ("breaking", "type.narrowed")


def test_an_enum_value_removed_is_breaking_and_one_added_additive() -> None:
    removed = arg_change({"enum": ["a", "b"]}, {"enum": ["a"]})
    added = arg_change({"enum": ["a"]}, {"enum": ["a", "b"]})
    assert (removed.level, removed.rule, removed.before) == ("breaking", "enum.value-removed", "b")
    assert (added.level, added.rule, added.after) == ("additive", "enum.value-added", "b")


def test_an_enum_reordered_is_cosmetic() -> None:
    assert arg_change({"enum": ["a", "b"]}, {"enum": ["b", "a"]}).level == "cosmetic"


def test_a_const_changed_is_breaking() -> None:
    levels = {c.level for c in changes(snap([tool(props={"x": {"const": 1}})]),
                                       snap([tool(props={"x": {"const": 2}})]))}
    assert "breaking" in levels


def test_max_length_lowered_is_breaking_and_raised_additive() -> None:
    lowered = arg_change({"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5})
    raised = arg_change({"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 10})
    assert (lowered.level, lowered.rule) == ("breaking", "bound.maxLength")
    assert (raised.level, raised.rule) == ("additive", "bound.maxLength")


def test_minimum_raised_or_added_is_breaking_and_removed_additive() -> None:
    assert arg_change({"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 1}).level == "breaking"
    assert arg_change({"type": "integer"}, {"type": "integer", "minimum": 1}).level == "breaking"
    assert arg_change({"type": "integer", "minimum": 1}, {"type": "integer"}).level == "additive"


def test_a_pattern_added_is_breaking() -> None:
    assert arg_change({"type": "string"}, {"type": "string", "pattern": "^a"}).level == "breaking"


def test_additional_properties_closed_is_breaking_and_opened_additive() -> None:
    open_ = snap([tool()])
    closed = snap([{"name": "weather", "inputSchema": {**tool()["inputSchema"], "additionalProperties": False}}])
    assert (only(open_, closed).level, only(open_, closed).rule) == ("breaking", "additionalProperties.closed")
    assert (only(closed, open_).level, only(closed, open_).rule) == ("additive", "additionalProperties.opened")


def test_an_arguments_description_changing_is_cosmetic() -> None:
    change = arg_change({"type": "string", "description": "a"}, {"type": "string", "description": "b"})
    assert (change.level, change.rule) == ("cosmetic", "annotation.description")


# -- JSON Schema structure ---------------------------------------------------------------------------------

def test_a_nested_property_narrowed_is_found_at_its_path() -> None:
    before = {"type": "object", "properties": {"zip": {"type": "number"}}}
    after = {"type": "object", "properties": {"zip": {"type": "integer"}}}
    change = arg_change(before, after)
    assert (change.level, change.path) == ("breaking", "arguments.x.zip")


def test_a_nested_required_field_added_is_breaking_as_a_field() -> None:
    before = {"type": "object", "properties": {"a": {"type": "string"}}}
    after = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["b"]}
    change = arg_change(before, after)
    assert (change.level, change.rule, change.path) == ("breaking", "field.added-required", "arguments.x.b")


def test_array_items_are_compared() -> None:
    change = arg_change({"type": "array", "items": {"enum": ["a", "b"]}}, {"type": "array", "items": {"enum": ["a"]}})
    assert (change.level, change.path) == ("breaking", "arguments.x.[]")


def test_a_ref_within_the_schema_is_followed() -> None:
    def with_defs(kind: str) -> dict[str, Any]:
        return {"name": "weather", "inputSchema": {
            "type": "object", "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": kind}}}},
            "properties": {"where": {"$ref": "#/$defs/Place"}}}}
    found = changes(snap([with_defs("number")]), snap([with_defs("integer")]))
    assert [(c.level, c.path) for c in found if c.rule == "type.narrowed"] == [("breaking", "arguments.where.lat")]


def test_a_recursive_ref_ends() -> None:
    def tree(kind: str) -> dict[str, Any]:
        return {"name": "t", "inputSchema": {"type": "object", "$defs": {"Node": {
            "type": "object", "properties": {"v": {"type": kind}, "kids": {"type": "array",
                                                                             "items": {"$ref": "#/$defs/Node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/Node"}}}}
    found = changes(snap([tree("number")]), snap([tree("integer")]))
    assert any(c.rule == "type.narrowed" and c.path == "arguments.root.v" for c in found)


def test_a_union_losing_a_member_is_breaking_and_gaining_one_additive() -> None:
    two = {"anyOf": [{"type": "string"}, {"type": "number"}]}
    one = {"anyOf": [{"type": "string"}]}
    assert (arg_change(two, one).level, arg_change(two, one).rule) == ("breaking", "union.member-removed")
    assert (arg_change(one, two).level, arg_change(one, two).rule) == ("additive", "union.member-added")


def test_a_one_of_member_narrowed_inside_is_found_inside() -> None:
    before = {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"n": {"type": "number"}}}]}
    after = {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"n": {"type": "integer"}}}]}
    change = arg_change(before, after)
    assert change.level == "breaking" and change.path.endswith(".n")


# -- output ------------------------------------------------------------------------------------------------

def out_tool(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    return {**tool(), "outputSchema": schema}


def test_an_output_field_removed_is_breaking() -> None:
    change = only(snap([out_tool({"t": {"type": "number"}, "u": {"type": "string"}})]),
                  snap([out_tool({"t": {"type": "number"}})]))
    assert (change.level, change.rule, change.path) == ("breaking", "output.removed", "output.u")


def test_an_output_field_added_is_additive() -> None:
    change = only(snap([out_tool({"t": {"type": "number"}})]),
                  snap([out_tool({"t": {"type": "number"}, "u": {"type": "string"}}, required=["u"])]))
    assert change.level == "additive"


def test_an_output_type_widened_is_breaking_for_its_readers() -> None:
    change = only(snap([out_tool({"t": {"type": "integer"}})]), snap([out_tool({"t": {"type": "number"}})]))
    assert change.level == "breaking"


def test_an_output_schema_removed_is_breaking() -> None:
    change = only(snap([out_tool({"t": {"type": "number"}})]), snap([tool()]))
    assert (change.level, change.rule) == ("breaking", "output.schema-removed")


# -- prompts, capabilities, server -------------------------------------------------------------------------

def test_a_prompts_required_argument_added_is_breaking_and_an_optional_one_additive() -> None:
    base = snap(prompts=[{"name": "p", "arguments": [{"name": "a"}]}])
    required = snap(prompts=[{"name": "p", "arguments": [{"name": "a"}, {"name": "b", "required": True}]}])
    optional = snap(prompts=[{"name": "p", "arguments": [{"name": "a"}, {"name": "b"}]}])
    assert only(base, required).level == "breaking"
    assert only(base, optional).level == "additive"
    assert only(required, base).rule == "argument.removed"


def test_a_capability_removed_is_breaking_and_added_additive() -> None:
    without = snap(caps={"tools": {"listChanged": True}, "resources": {"subscribe": True}})
    assert (only(snap(), without).level, only(snap(), without).path) == ("breaking", "prompts")
    assert only(without, snap()).level == "additive"


def test_a_capability_flag_turned_off_is_breaking() -> None:
    off = snap(caps={**CAPS, "tools": {"listChanged": False}})
    change = only(snap(), off)
    assert (change.level, change.rule, change.path) == ("breaking", "capability.turned-off", "tools.listChanged")


def test_the_servers_version_changing_is_cosmetic() -> None:
    new = snap()
    new["server"] = {"name": "demo", "version": "2.0"}
    change = only(snap(), new)
    assert (change.level, change.where, change.path) == ("cosmetic", "server", "version")


def test_a_tool_that_now_requires_a_task_is_breaking() -> None:
    change = only(snap([tool(execution={"taskSupport": "optional"})]),
                  snap([tool(execution={"taskSupport": "required"})]))
    assert (change.level, change.rule) == ("breaking", "tool.task-support")


# -- robustness --------------------------------------------------------------------------------------------

def test_garbage_from_a_server_compares_without_raising() -> None:
    weird = read_snapshot({"format": "mcp-console-surface", "version": 1, "tools": [
        {"name": "a", "inputSchema": "not a schema"}, 7, {"name": 3}, {"name": "b", "inputSchema": {"type": 5,
                                                                                                  "properties": []}}],
        "capabilities": [], "server": "x"})
    other = read_snapshot({**weird, "tools": [{"name": "a", "inputSchema": {"type": "object"}},
                                              {"name": "b", "inputSchema": True}]})
    assert diff(weird, other).changes  # says something, raises nothing
    assert diff(weird, weird).changes == ()


def test_breaking_changes_are_listed_first() -> None:
    found = changes(snap([tool("a", description="x")]), snap([tool("b")]))
    assert [c.level for c in found] == ["breaking", "additive"]
    found = changes(snap([tool("a", description="x"), tool("c")]), snap([tool("a", description="y")]))
    assert [c.level for c in found] == ["breaking", "cosmetic"]


def test_a_file_that_is_not_a_snapshot_is_refused() -> None:
    with pytest.raises(ValueError, match="not an MCP Console surface snapshot"):
        read_snapshot({"tools": []})


def test_a_version_no_longer_listed_by_discover_is_breaking_but_a_2025_11_25_connect_lists_none_to_compare() -> None:
    fewer = snap()
    fewer["supported_versions"] = ["2026-07-28"]
    assert (only(snap(), fewer).level, only(snap(), fewer).rule) == ("breaking", "version.removed")
    legacy = {**fewer, "era": "legacy", "protocol_version": "2025-11-25", "supported_versions": ["2025-11-25"]}
    assert [(c.level, c.rule) for c in changes(snap(), legacy)] == [("cosmetic", "version.negotiated")]
