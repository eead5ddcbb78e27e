"""Hostile text in real Chromium: long unbroken strings wrap, bidi overrides are shown, no script runs."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, open_launch_url
from tests.hostile.tools_text import RLO

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.sync_api import BrowserContext

SERVER_NAME = f"<b>x</b>{RLO}evil"
TOLERANCE_PX = 2  # sub-pixel rounding


@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (390, 844)])
def test_a_hostile_server_cannot_widen_the_page_reorder_a_name_or_run_script(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str], width: int, height: int) -> None:
    url = hostile_http("text", "basic", name=SERVER_NAME)
    page: Page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=CONNECT_TIMEOUT_MS)
    expect(page.locator('details.item[data-tool="long_title"]')).to_be_attached()

    # Open the long tool and call the one whose result carries markup and a bidi URI.
    page.locator('details.item[data-tool="long_title"] > summary').click()
    markup = page.locator('details.item[data-tool="markup"]')
    markup.locator(":scope > summary").click()
    markup.get_by_role("button", name="Call markup", exact=True).click()
    expect(markup.locator(".result")).to_contain_text("⟨U+202E⟩")

    viewport = page.evaluate("window.innerWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= viewport + TOLERANCE_PX, f"the page is {scroll}px wide in a {viewport}px viewport"
    timeline = page.locator(".timeline-panel")
    box = timeline.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport + TOLERANCE_PX
    expect(timeline.locator("#timeline-list > li").first).to_be_visible()

    bidi = page.locator('details.item[data-tool="invoice\u202eexe.pdf"] > summary code')
    expect(bidi).to_have_text("invoice⟨U+202E⟩exe.pdf")
    expect(page.locator("#session-head h1")).to_contain_text("<b>x</b>⟨U+202E⟩evil")
    expect(page.locator("main img[src='x'], main b")).to_have_count(0)
    expect(page.locator("main script")).to_have_count(0)
    assert page.evaluate("typeof window.alert") == "function" and dialogs == []
