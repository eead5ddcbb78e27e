"""The workbench in real Chromium at 1400×1000 and 390×844: a timeline pane that stays in view, tool search, a
timeline filter kept in the URL, phones without sideways scroll (a viewer link opens on the timeline), presenter
mode from one root size, MRTR summaries, and no dead ends (failed connect, revoked links, JSON mode)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, is_loopback_url, wait_live
from tests.browser.test_console_ui import call, call_echo
from tests.browser.test_sharing import create_link, revoke
from tests.browser.ui import delete_session_on_screen, label, open_tool

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture
def other_context(browser: Browser) -> Iterator[BrowserContext]:
    """A second browser (its own cookies): whoever was sent a link."""
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(15_000)
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    yield context
    context.close()


def page_width(page: Page) -> int:
    return int(page.evaluate("document.scrollingElement.scrollWidth"))


def top_of(page: Page, selector: str) -> float:
    return float(page.locator(selector).first.evaluate("el => el.getBoundingClientRect().top + window.scrollY"))


def test_the_timeline_pane_stays_in_view_when_the_page_scrolls_down_the_tools(page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    entry = call_echo(page, "sticky")
    page.evaluate("window.scrollTo(0, document.scrollingElement.scrollHeight)")
    page.wait_for_function("window.scrollY > 300")
    box = page.locator("#timeline-pane").bounding_box()
    assert box is not None and 0 <= box["y"] <= 20, box  # pinned to the top of the window, not scrolled away
    expect(entry).to_be_in_viewport()


@SIZES
def test_tool_search_keeps_only_the_matching_tools_and_says_when_nothing_matches(page: Page,
                                                                                  size: dict[str, int]) -> None:
    page.set_viewport_size(size)
    tools = page.locator("#group-tools details.item")
    assert tools.count() > 5
    page.get_by_label("Search tools, resources and prompts").fill("echo")
    expect(page.locator('#group-tools details.item[data-tool="echo"]')).to_be_visible()
    expect(page.locator('#group-tools details.item[data-tool="add"]')).to_be_hidden()
    page.get_by_label("Search tools, resources and prompts").fill("zz-no-such-tool")
    expect(page.locator("#item-search-none")).to_be_visible()
    page.get_by_label("Search tools, resources and prompts").fill("")
    expect(page.locator('#group-tools details.item[data-tool="add"]')).to_be_visible()


@SIZES
def test_the_timeline_filter_goes_in_the_url_and_hides_live_entries_that_do_not_match(
        page: Page, console: Console, size: dict[str, int]) -> None:
    page.set_viewport_size(size)
    call_echo(page, "before the filter")
    add = open_tool(page, "add")  # work in progress elsewhere on the page survives a filter (only the pane swaps)
    add.get_by_label(label("A")).fill("41")
    page.get_by_label("Method", exact=True).select_option("tools/call")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page).to_have_url(re.compile(r"\?method=tools%2Fcall"))
    expect(page.locator("#timeline-pane")).to_contain_text("filtered:")
    expect(add.get_by_label(label("A"))).to_have_value("41")
    wait_live(page)
    entries = page.locator("#timeline-list > li.entry")
    assert set(entries.evaluate_all("els => els.map(e => e.dataset.method)")) == {"tools/call"}
    # Entries arriving live follow the same filter: a list refresh adds tools/list entries, which stay hidden.
    page.get_by_role("button", name="Refresh lists").click()
    listed = page.locator('#timeline-list > li.entry[data-method="tools/list"]')
    expect(listed.first).to_be_attached()
    expect(listed.first).to_be_hidden()
    entry = call_echo(page, "after the filter")
    expect(entry).to_be_visible()
    page.goto(page.url)  # the same URL opens the same filtered view (a shareable link)
    expect(page.get_by_label("Method", exact=True)).to_have_value("tools/call")


def test_a_phone_has_no_sideways_scroll_and_a_viewer_link_opens_on_the_live_timeline(
        page: Page, other_context: BrowserContext, console: Console) -> None:
    page.set_viewport_size(PHONE)
    assert page_width(page) <= PHONE["width"], page_width(page)
    open_tool(page, "add")
    assert page_width(page) <= PHONE["width"], page_width(page)
    # A session whose target is one long word (a stdio command, a URL) is listed on the home page in a cell that
    # wraps: it widened the page past the phone's width.
    long_target = "http://127.0.0.1:9/" + "a" * 300
    created = page.request.post(console.url("/sessions"), form={"kind": "http", "url": long_target, "headers": ""},
                                headers={"Origin": console.base, "Accept": "application/json"})
    assert created.ok, created.text()
    page.goto(console.url("/"))
    made_id = created.json()["id"]
    row = page.locator(f'tr[data-session="{made_id}"]')
    expect(row.locator("code.session-target")).to_have_text(long_target)  # named by its start; the target whole
    expect(row.get_by_role("link")).to_be_visible()
    assert page_width(page) <= PHONE["width"], page_width(page)
    deleted = page.request.post(console.url(f"/sessions/{created.json()['id']}/delete"),
                                headers={"Origin": console.base}, max_redirects=0)
    assert deleted.status == 303, deleted.status

    page.goto(console.session_url)
    wait_live(page)
    url, link_id = create_link(page, "viewer")
    viewer = other_context.new_page()
    viewer.goto(url)
    expect(viewer).to_have_url(console.session_url)
    wait_live(viewer)
    assert page_width(viewer) <= PHONE["width"], page_width(viewer)
    timeline, server = top_of(viewer, "#timeline-pane"), top_of(viewer, ".server-panel")
    assert timeline < server and timeline < PHONE["height"], (timeline, server)
    page.set_viewport_size(DESKTOP)
    revoke(page, link_id)


@SIZES
def test_json_mode_sends_the_json_while_the_forms_required_fields_are_empty(page: Page,
                                                                            size: dict[str, int]) -> None:
    page.set_viewport_size(size)
    echo = open_tool(page, "echo")
    expect(echo.get_by_label(label("Text"))).to_have_value("")
    echo.locator("details.json-mode > summary").click()
    echo.get_by_role("checkbox", name=re.compile(r"Send the JSON below instead of the form")).check()
    echo.get_by_label("Arguments (JSON)").fill('{"text": "sent as JSON"}')
    call(page, echo, "echo")
    expect(echo.locator(".result pre.text-content")).to_have_text("sent as JSON")


def test_presenter_mode_grows_every_size_together_and_keeps_the_mcp_headers(page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    probe = ("() => ['h2', '#group-tools details.item code', '.badge', '.entry .method']"
             ".map(s => parseFloat(getComputedStyle(document.querySelector(s)).fontSize))")
    before = page.evaluate(probe)
    page.get_by_role("button", name="Presenter mode", exact=True).click()
    expect(page.locator("html")).to_have_class(re.compile(r"\bpresenter\b"))
    wait_live(page)
    after = page.evaluate(probe)
    page.get_by_role("button", name="Leave presenter mode", exact=True).click()
    expect(page.locator("html")).not_to_have_class(re.compile(r"\bpresenter\b"))
    ratios = [a / b for a, b in zip(after, before, strict=True)]
    assert all(r > 1.25 for r in ratios), (before, after)  # 15 px → 20 px root: everything grows by a third


def test_a_one_round_call_shows_its_duration_and_no_waterfall(page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    entry = call_echo(page, "one round")
    summary = entry.locator(":scope > details > summary")
    expect(summary.locator(".op-summary")).to_contain_text("1 round")
    expect(summary.locator(".dur")).to_have_text(re.compile(r"\d+(\.\d+)? (ms|s)$"))
    summary.click()
    expect(entry.locator(".round-help")).to_contain_text("A round is one request")
    expect(entry.locator(".waterfall")).to_have_count(0)


def test_a_failed_connect_offers_reconnect_and_an_editable_target_on_the_page(page: Page, console: Console) -> None:
    page.set_viewport_size(DESKTOP)
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill("http://127.0.0.1:9/mcp")
    page.get_by_role("button", name="Connect", exact=True).click()
    problem = page.get_by_role("region", name="Connection problem")
    expect(problem).to_contain_text("Could not connect", timeout=CONNECT_TIMEOUT_MS)
    expect(problem.get_by_role("button", name="Try again")).to_be_visible()  # a first try: Reconnect once it connected
    expect(problem.get_by_role("button", name="Discard this try")).to_be_visible()
    expect(page.get_by_text("Not connected yet")).to_have_count(0)
    failed = page.url
    problem.get_by_label("Server URL").fill(console.demo_url)
    problem.get_by_role("button", name="Connect to this target").click()
    wait_live(page, CONNECT_TIMEOUT_MS)
    assert page.request.get(failed + ".json").status == 404  # the new session replaced the failed try
    delete_session_on_screen(page)
    expect(page).to_have_url(console.url("/"))


def test_revoking_a_link_tells_the_open_tab_plainly_and_takes_its_actions_away(
        page: Page, other_context: BrowserContext, console: Console) -> None:
    page.set_viewport_size(DESKTOP)
    url, link_id = create_link(page, "operator")
    tab = other_context.new_page()
    tab.goto(url)
    expect(tab).to_have_url(console.session_url)
    wait_live(tab)
    expect(tab.locator(".role-banner")).to_contain_text("an operator link")
    echo = open_tool(tab, "echo")
    revoke(page, link_id)
    expect(tab.get_by_role("alert").filter(has_text="This share link was revoked")).to_be_visible()
    expect(echo.get_by_role("button", name="Call echo", exact=True)).to_be_hidden()
    response = tab.reload()
    assert response is not None and response.status == 401
    expect(tab.get_by_role("heading", name="This share link was revoked")).to_be_visible()


@pytest.mark.skipif(not os.environ.get("MCP_CONSOLE_SCREENSHOTS"),
                    reason="set MCP_CONSOLE_SCREENSHOTS=1 to refresh docs/screenshots")
def test_take_the_readme_screenshots(page: Page, other_context: BrowserContext, console: Console) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(DESKTOP)
    call_echo(page, "hello from the workbench")
    add = open_tool(page, "add")
    add.get_by_label(label("A")).fill("2")
    add.get_by_label(label("B")).fill("40")
    call(page, add, "add")
    page.screenshot(path=str(SHOTS / "workbench-1400.png"))
    page.get_by_role("button", name="Presenter mode", exact=True).click()
    wait_live(page)
    page.screenshot(path=str(SHOTS / "presenter-1400.png"))
    page.get_by_role("button", name="Leave presenter mode", exact=True).click()
    wait_live(page)
    url, link_id = create_link(page, "viewer")
    viewer = other_context.new_page()
    viewer.goto(url)
    wait_live(viewer)
    viewer.screenshot(path=str(SHOTS / "viewer-390.png"))
    revoke(page, link_id)
    page.set_viewport_size(PHONE)
    page.goto(console.session_url)
    wait_live(page)
    page.screenshot(path=str(SHOTS / "owner-390.png"))
