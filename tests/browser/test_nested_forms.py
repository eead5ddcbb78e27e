"""Arguments beyond flat fields, in real Chromium (issue 34, item 5): nested objects and arrays of objects with Add
and Remove, the JSON box kept in step with the form both ways, a schema of thousands of fields rendered on demand.
What the hostile target's `nested_args` received is its answer, so each test reads what went on the wire."""

from __future__ import annotations

import itertools
import json
import re
from typing import TYPE_CHECKING, Any

from playwright.sync_api import BrowserContext, Locator, Page, expect

from app.web.form_view import DIALOG_WINDOW
from tests.browser.test_hostile_forms import connect
from tests.browser.ui import label, open_tool
from tests.hostile.forms_sizes import ASKED, HUGE
from tests.realservers.fixtures import fastmcp_url, needs_fastmcp

__all__ = ["fastmcp_url"]  # the fixture, used by name

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.browser.conftest import Console


def nested_page(context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> tuple[Page, Locator]:
    page, _, _ = connect(context, console, hostile_http("forms"))
    return page, open_tool(page, "nested_args")


def received(tool: Locator) -> Any:
    """The arguments the target got, as it answered them (sorted JSON in a text block)."""
    card = tool.locator(".result pre.text-content").last
    expect(card).to_be_visible()
    return json.loads(card.inner_text())


def call(tool: Locator) -> Any:
    tool.locator(":scope > .result").evaluate("box => box.replaceChildren()")  # the answer to wait for is new
    tool.get_by_role("button", name="Call nested_args", exact=True).click()
    return received(tool)


def test_a_nested_object_and_an_array_of_objects_send_exactly_what_the_form_shows(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    note = tool.get_by_role("group", name=label("note"))
    note.get_by_label(label("title")).fill("Groceries")
    note.get_by_label(label("priority")).fill("2")
    note.get_by_role("group", name="flags").get_by_label("pinned").select_option("false")
    tags = tool.get_by_role("group", name=label("tags"))
    add = tags.get_by_role("button", name="Add tags item", exact=True)
    for _ in range(3):
        add.click()
    expect(add).to_be_disabled()  # maxItems 3
    tags.get_by_role("group", name="tags item 1").get_by_label(label("name")).fill("first")
    tags.get_by_role("group", name="tags item 2").get_by_label(label("name")).fill("second")
    tags.get_by_role("group", name="tags item 3").get_by_label(label("name")).fill("third")
    tags.get_by_role("group", name="tags item 3").get_by_label(label("weight")).fill("0.5")
    tags.get_by_role("button", name="Remove tags item 1", exact=True).click()
    expect(add).to_be_enabled()
    # What was the second item is now the first: renumbered, and sent in the order shown.
    expect(tags.get_by_role("group", name="tags item 1").get_by_label(label("name"))).to_have_value("second")
    ids = tool.get_by_role("group", name="ids")
    ids.get_by_role("button", name="Add ids item", exact=True).click()
    ids.get_by_role("button", name="Add ids item", exact=True).click()
    ids.get_by_label("ids item 1", exact=True).fill("7")
    ids.get_by_label("ids item 2", exact=True).fill("12345678901234567890")  # past a double: goes as typed
    tool.get_by_label(label("a.b")).fill("dotted")
    tool.get_by_role("group", name="a", exact=True).get_by_label("b").fill("nested")
    assert call(tool) == {
        "note": {"title": "Groceries", "priority": 2, "flags": {"pinned": False}},
        "tags": [{"name": "second"}, {"name": "third", "weight": 0.5}],
        "ids": [7, 12345678901234567890], "a.b": "dotted", "a": {"b": "nested"}}


def test_an_item_left_empty_is_refused_beside_the_form_not_sent_as_something_else(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    tool.get_by_role("group", name=label("note")).get_by_label(label("title")).fill("x")
    tool.get_by_role("group", name=label("tags")).get_by_role("button", name="Add tags item").click()
    tool.get_by_role("button", name="Call nested_args", exact=True).click()
    expect(tool.locator(".result")).to_contain_text("tags[0].name")
    expect(tool.locator(".result")).to_contain_text("This field is required.")


def json_box(tool: Locator) -> Locator:
    details = tool.locator("details.json-mode")
    if details.get_attribute("open") is None:
        details.locator(":scope > summary").click()
    return tool.get_by_label("Arguments (JSON)")


def test_json_mode_starts_from_the_form_and_a_later_form_edit_is_what_the_next_call_sends(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    title = tool.get_by_role("group", name=label("note")).get_by_label(label("title"))
    title.fill("first")
    box = json_box(tool)
    expect(box).to_have_value(json.dumps({"note": {"title": "first"}}, indent=2))
    tool.get_by_label("Send the JSON below instead of the form", exact=False).check()
    assert call(tool) == {"note": {"title": "first"}}
    title.fill("second")  # JSON mode still ticked: the box follows, and the call sends it at once
    tool.get_by_role("button", name="Call nested_args", exact=True).click()
    expect(tool.locator(".result pre.text-content").last).to_have_text(json.dumps({"note": {"title": "second"}}))
    expect(box).to_have_value(json.dumps({"note": {"title": "second"}}, indent=2))


def test_json_that_fits_fills_the_form_and_json_that_does_not_says_why_and_is_what_is_sent(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    box = json_box(tool)
    fitting = {"note": {"title": "from json", "priority": 3}, "tags": [{"name": "a"}, {"name": "b", "weight": 2}],
               "mode": "slow"}
    box.fill(json.dumps(fitting))
    tags = tool.get_by_role("group", name=label("tags"))
    expect(tags.get_by_role("group", name="tags item 2").get_by_label(label("weight"))).to_have_value("2")
    expect(tool.get_by_role("group", name=label("note")).get_by_label(label("title"))).to_have_value("from json")
    expect(tool.get_by_label(label("mode"))).to_have_value("slow")
    note = tool.locator(".json-note")
    expect(note).to_be_empty()
    # The form now shows that JSON, so either mode sends it.
    assert call(tool) == fitting
    box.fill(json.dumps({"note": {"title": "t"}, "extra": [1]}))
    expect(note).to_contain_text("does not fit the form")
    expect(note).to_contain_text("'extra'")
    # Typing JSON ticked "Send the JSON": left unticked, Call sent the form and said nothing of the JSON.
    expect(tool.get_by_label("Send the JSON below instead of the form", exact=False)).to_be_checked()
    tool.get_by_role("button", name="Call nested_args", exact=True).click()
    expect(tool.locator(".result pre.text-content").last).to_have_text(
        json.dumps({"extra": [1], "note": {"title": "t"}}))


def test_the_json_mode_label_and_box_do_not_overlap(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    box = json_box(tool)
    for width in (1400, 390):
        tool.page.set_viewport_size({"width": width, "height": 900})
        boxes = [tool.locator(".json-mode label.check-label").bounding_box(),
                 tool.locator(".json-mode label.block-label").bounding_box(), box.bounding_box()]
        assert all(boxes), boxes
        for upper, lower in itertools.pairwise(boxes):
            assert upper is not None and lower is not None
            assert upper["y"] + upper["height"] <= lower["y"] + 0.5, (width, boxes)


def test_a_schema_of_thousands_of_fields_shows_its_first_fields_and_the_rest_when_asked(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms"))
    tool = open_tool(page, "huge_schema")
    fields = tool.locator("[data-form-fields] input")
    assert 0 < fields.count() <= 100
    tool.get_by_label(label("f0001")).fill("kept")
    show = tool.get_by_role("button", name=f"Show all {HUGE} fields", exact=True)
    show.click()
    expect(fields).to_have_count(HUGE)
    expect(tool.get_by_label(label("f0001"))).to_have_value("kept")
    tool.get_by_label(label("f2999")).fill("last")
    tool.get_by_role("button", name="Call huge_schema", exact=True).click()
    expect(tool.locator(".result")).to_contain_text("huge got 2")


@needs_fastmcp
def test_fastmcps_free_form_object_and_array_of_objects_and_its_template_are_usable(
        context: BrowserContext, console: Console, fastmcp_url: str) -> None:
    # tag_note(note: dict, tags: list[dict]): objects with no declared properties are JSON boxes, the array of
    # them a list of JSON boxes with Add and Remove; notes://{name} is a template with a form.
    page, _, _ = connect(context, console, fastmcp_url)
    tool = open_tool(page, "tag_note")
    tool.get_by_label(label("note")).fill('{"title": "Trip"}')
    tags = tool.get_by_role("group", name=label("tags"))
    tags.get_by_role("button", name="Add tags item", exact=True).click()
    tags.get_by_role("button", name="Add tags item", exact=True).click()
    tags.get_by_label("tags item 1", exact=True).fill('{"name": "travel"}')
    tags.get_by_label("tags item 2", exact=True).fill('{"name": "2027", "extra": [1, 2]}')
    tool.get_by_role("button", name="Call tag_note", exact=True).click()
    expect(tool.locator(".result")).to_contain_text("Trip: travel, 2027")
    form = page.get_by_role("form", name="Read from template notes://{name}")
    form.get_by_label("name", exact=True).fill("groceries")
    expect(form.locator("output[data-template-preview]")).to_have_text("notes://groceries")
    form.get_by_role("button", name=re.compile(r"^Read ")).click()
    expect(page.locator(f"#{form.evaluate('f => f.nextElementSibling.id')}")).to_contain_text("the note groceries")


def test_a_round_of_64_questions_of_thousands_of_fields_renders_a_few_fields_of_each(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    # 64 questions of 3,000 fields made a 52.5 MB page that took Chromium 15 s when every field was rendered (and
    # each question's raw JSON, 287 KB, with it).
    page, _, _ = connect(context, console, hostile_http("forms"))
    tool = open_tool(page, "ask_huge")
    tool.get_by_role("button", name="Call ask_huge", exact=True).click()
    expect(page.locator("#inbox section.dialog.kind-form")).to_have_count(ASKED)
    assert page.locator("#inbox input").count() <= ASKED * (DIALOG_WINDOW + 4)
    weight = page.evaluate("document.documentElement.outerHTML.length")
    assert weight < 2_000_000, weight
    raw = page.locator('#inbox section.dialog[data-key="q63"] details.raw-request')
    raw.locator(":scope > summary").click()
    expect(raw.locator("pre")).to_contain_text(f'"f{HUGE - 1:04d}"')
    page.get_by_role("button", name=re.compile(r"^Abandon operation")).click()
    expect(page.locator("#inbox section.dialog")).to_have_count(0)


def test_every_field_of_a_huge_question_is_there_when_asked_and_what_is_typed_in_them_is_sent(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms"))
    tool = open_tool(page, "ask_huge")
    tool.get_by_label(label("n")).fill("2")
    tool.get_by_role("button", name="Call ask_huge", exact=True).click()
    first = page.locator('#inbox section.dialog[data-key="q00"]')
    first.get_by_label(label("f0000")).fill("typed first")
    first.locator("details.more-fields > summary").click()
    expect(first.locator("input[name^='arg.f']")).to_have_count(HUGE)
    expect(first.get_by_label(label("f0000"))).to_have_value("typed first")
    first.get_by_label(label(f"f{HUGE - 1:04d}")).fill("the last one")
    first.get_by_role("button", name="Accept", exact=True).click()  # 3,000 inputs: over the 1,000-field limit
    page.locator('#inbox section.dialog[data-key="q01"]').get_by_role("button", name="Accept", exact=True).click()
    expect(tool.locator(".result")).to_contain_text("answers 2, q00 last field 'the last one'")


def test_json_mode_sends_nothing_while_the_form_holds_a_value_the_json_cannot_show(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    _, tool = nested_page(context, console, hostile_http)
    note = tool.get_by_role("group", name=label("note"))
    note.get_by_label(label("title")).fill("kept")
    box = json_box(tool)
    tool.get_by_label("Send the JSON below instead of the form", exact=False).check()
    expect(box).to_have_value(json.dumps({"note": {"title": "kept"}}, indent=2))
    note.get_by_label(label("priority")).fill("9")  # maximum 5: the form would refuse it, the JSON cannot hold it
    tool.locator(":scope > .result").evaluate("box => box.replaceChildren()")
    tool.get_by_role("button", name="Call nested_args", exact=True).click()
    expect(tool.locator(".json-note")).to_contain_text("Not sent")
    expect(tool.locator(".json-note")).to_contain_text("note.priority: Must be at most 5.")
    expect(tool.locator(":scope > .result")).to_be_empty()
    note.get_by_label(label("priority")).fill("4")
    expect(box).to_have_value(json.dumps({"note": {"title": "kept", "priority": 4}}, indent=2))
    assert call(tool) == {"note": {"title": "kept", "priority": 4}}
