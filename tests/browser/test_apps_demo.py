"""The demo's MCP App (app/demo/app_view.py) in real Chromium, on the 2026-07-28 demo session: the policy the frame
applies refuses an undeclared domain and the console says so as a finding, a model-only tool is refused to the
view, a display mode the view asks for is applied, and presenter mode shows the app large."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import FrameLocator, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, wait_live
from tests.browser.ui import open_tool, session_of_its_own

pytestmark = pytest.mark.browser
SLOW_MS = 30_000


@pytest.fixture
def page(page: Page, console: Console) -> Iterator[Page]:
    """A session of its own on the demo server: the apps and bridge entries these tests make stay out of the shared
    demo session the other browser tests measure (tests/browser/test_dom_cost.py)."""
    with session_of_its_own(page, console, {"kind": "demo-http"}):
        yield page


def _counter(page: Page) -> tuple[str, FrameLocator]:
    item = open_tool(page, "counter_app")
    item.get_by_role("button", name="Call counter_app", exact=True).click()
    # This call's app, by the link its card gives (earlier calls' apps are listed too, closed).
    pointer = item.locator(".app-pointer a").last
    expect(pointer).to_be_visible(timeout=SLOW_MS)
    app_id = str(pointer.get_attribute("href")).removeprefix("#app-")
    expect(page.locator(f"#app-{app_id} iframe.app-frame")).to_be_attached(timeout=SLOW_MS)
    view = page.frame_locator(f"#app-{app_id} iframe.app-frame").frame_locator("iframe")
    expect(view.locator("#log")).to_contain_text("tool result received", timeout=SLOW_MS)
    return app_id, view


def test_a_fetch_the_views_csp_does_not_declare_is_refused_by_the_frame_and_is_a_finding(page: Page) -> None:
    _app, view = _counter(page)
    view.get_by_role("button", name="Fetch an undeclared domain").click()
    expect(view.locator("#log")).to_contain_text("refused by the CSP: https://undeclared.example.com",
                                                 timeout=SLOW_MS)
    entry = page.locator('#timeline-list > li.entry[data-method="app: csp violation (reported by the sandbox)"]').first
    expect(entry.locator(".findings-badge")).to_be_visible(timeout=SLOW_MS)
    entry.locator(":scope > details > summary").click()
    expect(entry).to_contain_text("apps.csp-violation")


def test_the_view_cannot_call_a_model_only_tool_and_can_call_an_app_only_one(page: Page) -> None:
    _app, view = _counter(page)
    view.get_by_role("button", name="Reset (reset_counter, model only)").click()
    expect(view.locator("#log")).to_contain_text("reset refused: tool 'reset_counter' is not visible to apps",
                                                 timeout=SLOW_MS)
    before = view.locator("#count").inner_text()
    view.get_by_role("button", name="Bump (bump_counter, apps only)").click()
    expect(view.locator("#log")).to_contain_text("bumped", timeout=SLOW_MS)
    expect(view.locator("#count")).not_to_have_text(before)


def test_full_screen_asked_by_the_view_is_applied_and_the_person_gets_back(page: Page) -> None:
    app, view = _counter(page)
    view.get_by_role("button", name="Full screen").click()
    article = page.locator(f"#app-{app}")
    expect(article).to_have_class(re.compile(r"\bmode-fullscreen\b"), timeout=SLOW_MS)
    expect(view.locator("#mode")).to_have_text("fullscreen")
    article.locator(".app-exit").click()
    expect(article).to_have_class(re.compile(r"\bmode-inline\b"))
    expect(view.locator("#mode")).to_have_text("inline", timeout=SLOW_MS)  # told by host-context-changed


def test_presenter_mode_shows_the_app_large(page: Page) -> None:
    app, _view = _counter(page)
    page.get_by_role("button", name="Presenter mode").click()
    page.locator(f"#app-{app} .app-body > summary").click()  # closed on a page load: opened by the person
    frame = page.locator(f"#app-{app} iframe.app-frame")
    expect(frame).to_be_visible(timeout=SLOW_MS)
    large, viewport = frame.bounding_box(), page.viewport_size
    assert large is not None and viewport is not None
    assert large["height"] >= 0.6 * viewport["height"], (large, viewport)
    page.get_by_role("button", name="Leave presenter mode").click()


def test_closing_the_view_tears_it_down_first_and_it_can_be_shown_again(page: Page) -> None:
    app, _view = _counter(page)
    article = page.locator(f"#app-{app}")
    article.get_by_role("button", name="Close view").click()
    teardown = page.locator('#timeline-list > li.entry[data-method="app: ui/resource-teardown"]').first
    expect(teardown).to_have_attribute("data-status", "ok", timeout=SLOW_MS)  # the view answered before removal
    expect(article.locator("iframe.app-frame")).to_have_count(0)
    expect(article.get_by_role("button", name="Close view")).to_be_hidden()  # only "Show the view again" is offered
    article.get_by_role("button", name="Show the view again").click()
    again = page.frame_locator(f"#app-{app} iframe.app-frame").frame_locator("iframe")
    expect(again.locator("#log")).to_contain_text("tool result received", timeout=SLOW_MS)
    expect(article.get_by_role("button", name="Close view")).to_be_visible()


APPS_JS = "() => performance.getEntriesByType('resource').filter(e => e.name.endsWith('/static/apps.js')).length"


def test_a_page_without_an_app_does_not_fetch_the_apps_script_and_the_first_app_brings_it(page: Page) -> None:
    assert page.evaluate(APPS_JS) == 0  # a session with no app yet: ~14 KB less on its first load
    _app, _view = _counter(page)  # the call's push adds the app; the script comes and mounts its frame
    assert page.evaluate(APPS_JS) == 1
    page.reload()
    wait_live(page, CONNECT_TIMEOUT_MS)
    assert page.evaluate(APPS_JS) == 1  # a page that lists an app fetches it at once
