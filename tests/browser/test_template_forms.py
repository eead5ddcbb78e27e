"""Resource templates get a form from their RFC 6570 uriTemplate, and completions are offered as a person types
(issue 34, item 5), against the demo server: its `demo://items/{item_id}` template and its greet prompt's `style`
argument both complete."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect


def options_of(field: Locator) -> Locator:
    return field.page.locator(f"datalist#{field.get_attribute('list')} > option")


def test_a_template_variable_is_completed_as_typed_and_read_through_the_expanded_uri(page: Page) -> None:
    form = page.get_by_role("form", name="Read from template demo://items/{item_id}")
    preview = form.locator("output[data-template-preview]")
    expect(preview).to_have_text("demo://items/")
    item_id = form.get_by_label("item_id", exact=True)
    before = page.locator('#timeline-list > li.entry[data-method="completion/complete"]').count()
    item_id.press_sequentially("g")
    expect(options_of(item_id)).to_have_count(1)
    expect(options_of(item_id).first).to_have_attribute("value", "gamma")
    # Each ask is a request like any other: on the timeline.
    expect(page.locator('#timeline-list > li.entry[data-method="completion/complete"]').nth(before)).to_be_attached()
    item_id.fill("gamma ray/1")
    expect(preview).to_have_text("demo://items/gamma%20ray%2F1")  # a simple {var}: reserved characters encoded
    item_id.fill("gamma")
    expect(preview).to_have_text("demo://items/gamma")
    form.get_by_role("button", name=re.compile(r"^Read ")).click()
    result = page.locator(f"#{form.evaluate('f => f.nextElementSibling.id')}")
    expect(result).to_contain_text("Radiates")


def test_a_prompt_argument_is_completed_as_typed(page: Page) -> None:
    prompt = page.locator('details.item[data-prompt="greet"]')
    prompt.locator(":scope > summary").click()
    style = prompt.get_by_label(re.compile(r"^style"))
    style.press_sequentially("p")
    expect(options_of(style)).to_have_count(1)
    expect(options_of(style).first).to_have_attribute("value", "pirate")
    style.fill("")
    style.press_sequentially("c")
    expect(options_of(style).first).to_have_attribute("value", "casual")


def test_the_read_any_resource_box_suggests_a_listed_uri_not_one_it_made_up(page: Page) -> None:
    box = page.get_by_label("Resource URI", exact=True)
    first = page.locator("#group-resources .items input[name=uri]").first.get_attribute("value")
    expect(box).to_have_attribute("placeholder", first or "")
    assert first != "demo://items/alpha"
