"""A running call shows when the console will give up, counting down in the page, and "Wait longer" moves it."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.browser.conftest import Console, wait_live
from tests.browser.ui import open_tool
from tests.hostile.fixtures import HostileUrl

IDLE_S = 6


def test_a_running_call_counts_down_to_its_idle_deadline_and_wait_longer_pushes_it_out(
        page: Page, console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    url = hostile_http("faults")
    headers = {"Accept": "application/json", "Origin": console.base}
    made = page.request.post(console.url("/sessions"), form={"kind": "http", "url": url, "headers": ""},
                             headers=headers)
    assert made.ok, made.text()
    session = made.json()["id"]
    page.goto(console.url(f"/sessions/{session}"))
    wait_live(page)
    saved = page.request.post(console.url(f"/sessions/{session}/request-settings"), headers=headers,
                              form={"log_level": "", "progress": "on", "idle_timeout_s": str(IDLE_S), "max_s": "600"})
    assert saved.ok, saved.text()

    tool = open_tool(page, "silent")
    tool.get_by_role("button", name="Call silent", exact=True).click()
    card = tool.locator(".result .operation[data-op]")
    countdown = card.locator("[data-deadline]")
    expect(countdown).to_have_text(re.compile(r"^gives up in \d+ s$"))
    # The timeline entry is never polled (only the websocket re-renders it): its number drops by the page's own
    # countdown. The card says the same.
    entry = page.locator(f'#timeline-list > li.entry[data-op="{card.get_attribute("data-op")}"]')
    left = entry.locator(":scope > [data-deadline] .deadline-left")
    expect(left).to_have_count(1)
    first = int(left.inner_text())
    assert first <= IDLE_S
    expect(left).to_have_text(str(first - 2), timeout=5_000)

    card.get_by_role("button", name="Wait longer").click()
    # One more idle period on top of what was left: more than a fresh deadline would show, in the timeline too.
    page.wait_for_function(
        "([sel, min]) => { const el = document.querySelector(sel); return el && parseInt(el.textContent) > min; }",
        arg=[f'#{entry.get_attribute("id")} > [data-deadline] .deadline-left', IDLE_S], timeout=5_000)
    expect(card).to_contain_text("The console stopped waiting: no frame for 6 s", timeout=30_000)
    expect(card.locator("[data-deadline]")).to_have_count(0)
