"""What a server declares for its tools, resources, templates and prompts, in real Chromium: shown, escaped, never
obeyed; the Ping button; a result that breaks its outputSchema; and a failed session's lists."""

from __future__ import annotations

import re
import shlex
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, ROOT, Console
from tests.browser.test_console_ui import call
from tests.browser.test_hostile_forms import connect
from tests.browser.test_live_feeds import RenderedWhileConnecting, delete_session
from tests.browser.ui import open_tool

if TYPE_CHECKING:
    from collections.abc import Callable


def test_a_tool_row_shows_its_description_and_declared_hints_while_closed(page: Page) -> None:
    echo = page.locator('details.item[data-tool="echo"]')
    expect(echo).not_to_have_attribute("open", "")
    first = echo.locator(":scope > summary .first-line")
    expect(first).to_be_visible()
    expect(first).not_to_be_empty()
    badge = echo.locator(":scope > summary .badge.hint", has_text="read-only")
    expect(badge).to_be_visible()
    expect(badge).to_have_attribute("title", "readOnlyHint: The tool does not modify its environment.")
    open_tool(page, "echo")
    expect(first).to_be_hidden()  # open, the body has the whole description instead
    expect(echo.locator("p.description")).to_be_visible()
    hints = echo.get_by_role("table", name="Behaviour hints (annotations)")
    expect(hints.get_by_role("row")).to_have_count(5)
    destructive = hints.get_by_role("row", name=re.compile("destructiveHint"))
    expect(destructive).to_contain_text("default")
    expect(destructive).to_contain_text("Does not apply: the tool is read-only.")


def test_every_declared_field_of_a_hostile_target_is_shown_and_none_of_its_markup_runs(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, dialogs, leaving = connect(context, console, hostile_http("details"))
    row = page.locator('details.item[data-tool="every_field"]')
    summary = row.locator(":scope > summary")
    expect(summary.locator(".title")).to_have_text(re.compile(r"^Every field <b>bold</b><script>"))
    expect(summary.locator(".first-line")).to_have_text(re.compile(r"^First line of the description <b>"))
    for label in ("may modify", "additive", "idempotent", "closed world"):
        expect(summary.locator(".badge.hint", has_text=re.compile(f"^{label}$"))).to_be_visible()
    open_tool(page, "every_field")
    icons = row.locator("img.icon")
    expect(icons).to_have_count(1)  # the PNG; the SVG, https: and javascript: icons are named, not drawn
    assert icons.evaluate("img => img.complete && img.naturalWidth") == 1
    expect(row.locator("ul.icons li")).to_have_count(4)
    expect(row.locator(".app-ui code.app-ui-uri")).to_have_text("ui://every/<b>bold</b><script>window.__pwned=1</script>")
    expect(row.locator(".app-ui a")).to_have_count(0)
    schema = row.locator("details.output-schema")
    expect(schema.locator("pre")).to_be_hidden()
    schema.locator(":scope > summary").click()
    expect(schema.locator("pre")).to_contain_text('"a count <b>bold</b>')
    expect(row.locator(".declared .badge.task")).to_have_text("task optional")

    resource = page.locator("#group-resources .item details.item-more")
    resource.locator(":scope > summary").click()
    audience = resource.get_by_role("row", name=re.compile("audience"))
    expect(audience).to_contain_text("user, assistant<b>bold</b>")
    prompt = page.locator('details.item[data-prompt="every_prompt"]')
    expect(prompt.locator(":scope > summary .first-line")).to_have_text(re.compile(r"^First prompt line <b>"))
    prompt.locator(":scope > summary").click()
    prompt.locator("details.item-more > summary").click()
    args = prompt.get_by_role("table", name="Arguments")
    expect(args.get_by_role("row", name=re.compile("topic"))).to_contain_text("required")
    expect(args.get_by_role("row", name=re.compile("tone"))).to_contain_text("optional")
    expect(page.locator("#lists b, #lists script, #lists img:not(.icon)")).to_have_count(0)
    assert page.evaluate("window.__pwned === undefined")
    assert dialogs == [] and leaving == []


def test_a_result_without_its_structured_content_says_so_and_its_entry_carries_the_finding(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    page, _, _ = connect(context, console, hostile_http("details"))
    tool = open_tool(page, "no_structured")
    entry = call(page, tool, "no_structured")
    expect(tool.locator(".result .alert.error")).to_have_text(
        "tools.structured-content The tool declares an outputSchema but sent no structuredContent.")
    expect(entry.locator(".findings-badge")).to_have_text("⚑ 1")


def test_ping_shows_its_round_trip_and_is_on_the_timeline(page: Page) -> None:
    page.get_by_role("button", name="Ping", exact=True).click()
    answer = page.locator("#ping-result .ping-answer.ok")
    expect(answer).to_contain_text(re.compile(r"server/discover answered in \d"))
    key = answer.get_attribute("data-entry")
    entry = page.locator(f"#timeline-list > li.entry#e-{key}")
    expect(entry).to_have_attribute("data-method", "server/discover")
    expect(entry).to_have_attribute("data-status", "ok")


def test_a_session_that_fails_while_its_page_is_open_stops_saying_connecting(page: Page, console: Console) -> None:
    page.goto(console.url("/"))
    # A stdio server that exits after a second: the session page is always rendered before it fails.
    command = "sh -c " + shlex.quote(f"sleep 1; exec {shlex.quote(sys.executable)} -c 'raise SystemExit(3)'")
    page.get_by_label("Command to start the server").fill(command)
    page.get_by_label("Working directory (optional)").fill(str(ROOT))
    with page.expect_response(lambda r: r.request.method == "GET" and "/sessions/" in r.url) as first:
        page.get_by_role("button", name="Start and connect", exact=True).click()
    if 'data-status="connecting"' not in first.value.text():
        raise RenderedWhileConnecting("the session page was rendered after the session had failed")
    try:
        expect(page.locator("#tools-note")).to_have_text("Connecting…")
        expect(page.locator("#session-status")).to_have_attribute("data-status", "failed", timeout=CONNECT_TIMEOUT_MS)
        for what in ("tools", "resources", "prompts"):
            expect(page.locator(f"#{what}-note")).to_have_text(f"No {what}: the session is failed (see above).")
        expect(page.locator("#lists")).not_to_contain_text("Connecting…")
    finally:
        with suppress(Exception):
            delete_session(page)
