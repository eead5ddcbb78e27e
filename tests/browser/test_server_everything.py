"""The real @modelcontextprotocol/server-everything in real Chromium: its requests answered in the inbox dialogs.

Elicitation, sampling and roots (requests from a 2025-11-25 server) open the same "Awaiting your input" dialogs
as MRTR; a long operation shows progress and is cancelled from its card; a resource subscription receives the
server's updates. Skips when the npm package is not installed (scripts/test.sh installs it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, wait_live
from tests.browser.ui import label, open_client_settings, open_tool
from tests.everything.fixtures import ROOT, everything_argv, everything_url, needs_everything

pytestmark = [pytest.mark.browser, needs_everything, pytest.mark.slow]
__all__ = ["everything_url"]
SLOW_MS = 60_000  # node on a busy 2-core machine
UPDATED_URI = "demo://resource/dynamic/text/1"


def open_session(page: Page, console: Console, form: dict[str, str]) -> str:
    headers = {"Accept": "application/json", "Origin": console.base}
    made = page.request.post(console.url("/sessions"), form=form, headers=headers)
    assert made.ok, made.text()
    sid = str(made.json()["id"])
    page.goto(console.url(f"/sessions/{sid}"))
    wait_live(page, SLOW_MS)
    expect(page.locator(".era[data-era]")).to_have_attribute("data-era", "legacy")
    return sid


@pytest.fixture
def stdio_session(page: Page, console: Console) -> Iterator[str]:
    sid = open_session(page, console, {"kind": "stdio", "command": shlex.join(everything_argv("stdio")),
                                       "cwd": str(ROOT)})
    yield sid
    page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base}, max_redirects=0)


@pytest.fixture(params=["stdio", "http"])
def any_session(request: pytest.FixtureRequest, page: Page, console: Console) -> Iterator[str]:
    if request.param == "stdio":
        form = {"kind": "stdio", "command": shlex.join(everything_argv("stdio")), "cwd": str(ROOT)}
    else:
        form = {"kind": "http", "url": request.getfixturevalue("everything_url"), "headers": ""}
    sid = open_session(page, console, form)
    yield sid
    page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base}, max_redirects=0)


def test_server_everything_elicitation_is_answered_in_the_inbox_and_the_tool_reports_the_answer(
        page: Page, any_session: str) -> None:
    item = open_tool(page, "trigger-elicitation-request")
    item.get_by_role("button", name="Call trigger-elicitation-request", exact=True).click()
    dialog = page.locator("#inbox .inbox-sr section[role=dialog]")
    expect(dialog).to_have_attribute("data-kind", "form", timeout=SLOW_MS)
    expect(dialog).to_contain_text("Please provide inputs")
    dialog.get_by_role("button", name="Fill with defaults").click()
    dialog.get_by_label(label("String")).first.fill("Ada Lovelace")
    dialog.get_by_role("button", name="Accept", exact=True).click()
    expect(page.locator("#inbox .inbox-sr")).to_have_count(0)
    expect(item.locator(".result")).to_contain_text("Ada Lovelace", timeout=SLOW_MS)
    call = page.locator('#timeline-list > li.entry[data-method="tools/call"]').first
    expect(call).to_have_attribute("data-status", re.compile(r"^(ok|complete)$"))
    call.locator(":scope > details > summary").click()  # the entry's body (its nested requests) loads on open
    nested = call.locator("li.server-request", has_text="elicitation/create")
    expect(nested).to_have_attribute("data-status", "answered")


def test_server_everything_sampling_is_answered_by_a_person_and_the_tool_returns_the_reply(
        page: Page, stdio_session: str) -> None:
    item = open_tool(page, "trigger-sampling-request")
    item.get_by_label(label("prompt")).fill("Write a haiku")
    item.get_by_role("button", name="Call trigger-sampling-request", exact=True).click()
    dialog = page.locator("#inbox .inbox-sr section[role=dialog]")
    expect(dialog).to_have_attribute("data-kind", "sampling", timeout=SLOW_MS)
    expect(dialog).to_contain_text("Write a haiku")
    dialog.get_by_label("Assistant reply").fill("An old silent pond")
    dialog.get_by_role("button", name="Send reply").click()
    expect(page.locator("#inbox .inbox-sr")).to_have_count(0)
    expect(item.locator(".result")).to_contain_text("An old silent pond", timeout=SLOW_MS)


def test_server_everything_reads_back_the_roots_the_owner_set_and_the_timeline_shows_each_exchange(
        page: Page, stdio_session: str) -> None:
    # Roots are the owner's standing answer (client settings): none until set. Saving them sends
    # notifications/roots/list_changed; server-everything asks again, outside any request, and the console
    # answers from the session's list without a dialog. Each step is a line on the timeline.
    settings = open_client_settings(page)
    settings.get_by_label("Roots (one file://URI optional name per line)", exact=True).fill(
        "file:///home/ada/engine Engine notes\n")
    settings.get_by_role("button", name="Save roots", exact=True).click()
    timeline = page.locator("#timeline-list")
    expect(timeline).to_contain_text("sent notifications/roots/list_changed", timeout=SLOW_MS)
    expect(timeline).to_contain_text("answered at once with 1 root: file:///home/ada/engine", timeout=SLOW_MS)
    item = open_tool(page, "get-roots-list")
    item.get_by_role("button", name="Call get-roots-list", exact=True).click()
    result = item.locator(".result")
    expect(result).to_contain_text("Current MCP Roots (1 total)", timeout=SLOW_MS)
    expect(result).to_contain_text("file:///home/ada/engine")


def test_a_long_server_everything_operation_shows_progress_and_cancel_ends_it(
        page: Page, stdio_session: str) -> None:
    item = open_tool(page, "trigger-long-running-operation")
    item.get_by_label(label("duration")).fill("60")
    item.get_by_label(label("steps")).fill("60")
    item.get_by_role("button", name="Call trigger-long-running-operation", exact=True).click()
    card = item.locator(".result .operation[data-op]")
    entry = page.locator("#timeline-list > li.entry", has_text="trigger-long-running-operation").first
    expect(entry.locator(".progress, [data-progress], progress").first).to_be_visible(timeout=SLOW_MS)
    card.get_by_role("button", name="Cancel", exact=True).click()
    expect(item.locator(".result")).to_contain_text("cancel", timeout=SLOW_MS)
    expect(entry).to_have_attribute("data-status", re.compile("cancel"), timeout=SLOW_MS)


def test_a_server_everything_resource_subscription_receives_its_updates(page: Page, stdio_session: str) -> None:
    drawer = page.locator("#subscriptions details.drawer")
    drawer.locator(":scope > summary").click()
    form = page.locator("#subscribe-form")
    expect(form.locator("#subscribe-era")).to_contain_text("No subscriptions/listen")
    form.get_by_label("Other URIs (one per line)").fill(UPDATED_URI)
    form.get_by_role("button", name="Start listening").click()
    sub = page.locator("#subscription-list .subscription").first
    expect(sub).to_have_attribute("data-state", "active", timeout=SLOW_MS)
    item = open_tool(page, "toggle-subscriber-updates")
    item.get_by_role("button", name="Call toggle-subscriber-updates", exact=True).click()
    expect(sub.locator(".notifications li").first).to_contain_text("notifications/resources/updated",
                                                                   timeout=CONNECT_TIMEOUT_MS)
    expect(sub.locator(".notifications li").first).to_contain_text(UPDATED_URI)
