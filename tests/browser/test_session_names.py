"""Sessions told apart in a real browser: renamed from the session page, listed on the home page by name with
their server, revision and transport, reached from any session page through the switcher; the home table's
headings never break inside a word, wide or narrow."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Console

WORD_BREAKS = """() => [...document.querySelectorAll('table.sessions th')].filter(th => th.offsetParent).map(th => {
  const line = parseFloat(getComputedStyle(th).lineHeight) || 20;
  return [th.textContent, th.getBoundingClientRect().height > 1.6 * line + 8 || th.scrollWidth > th.clientWidth + 1];
}).filter(([, broken]) => broken)"""


def test_a_renamed_session_is_listed_and_switched_to_by_its_name(page: Page, console: Console) -> None:
    page.locator("details.rename > summary").click()
    page.get_by_label("Name (empty: the server's title)").fill("Staging <i>demo</i>")
    page.get_by_role("button", name="Save name", exact=True).click()
    expect(page.locator("#session-head h1")).to_contain_text("Staging <i>demo</i>")
    expect(page).to_have_title("Staging <i>demo</i> · MCP Console")

    page.goto(console.url("/"))
    row = page.locator(f'tr[data-session="{console.session_id}"]')
    expect(row.get_by_role("link", name="Staging <i>demo</i>")).to_be_visible()
    expect(row.locator('td[data-label="Revision"]')).to_have_text("2026-07-28")
    expect(row.locator('td[data-label="Server"]')).to_contain_text("mcp-console-demo")

    page.goto(console.session_url)
    page.locator("details.switcher > summary").click()
    expect(page.locator("details.switcher a[aria-current=page]")).to_have_text("Staging <i>demo</i>")
    page.keyboard.press("Escape")  # Escape closes it, as a menu closes
    expect(page.locator("details.switcher")).not_to_have_attribute("open", "")
    page.locator("details.switcher > summary").click()
    expect(page.locator("details.switcher")).to_have_attribute("open", "")
    viewport = page.viewport_size or {"width": 1280, "height": 720}
    page.mouse.click(8, viewport["height"] - 8)  # and so does a click outside it (below its list, however long)
    expect(page.locator("details.switcher")).not_to_have_attribute("open", "")
    page.locator("details.rename > summary").click()
    page.get_by_label("Name (empty: the server's title)").fill("")
    page.get_by_role("button", name="Save name", exact=True).click()
    expect(page.locator("#session-head h1")).not_to_contain_text("Staging")


@pytest.mark.parametrize("width", [1400, 900, 390])
def test_the_sessions_tables_headings_do_not_break_inside_a_word(page: Page, console: Console, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(console.url("/"))
    expect(page.locator("table.sessions")).to_be_visible()
    assert page.evaluate(WORD_BREAKS) == []
