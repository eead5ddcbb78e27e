"""Hostile forms and active content in real Chromium: a target's names cannot take over the page's own parts,
and nothing it sends runs, opens or loads."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, is_loopback_url, open_launch_url
from tests.browser.test_sharing import create_link
from tests.browser.ui import label, open_tool
from tests.hostile.tools_text import IMG

if TYPE_CHECKING:
    from collections.abc import Callable


def connect(context: BrowserContext, console: Console, url: str) -> tuple[Page, list[str], list[str]]:
    """A tab on a new session with the hostile target; the dialogs it raised and the requests it made leave."""
    page = context.new_page()
    dialogs: list[str] = []
    leaving: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: None if is_loopback_url(r.url) else leaving.append(r.url))
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=CONNECT_TIMEOUT_MS)
    return page, dialogs, leaving


def test_a_tool_argument_named_result_does_not_swallow_the_tools_result(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms", "basic"))
    tool = open_tool(page, "named_result")
    tool.get_by_label(label("result")).fill("typed")
    tool.get_by_role("button", name="Call named_result", exact=True).click()
    expect(tool.locator(".result pre.text-content")).to_have_text("named_result answered")
    expect(page.locator("input .operation, input *")).to_have_count(0)


def test_a_field_named_like_a_siblings_help_does_not_take_its_id(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms", "basic"))
    tool = open_tool(page, "named_result")
    ids = tool.locator("[id]").evaluate_all("els => els.map(e => e.id)")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    expect(tool.get_by_label("Arguments (JSON)")).to_have_attribute("name", "json")
    expect(tool.get_by_label("Log level for this call")).to_have_attribute("name", "log_level")


def test_a_prompt_argument_named_result_does_not_swallow_the_prompts_answer(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms", "basic"))
    prompt = page.locator('details.item[data-prompt="clash"]')
    prompt.locator(":scope > summary").click()
    prompt.get_by_label("result").fill("typed")
    prompt.get_by_role("button", name="Get prompt clash", exact=True).click()
    expect(prompt.locator(".result")).to_contain_text("prompt answered")


def test_a_schema_nested_a_thousand_deep_leaves_the_tool_usable(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("forms", "basic"))
    tool = open_tool(page, "deep_schema")
    tool.get_by_role("button", name="Call deep_schema", exact=True).click()
    expect(tool.locator(".result")).to_contain_text("deep answered")


def test_embedded_html_svg_script_and_javascript_links_in_a_result_do_not_run(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, dialogs, leaving = connect(context, console, hostile_http("forms", "basic"))
    tool = open_tool(page, "active_content")
    tool.get_by_role("button", name="Call active_content", exact=True).click()
    result = tool.locator(".result")
    expect(result).to_contain_text("active answered")
    expect(result.locator("script, iframe, object, embed, svg, a[href^='javascript:' i]")).to_have_count(0)
    for link in result.locator("a[href]").all():
        link.click(modifiers=["Alt"], no_wait_after=True)
    assert page.evaluate("window.__pwned") is None
    assert dialogs == [] and leaving == []


def test_url_requests_for_javascript_and_data_urls_are_never_links_nor_opened(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, dialogs, leaving = connect(context, console, hostile_http("forms", "basic"))
    popups: list[str] = []
    page.on("popup", lambda p: popups.append(p.url))
    tool = open_tool(page, "ask_url")
    tool.get_by_role("button", name="Call ask_url", exact=True).click()
    dialogs_shown = page.locator("section.dialog.kind-url")
    expect(dialogs_shown).to_have_count(3)
    expect(dialogs_shown.locator("a[href]")).to_have_count(1)  # the https one, to the host it highlights
    expect(dialogs_shown.locator("a[href]")).to_have_attribute("href", re.compile(r"^https://evil\.example/"))
    # A bidi override in a message or URL is shown as ⟨U+202E⟩, never obeyed (it would read "bank.com").
    inbox = page.locator("#inbox")
    expect(inbox.locator("section.dialog .dialog-message", has_text="Sign in at")).to_contain_text("⟨U+202E⟩")
    expect(inbox.locator("section.dialog .dialog-message", has_text="Pay")).to_contain_text("⟨U+202E⟩")
    expect(inbox.locator(".url-display", has_text="evil.example")).to_contain_text("⟨U+202E⟩")
    shown = inbox.evaluate("el => el.innerText")
    assert "\u202e" not in shown, "a bidi override reached the dialogs' text as a character"
    expect(dialogs_shown.locator("b")).to_have_count(0)
    assert popups == [] and dialogs == [] and leaving == []


def test_a_viewer_link_on_a_hostile_session_in_presenter_mode_runs_nothing_and_loads_nothing_outside(
        context: BrowserContext, browser: Browser, console: Console, hostile_http: Callable[..., str]) -> None:
    page, dialogs, leaving = connect(context, console, hostile_http("forms", "text", name=f"<b>x</b>{IMG}"))
    for name in ("markup", "active_content", "ask_url"):
        tool = open_tool(page, name)
        tool.get_by_role("button", name=f"Call {name}", exact=True).click()
        expect(tool.locator(".result .operation")).to_have_count(1)
    url, _ = create_link(page, "viewer")
    session_url = page.url

    other = browser.new_context()
    try:
        other.route(lambda u: not is_loopback_url(u), lambda route: route.abort())
        viewer = other.new_page()
        viewer.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        viewer.on("request", lambda r: None if is_loopback_url(r.url) else leaving.append(r.url))
        viewer.on("popup", lambda p: leaving.append(p.url))
        viewer.goto(url)
        expect(viewer).to_have_url(session_url)
        expect(viewer.locator("body")).to_have_class(re.compile(r"\brole-viewer\b"))
        viewer.get_by_role("button", name="Presenter mode", exact=True).click()
        for name in ("named_result", "active_content"):
            viewer.locator(f'details.item[data-tool="{name}"] > summary').click()
            expect(viewer.locator(f'details.item[data-tool="{name}"] .lazy-body form')).to_have_count(1)
        entries = viewer.locator("#timeline-list > li.entry > details")
        for n in range(min(entries.count(), 8)):  # the wire frames as they came, markup and all
            entries.nth(n).locator(":scope > summary").click()
        expect(viewer.locator("#timeline-list .lazy-body pre").first).to_be_attached()
        expect(viewer.locator("main script, main iframe, main object, main embed, main svg, main b, "
                              "main img[src='x'], main a[href^='javascript:' i], main a[href^='data:' i]")
               ).to_have_count(0)
        expect(viewer.locator("section.dialog")).to_have_count(0)  # a viewer answers nothing
        assert viewer.evaluate("window.__pwned") is None
    finally:
        other.close()
    assert dialogs == [] and leaving == [], (dialogs, leaving)
