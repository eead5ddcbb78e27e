"""The surface over time in real Chromium: a tool list change shows "changed since the last connect" live in every
tab, with the change classified, and the surface page compares two snapshots picked by label."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import Console
from tests.browser.test_live_feeds import press_call, second_tab, start_listening, stop_listening

pytestmark = pytest.mark.browser


def test_a_tool_added_at_run_time_shows_live_as_changed_since_the_last_connect_in_every_tab(
        context: BrowserContext, page: Page, console: Console) -> None:
    other = second_tab(context, console)
    sub = start_listening(page, tools=True)  # the demo tells of list changes on a listen stream; the console re-lists
    name = f"surface_{uuid.uuid4().hex[:8]}"
    press_call(page, "add_tool", Name=name)
    for tab in (page, other):
        box = tab.locator("#surface-changes")
        expect(box).to_contain_text("Changed since the last connect")
        added = box.locator('li.surface-change[data-rule="tool.added"]', has_text=f"tool {name}")
        expect(added).to_have_count(1)
        expect(added).to_have_attribute("data-level", "additive")
    stop_listening(page, sub)


def test_the_surface_page_compares_two_snapshots_picked_by_label(page: Page, console: Console) -> None:
    page.get_by_role("link", name="Compare snapshots").first.click()
    expect(page.get_by_role("heading", name="The surface over time")).to_be_visible()
    page.get_by_label("From (A)").select_option(index=0)  # "now": the lists as last refreshed
    page.get_by_label("To (B)").select_option(index=0)
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#surface-summary")).to_have_text("No changes.")
    expect(page.locator("#surface-summary")).to_have_attribute("data-breaking", "false")
