"""How a listed item's declared fields are read for display (app/web/item_details.py): the spec's defaults for a
tool's hints, which icons a page may draw, and shapes no honest server sends."""

from __future__ import annotations

import base64

from app.web.item_details import (
    MAX_ICONS,
    app_ui,
    declared_hints,
    description_lines,
    display_title,
    icon_views,
    prompt_arguments,
    resource_annotations,
    task_support,
    tool_hints,
)
from app.web.render import SAFE_IMAGE_TYPES

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


def hints_of(tool: object) -> dict[str, tuple[str, bool, bool]]:
    return {h.key: (h.label, h.declared, h.applies) for h in tool_hints(tool)}


def test_a_tool_without_annotations_has_the_specs_defaults_none_of_them_declared() -> None:
    assert hints_of({"name": "t"}) == {"readOnlyHint": ("may modify", False, True),
                                       "destructiveHint": ("destructive", False, True),
                                       "idempotentHint": ("not idempotent", False, True),
                                       "openWorldHint": ("open world", False, True)}
    assert declared_hints({"name": "t"}) == []


def test_destructive_and_idempotent_do_not_apply_to_a_read_only_tool() -> None:
    hints = hints_of({"annotations": {"readOnlyHint": True, "destructiveHint": True, "openWorldHint": False}})
    assert hints["readOnlyHint"] == ("read-only", True, True)
    assert hints["destructiveHint"] == ("destructive", True, False)
    assert hints["idempotentHint"] == ("not idempotent", False, False)
    assert hints["openWorldHint"] == ("closed world", True, True)
    assert [h.label for h in declared_hints({"annotations": {"readOnlyHint": True, "destructiveHint": True,
                                                             "openWorldHint": False}})] == ["read-only", "closed world"]


def test_a_hint_that_is_not_a_boolean_keeps_the_default_and_is_shown_as_sent() -> None:
    [_, destructive, _, world] = tool_hints({"annotations": {"destructiveHint": "no", "openWorldHint": 0}})
    assert destructive.label == "destructive" and not destructive.declared and destructive.raw == "no"
    assert world.label == "open world" and world.raw == 0
    assert tool_hints({"annotations": "read only"})[0].declared is False  # a string where an object belongs
    assert tool_hints("not a tool")[0].label == "may modify"


def test_the_display_title_follows_the_specs_order_and_ignores_odd_shapes() -> None:
    assert display_title({"title": "T", "annotations": {"title": "A"}}) == "T"
    assert display_title({"annotations": {"title": "A"}}) == "A"
    assert display_title({"annotations": "title"}) is None and display_title(["x"]) is None


def test_the_description_splits_at_its_first_line() -> None:
    assert description_lines({"description": "\n  One.\nTwo.\nThree."}) == ("One.", "Two.\nThree.")
    assert description_lines({"description": 42}) == ("42", "")
    assert description_lines({}) == ("", "")


def test_only_a_raster_data_uri_with_valid_base64_is_drawn() -> None:
    icons = [{"src": f"data:image/png;base64,{PNG}", "sizes": ["48x48", "any"], "theme": "dark"},
             {"src": f"data:IMAGE/PNG;charset=x;base64,{PNG}"},
             {"src": "data:image/svg+xml;base64,PHN2Zz4="},
             {"src": "data:image/png;base64,not base64!"},
             {"src": "data:image/png,raw"},
             {"src": "https://example.com/i.png"},
             {"src": "javascript:alert(1)"},
             "not an object"]
    views, more = icon_views(icons, SAFE_IMAGE_TYPES)
    assert more == 0
    assert [v.src for v in views] == [f"data:image/png;base64,{PNG}"] * 2 + [None] * 6
    assert views[0].sizes == "48x48 any" and views[0].theme == "dark"
    assert "not a raster type" in views[2].note and "not valid" in views[3].note and "not base64" in views[4].note
    assert "not loaded" in views[5].note and "not an https: or data: URI" in views[6].note


def test_icons_are_bounded_in_number_and_size() -> None:
    views, more = icon_views([{"src": f"data:image/png;base64,{PNG}"}] * (MAX_ICONS + 5), SAFE_IMAGE_TYPES)
    assert len(views) == MAX_ICONS and more == 5
    big = "A" * (70 * 1024)
    [view], _ = icon_views([{"src": f"data:image/png;base64,{big}"}], SAFE_IMAGE_TYPES)
    assert view.src is None and "larger than" in view.note and len(view.text) < 400
    assert icon_views("icons", SAFE_IMAGE_TYPES) == ([], 0)


def test_an_mcp_apps_ui_resource_is_found_in_either_spelling() -> None:
    assert app_ui({"_meta": {"ui": {"resourceUri": "ui://app"}}}) == "ui://app"
    assert app_ui({"_meta": {"ui/resourceUri": "ui://old"}}) == "ui://old"
    assert app_ui({"_meta": {"ui": "x"}}) is None and app_ui({"_meta": []}) is None and app_ui({}) is None


def test_task_support_names_known_values_and_says_when_a_value_is_not_one() -> None:
    assert task_support({"execution": {"taskSupport": "required"}}) == (
        "required", "The tool must be run as a task (2025-11-25 tasks).")
    value, meaning = task_support({"execution": {"taskSupport": ["x"]}}) or ("", "")
    assert value == "['x']" and meaning.startswith("Not a value")
    assert task_support({"execution": {}}) is None and task_support({"execution": "optional"}) is None


def test_resource_annotations_are_listed_with_what_they_mean_and_priority_is_checked() -> None:
    rows = resource_annotations({"annotations": {"audience": ["user"], "priority": 2, "lastModified": "x",
                                                 "other": True}})
    assert [(k, v) for k, v, _ in rows] == [("audience", "user"), ("priority", "2"), ("lastModified", "x"),
                                           ("other", "True")]
    assert rows[1][2].startswith("Not a number from 0 to 1") and rows[3][2] == "A key the spec does not define."
    assert resource_annotations({"annotations": {"priority": True}})[0][2].startswith("Not a number")
    assert resource_annotations({"annotations": None}) == []


def test_prompt_arguments_keep_only_objects() -> None:
    assert prompt_arguments({"arguments": [{"name": "a"}, "b", 3]}) == [{"name": "a"}]
    assert prompt_arguments({"arguments": "a"}) == [] and prompt_arguments(None) == []
