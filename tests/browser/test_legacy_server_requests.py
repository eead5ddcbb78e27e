"""A 2025-11-25 server's elicitation/create, answered in real Chromium from the "Awaiting your input" inbox."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, open_launch_url
from tests.browser.ui import label, open_tool
from tests.legacy.fixtures import legacy_url

pytestmark = pytest.mark.browser
__all__ = ["legacy_url"]


def test_a_legacy_elicitation_form_is_answered_in_the_inbox_and_the_tool_gets_the_answer(
        context: BrowserContext, console: Console, legacy_url: str) -> None:
    page: Page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(legacy_url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=CONNECT_TIMEOUT_MS)
    sid = page.url.rsplit("/", 1)[-1]
    try:
        item = open_tool(page, "ask")
        item.get_by_role("button", name="Call ask", exact=True).click()  # its answer waits for ours

        dialog = page.locator("#inbox .inbox-sr section[role=dialog]")
        expect(dialog).to_have_attribute("data-kind", "form")
        expect(dialog).to_contain_text("Your name?")
        name = dialog.get_by_label(label("name"))
        name.fill("A")  # the same field macro: minLength 2 becomes the browser's own check too
        assert name.evaluate("el => el.checkValidity()") is False
        name.fill("Ada")
        dialog.get_by_role("button", name="Accept", exact=True).click()

        expect(item.locator(".result")).to_contain_text('"content": {"name": "Ada"}')
        expect(page.locator("#inbox .inbox-sr")).to_have_count(0)
        call = page.locator('#timeline-list > li.entry[data-method="tools/call"]').first
        expect(call).to_have_attribute("data-status", re.compile(r"^(ok|complete)$"))
        call.locator(":scope > details > summary").click()  # the entry's body (its nested requests) loads on open
        nested = call.locator("li.server-request")
        expect(nested).to_have_attribute("data-status", "answered")
        expect(nested).to_contain_text("elicitation/create")
    finally:
        page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base},
                          max_redirects=0)
