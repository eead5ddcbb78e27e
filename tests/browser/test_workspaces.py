"""Workspaces in real Chromium: two sessions (the demo over HTTP and over stdio) side by side at 1400 px, each live
in its pane, one combined timeline that follows them and filters by server, and tabs on a phone."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, open_launch_url

pytestmark = pytest.mark.browser


@pytest.fixture
def workspace(page: Page, console: Console) -> Iterator[tuple[str, str, str]]:
    """A workspace of the demo session (HTTP) and a new stdio demo session: (workspace id, http sid, stdio sid)."""
    headers = {"Accept": "application/json", "Origin": console.base}
    made = page.request.post(console.url("/sessions"), form={"kind": "demo-stdio"}, headers=headers)
    assert made.ok, made.text()
    stdio = str(made.json()["id"])
    body = urlencode([("name", "Two demos"), ("session", console.session_id), ("session", stdio)])
    created = page.request.post(console.url("/workspaces"), data=body,
                                headers={**headers, "Content-Type": "application/x-www-form-urlencoded"})
    assert created.ok, created.text()
    ws = str(created.json()["id"])
    assert created.json()["sessions"] == [console.session_id, stdio]
    yield ws, console.session_id, stdio
    page.request.post(console.url(f"/workspaces/{ws}/delete"), headers=headers)
    page.request.post(console.url(f"/sessions/{stdio}/delete"), headers={"Origin": console.base}, max_redirects=0)


def test_two_sessions_sit_side_by_side_and_the_combined_timeline_follows_both(
        page: Page, console: Console, workspace: tuple[str, str, str]) -> None:
    ws, http, stdio = workspace
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(console.url(f"/workspaces/{ws}"))
    left, right = page.locator(f"#pane-{http}"), page.locator(f"#pane-{stdio}")
    expect(left).to_be_visible()
    expect(right).to_be_visible()
    a, b = left.bounding_box(), right.bounding_box()
    assert a is not None and b is not None and a["x"] + a["width"] <= b["x"] and abs(a["y"] - b["y"]) < 2
    pane = page.frame_locator(f"#pane-{stdio} iframe")
    expect(pane.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=CONNECT_TIMEOUT_MS)
    expect(pane.locator("header.top")).to_be_hidden()  # only the session in a pane
    item = pane.locator('details.item[data-tool="echo"]')
    item.locator(":scope > summary").click()
    item.get_by_label("text").first.fill("from the stdio pane")
    item.get_by_role("button", name="Call echo", exact=True).click()
    row = page.locator(f'#combined-list > li[data-session="{stdio}"][data-method="tools/call"]').first
    expect(row).to_be_visible(timeout=CONNECT_TIMEOUT_MS)  # live: the pane's timeline changed
    page.locator("#combined-server").select_option(http)
    expect(page.locator(f'#combined-list > li[data-session="{stdio}"]')).to_have_count(0)
    expect(page.locator(f'#combined-list > li[data-session="{http}"]').first).to_be_visible()


def test_on_a_phone_the_panes_are_tabs(context: BrowserContext, console: Console,
                                       workspace: tuple[str, str, str]) -> None:
    ws, http, stdio = workspace
    phone = context.new_page()
    phone.set_viewport_size({"width": 390, "height": 844})
    open_launch_url(phone, console)
    phone.goto(console.url(f"/workspaces/{ws}"))
    expect(phone.locator(f"#pane-{http}")).to_be_visible()
    expect(phone.locator(f"#pane-{stdio}")).to_be_hidden()
    phone.locator(f'.pane-tabs [data-pane="{stdio}"]').click()
    expect(phone.locator(f"#pane-{stdio}")).to_be_visible()
    expect(phone.locator(f"#pane-{http}")).to_be_hidden()
