"""Live updates merge, never wipe; every tab that may act can answer a dialog or cancel a call (issue 10).

Two tabs on the demo session in real Chromium, at 1400×1000 and 390×844: an input request started in one tab
appears live in the other's "Awaiting your input" and is answered there; a tool-list change leaves a half-typed
dialog, an open form and a result where they were and marks the new tool; a long_job is cancelled from another
tab, after a reload, and by an operator link, while a viewer gets no Cancel and no dialogs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.browser.conftest import Console, is_loopback_url, wait_live
from tests.browser.test_live_feeds import second_tab, start_listening, stop_listening
from tests.browser.test_sharing import create_link, revoke
from tests.browser.ui import label, open_tool

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
# A property set on a DOM node survives only as long as that very node does: a swap would make a new one.
KEEP = "el => { el.__kept = true; }"
KEPT = "el => el.__kept === true"


@pytest.fixture
def link_context(browser: Browser) -> Iterator[BrowserContext]:
    """Another browser (its own cookies), for whoever was sent a share link."""
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(15_000)
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    yield context
    context.close()


def two_tabs(context: BrowserContext, page: Page, console: Console, size: dict[str, int]) -> tuple[Page, Page]:
    page.set_viewport_size(size)
    other = second_tab(context, console)
    other.set_viewport_size(size)
    return page, other


def start_op(page: Page, name: str, **fields: str) -> str:
    """Calls a tool from its form; returns the operation id of the card its POST answered with."""
    item = open_tool(page, name)
    previous = item.locator(".result .operation[data-op]")
    before = previous.get_attribute("data-op") if previous.count() else None
    for field, value in fields.items():
        item.get_by_label(label(field)).fill(value)
    item.get_by_role("button", name=f"Call {name}", exact=True).click()
    card = item.locator(".result .operation[data-op]")
    expect(card).to_have_count(1)
    if before is not None:
        expect(card).not_to_have_attribute("data-op", before)
    return card.get_attribute("data-op") or ""


def inbox_dialog(page: Page, op: str, key: str) -> Locator:
    return page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog][data-key="{key}"]')


def op_status(page: Page, console: Console, op: str) -> str:
    data = page.request.get(console.url(f"/sessions/{console.session_id}/operations/{op}.json")).json()
    return str(data["status"])


def entry_of(page: Page, op: str) -> Locator:
    return page.locator(f'#timeline-list > li.entry.op[data-op="{op}"]')


@SIZES
def test_a_dialog_started_in_one_tab_appears_live_in_another_tab_and_is_answered_there(
        context: BrowserContext, page: Page, console: Console, size: dict[str, int]) -> None:
    a, b = two_tabs(context, page, console, size)
    b.evaluate("window.__sameDocument = true")
    op = start_op(a, "profile_form")

    # One place in both tabs: the calling tab's card points there instead of owning the dialog.
    for tab in (a, b):
        expect(inbox_dialog(tab, op, "profile")).to_be_visible()
        expect(tab.get_by_role("heading", name="Awaiting your input")).to_be_visible()
    card = a.locator(f"#op-card-{op}")
    expect(card.locator("section[role=dialog]")).to_have_count(0)
    expect(card.get_by_role("link", name="Answer under “Awaiting your input”")).to_have_attribute(
        "href", f"#inbox-op-{op}")
    expect(inbox_dialog(a, op, "profile")).to_be_in_viewport()

    form = inbox_dialog(b, op, "profile")
    form.get_by_label(label("Full name")).fill("Grace Hopper")
    form.get_by_label(label("Email address")).fill("grace@example.org")
    form.get_by_role("button", name="Accept", exact=True).click()

    expect(card).to_have_attribute("data-status", "complete")
    got = json.loads(card.locator(".reply pre.text-content").inner_text())
    assert got["action"] == "accept" and got["content"]["name"] == "Grace Hopper", got
    for tab in (a, b):  # answered and ended: gone from both, heading included
        expect(tab.locator(f'#inbox .inbox-op[data-op="{op}"]')).to_have_count(0)
        expect(tab.get_by_role("heading", name="Awaiting your input")).to_be_hidden()
    assert b.evaluate("window.__sameDocument === true"), "tab B reloaded instead of updating live"


@SIZES
def test_a_tool_list_change_keeps_a_half_typed_dialog_an_open_form_and_the_callers_result_and_marks_the_new_tool(
        context: BrowserContext, page: Page, console: Console, size: dict[str, int]) -> None:
    a, b = two_tabs(context, page, console, size)
    sub = start_listening(a, tools=True)
    try:
        op = start_op(a, "profile_form")
        ask = inbox_dialog(a, op, "profile")
        name_box = ask.get_by_label(label("Full name"))
        name_box.fill("Half typ")
        name_box.evaluate(KEEP)
        echo = open_tool(a, "echo")
        echo.get_by_label(label("Text")).fill("not sent yet")
        echo.evaluate(KEEP)

        name = f"merge_{uuid.uuid4().hex[:8]}"
        adder = open_tool(b, "add_tool")
        adder.get_by_label(label("Name")).fill(name)
        adder.get_by_role("button", name="Call add_tool", exact=True).click()
        for tab in (a, b):
            added = tab.locator(f'details.item[data-tool="{name}"]')
            expect(added).to_have_count(1)
            expect(added).to_have_attribute("data-mark", "new")
            expect(added.locator("summary .list-mark")).to_have_text("new")

        # Tab A: the dialog is the same node with what was typed; the open form keeps its text.
        assert name_box.evaluate(KEPT), "the half-typed dialog was replaced by the list change"
        expect(name_box).to_have_value("Half typ")
        assert echo.evaluate(KEPT) and echo.get_attribute("open") is not None
        expect(echo.get_by_label(label("Text"))).to_have_value("not sent yet")
        # Tab B, which called add_tool: its own result survives the list change that result caused.
        result = b.locator('details.item[data-tool="add_tool"] .result .reply')
        expect(result.locator("pre.text-content")).to_contain_text(f"added tool '{name}'")
        expect(b.locator('details.item[data-tool="add_tool"]')).to_have_attribute("open", "")

        # And the dialog still answers: the operation was waiting on the server all along.
        ask.get_by_label(label("Email address")).fill("half@example.org")
        name_box.fill("Half typed")
        ask.get_by_role("button", name="Accept", exact=True).click()
        expect(a.locator(f"#op-card-{op}")).to_have_attribute("data-status", "complete")
    finally:
        stop_listening(a, sub)


@SIZES
def test_a_long_job_started_in_one_tab_is_cancelled_from_another_tab_and_from_the_same_tab_after_a_reload(
        context: BrowserContext, page: Page, console: Console, size: dict[str, int]) -> None:
    a, b = two_tabs(context, page, console, size)
    op = start_op(a, "long_job", Seconds="3600")
    entry = entry_of(b, op)
    expect(entry).to_have_attribute("data-status", "running")
    entry.get_by_role("button", name=f"Cancel operation {op}", exact=True).click()
    expect(a.locator(f"#op-card-{op}")).to_have_attribute("data-status", "cancelled")
    expect(entry).to_have_attribute("data-status", "cancelled")
    expect(entry.get_by_role("button", name=f"Cancel operation {op}")).to_have_count(0)

    again = start_op(a, "long_job", Seconds="3600")
    a.reload()
    wait_live(a)
    entry = entry_of(a, again)
    expect(entry).to_have_attribute("data-status", "running")
    entry.get_by_role("button", name=f"Cancel operation {again}", exact=True).click()
    expect(entry).to_have_attribute("data-status", "cancelled")
    assert op_status(a, console, again) == "cancelled"


def test_an_operator_link_answers_dialogs_and_cancels_while_a_viewer_gets_neither(
        page: Page, link_context: BrowserContext, browser: Browser, console: Console) -> None:
    page.set_viewport_size(DESKTOP)
    operator_url, operator_id = create_link(page, "operator")
    viewer_url, viewer_id = create_link(page, "viewer")
    operator = link_context.new_page()
    operator.goto(operator_url)
    wait_live(operator)
    viewers = browser.new_context(viewport=PHONE)
    viewers.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    try:
        viewer = viewers.new_page()
        viewer.goto(viewer_url)
        wait_live(viewer)

        job = start_op(page, "long_job", Seconds="3600")
        op = start_op(page, "profile_form")
        expect(entry_of(viewer, job)).to_have_attribute("data-status", "running")
        expect(entry_of(viewer, job).get_by_role("button", name=f"Cancel operation {job}")).to_be_hidden()
        expect(entry_of(viewer, op)).to_have_attribute("data-status", "awaiting_input")
        expect(viewer.locator("section[role=dialog]")).to_have_count(0)

        entry_of(operator, job).get_by_role("button", name=f"Cancel operation {job}", exact=True).click()
        expect(page.locator(f"#op-card-{job}")).to_have_attribute("data-status", "cancelled")
        expect(entry_of(page, job).locator(".badge.st-cancelled")).to_have_count(1)

        ask = inbox_dialog(operator, op, "profile")
        ask.get_by_role("button", name="Decline", exact=True).click()
        expect(page.locator(f"#op-card-{op}")).to_have_attribute("data-status", "complete")
        expect(viewer.locator("#inbox")).to_have_count(0)
    finally:
        viewers.close()
        revoke(page, operator_id)
        revoke(page, viewer_id)


@SIZES
def test_a_refreshed_list_marks_a_changed_tool_keeping_its_typed_value_and_result_and_marks_a_removed_one(
        page: Page, size: dict[str, int]) -> None:
    # The demo cannot change or drop a tool, so this tab is made to show an older list than the server's: echo as
    # it was before (another signature) and a tool the server no longer lists. A real push then merges into that.
    page.set_viewport_size(size)
    echo = open_tool(page, "echo")
    echo.get_by_label(label("Text")).fill("first")
    echo.get_by_role("button", name="Call echo", exact=True).click()
    expect(echo.locator(".result .operation")).to_have_attribute("data-status", "complete")
    echo.get_by_label(label("Text")).fill("typed before the change")
    page.evaluate("""() => {
        document.querySelector('details.item[data-tool="echo"]').dataset.sig = "older";
        const gone = document.querySelector('details.item[data-tool="echo"]').cloneNode(true);
        gone.id = "tool-gone"; gone.dataset.tool = "gone_tool"; gone.removeAttribute("open");
        gone.querySelectorAll("[id]").forEach(el => { el.id = "gone-" + el.id; });
        gone.querySelector(".result").replaceChildren();
        document.querySelector("#group-tools .items").appendChild(gone);
    }""")

    page.get_by_role("button", name="Refresh lists", exact=True).click()

    echo = page.locator('details.item[data-tool="echo"]')
    expect(echo).to_have_attribute("data-mark", "changed")
    expect(echo).to_have_attribute("open", "")
    expect(echo.get_by_label(label("Text"))).to_have_value("typed before the change")
    expect(echo.locator(".result .reply pre.text-content")).to_have_text("first")
    gone = page.locator("#tool-gone")
    expect(gone).to_have_attribute("data-mark", "removed")
    expect(gone.locator("summary .list-mark")).to_have_text("removed")
    expect(gone.locator("form.call-form button[type=submit]")).to_be_disabled()  # closed: not in the a11y tree
    # The new echo is live: it calls again, into the result box it kept.
    echo.get_by_role("button", name="Call echo", exact=True).click()
    expect(echo.locator(".result .reply pre.text-content")).to_have_text("typed before the change")
