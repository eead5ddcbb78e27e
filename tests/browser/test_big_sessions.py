"""A filtered page of a session larger than its window: the matches come from the whole session, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import Console, RunningConsole, open_launch_url

WINDOW = 3
CALLS = WINDOW + 2


@pytest.fixture
def small_window(tmp_path: Path) -> Iterator[Console]:
    """A console of its own whose page holds only WINDOW entries."""
    running = RunningConsole(tmp_path, env={"MCP_CONSOLE_TIMELINE_WINDOW": str(WINDOW)})
    try:
        yield running.console
    finally:
        running.kill_all(running.terminate())


def test_a_filtered_page_shows_calls_older_than_the_window_with_their_count_and_loads_older_matches(
        context: BrowserContext, small_window: Console) -> None:
    console = small_window
    port = urlsplit(console.base).port
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0,
                      headers={"Authorization": f"Bearer {console.token}", "Accept": "application/json"}) as api:
        sid = console.session_id
        for i in range(CALLS):
            api.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": f"call {i}"}).raise_for_status()
            api.post(f"/sessions/{sid}/refresh").raise_for_status()  # entries that are not calls
    page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url(f"/sessions/{console.session_id}?method=tools%2Fcall"))
    expect(page.locator("#filter-matches")).to_have_text(f"{CALLS} matches in the whole session")
    entries = page.locator("#timeline-list > li.entry")
    expect(entries).to_have_count(WINDOW)
    page.get_by_role("button", name="Load older entries").click()
    expect(entries).to_have_count(CALLS)
    assert set(entries.evaluate_all("els => els.map(e => e.dataset.method)")) == {"tools/call"}
    expect(page.get_by_role("button", name="Load older entries")).to_have_count(0)  # every match is shown
