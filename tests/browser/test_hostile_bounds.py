"""A stderr storm in real Chromium: the live box stays at its cap and an echo's result still shows promptly."""

from __future__ import annotations

import shlex
import time

from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import ROOT, Console, open_launch_url, wait_live
from tests.browser.ui import label, open_tool
from tests.hostile.fixtures import hostile_argv

BOX_CAP = 500  # the stderr box's data-max
ECHO_DEADLINE_S = 3.0


def test_during_a_stderr_flood_the_box_stays_capped_and_an_echo_result_appears_within_seconds(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Command to start the server").fill(shlex.join(hostile_argv("bounds", "basic")))
    page.get_by_label("Working directory (optional)").fill(str(ROOT))
    page.get_by_role("button", name="Start and connect").click()
    wait_live(page)

    flood = open_tool(page, "stderr_flood")
    flood.get_by_label(label("lines")).fill("20000")
    flood.get_by_label(label("rate")).fill("4000")  # five seconds of storm
    flood.get_by_role("button", name="Call stderr_flood", exact=True).click()
    lines = page.locator("#stderr-lines > span")
    expect(lines.nth(BOX_CAP - 1)).to_be_attached()  # the storm is on screen, and the box is full

    echo = open_tool(page, "echo")
    echo.get_by_label(label("text")).fill("through the storm")
    started = time.monotonic()
    echo.get_by_role("button", name="Call echo", exact=True).click()
    expect(echo.locator(".result pre.text-content")).to_have_text("through the storm",
                                                                  timeout=ECHO_DEADLINE_S * 1000)
    took = time.monotonic() - started
    assert took < ECHO_DEADLINE_S, f"the echo's result took {took:.2f} s during the storm"

    counts = [lines.count()]
    expect(page.locator("#stderr-dropped")).to_contain_text("lines dropped", timeout=15_000)
    counts.append(lines.count())
    assert max(counts) <= BOX_CAP, f"the stderr box held {counts} lines"
    expect(lines.last).to_contain_text("stderr storm line")
    expect(page.locator("#stderr-lines b")).to_have_count(0)  # server text stays text
