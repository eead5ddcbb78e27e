"""Lint findings show live as a badge on their timeline entry; opening it reads them; the filter keeps only those."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.browser.conftest import Console, wait_live
from tests.browser.ui import open_tool
from tests.hostile.fixtures import HostileUrl


def test_a_broken_result_gets_a_findings_badge_live_and_the_filter_shows_only_entries_with_findings(
        page: Page, console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    url = hostile_http("lint")
    made = page.request.post(console.url("/sessions"), form={"kind": "http", "url": url, "headers": ""},
                             headers={"Accept": "application/json", "Origin": console.base})
    assert made.ok, made.text()
    session = made.json()["id"]
    page.goto(console.url(f"/sessions/{session}"))
    wait_live(page)
    tool = open_tool(page, "no_result_type")
    tool.get_by_role("button", name="Call no_result_type", exact=True).click()
    entry = page.locator('#timeline-list > li.entry[data-method="tools/call"]').first
    badge = entry.locator(".findings-badge")
    expect(badge).to_have_text(re.compile(r"⚑ \d+"))  # arrived over the websocket, no reload
    entry.locator(":scope > details > summary").click()
    expect(entry.locator(".findings")).to_contain_text("result.type-missing")
    expect(page.locator("#findings-summary")).to_contain_text("result.type-missing")
    page.locator("#timeline-pane").get_by_label("with findings").check()
    page.locator("#timeline-pane").get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"findings=1"))
    shown = page.locator("#timeline-list > li.entry")
    expect(shown.first).to_be_visible()
    assert all(li.locator(".findings-badge").count() == 1 for li in shown.all())
