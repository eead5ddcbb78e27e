"""Live updates merge, never wipe; every tab that may act can answer a dialog or cancel a call (issue 10).

Two tabs on the demo session in real Chromium, at 1400×1000 and 390×844: an input request started in one tab
appears live in the other's "Awaiting your input" and is answered there; a tool-list change leaves a half-typed
dialog, an open form and a result where they were and marks the new tool; a long_job is cancelled from another
tab, after a reload, and by an operator link, while a viewer gets no Cancel and no dialogs.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, WebSocketRoute, expect

from tests.browser.conftest import Console, is_loopback_url, wait_live, wait_until
from tests.browser.test_live_feeds import open_subscriptions, running_card, second_tab, start_listening, stop_listening
from tests.browser.test_mrtr_dialogs import (
    call_tool,
    dialog,
    op_json,
    open_client_settings,
    own_tab,
    press,
    session_id,
    settle,
    track,
)
from tests.browser.test_sharing import create_link, open_as_viewer, revoke
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


# -- Several tabs on one session, attacked: what one tab has typed and not sent survives what another tab pushes, and
# a save from a form shown before another tab's save is refused rather than undoing it.
#
# Two owner tabs on a new session on the demo server in real Chromium; one types into the client settings (roots,
# the capabilities JSON) and the other saves capabilities or roots, which every tab is pushed. A tab whose live feed
# lags (its pushes held back) presses Abandon on a round another tab has already answered, or Cancel and Enable and
# retry on an operation another tab has already cancelled or retried.

__all__ = ["own_tab"]  # the fixture, used by name

ROOTS_LABEL = "Roots (one file://URI optional name per line)"


@pytest.fixture
def other(context: BrowserContext, own_tab: Page, console: Console) -> Iterator[Page]:
    tab = second_tab(context, console, own_tab.url)
    yield tab
    tab.close()


def test_roots_typed_in_one_tab_survive_capabilities_saved_in_another(own_tab: Page, other: Page) -> None:
    typed = "file:///home/ada/half-typed"
    settings = open_client_settings(own_tab)
    roots = settings.get_by_label(ROOTS_LABEL, exact=True)
    roots.fill(typed)
    seq = own_tab.locator("#ws-seq").get_attribute("data-seq")

    theirs = open_client_settings(other)
    theirs.get_by_label("sampling", exact=True).uncheck()
    theirs.get_by_role("button", name="Save capabilities", exact=True).click()
    expect(theirs.locator("p[role=status]")).to_have_text("Saved.")

    # The push has reached this tab (its sequence moved and the checkbox follows the other tab's save)…
    expect(own_tab.locator("#ws-seq")).not_to_have_attribute("data-seq", seq or "")
    expect(settings.get_by_label("sampling", exact=True)).not_to_be_checked()
    # …and what was typed here and never sent is still here.
    expect(roots).to_have_value(typed)


def test_a_capabilities_json_being_edited_survives_roots_saved_in_another_tab(
        own_tab: Page, other: Page, console: Console) -> None:
    settings = open_client_settings(own_tab)
    settings.locator("details.caps-editor > summary").click()
    editor = settings.get_by_label("Client capabilities (JSON)", exact=True)
    editor.fill('{"elicitation": {"form": {}}, "experimental": {"half": {}')

    theirs = open_client_settings(other)
    theirs.get_by_label(ROOTS_LABEL, exact=True).fill("file:///srv/from-the-other-tab")
    theirs.get_by_role("button", name="Save roots", exact=True).click()
    expect(theirs.locator("p[role=status]")).to_have_text("Saved.")

    expect(own_tab.locator("#client-settings .link-only")).to_contain_text("from-the-other-tab")
    expect(editor).to_have_value('{"elicitation": {"form": {}}, "experimental": {"half": {}')
    saved = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}.json")).json()
    assert saved["roots"] == [{"uri": "file:///srv/from-the-other-tab"}]


def test_a_subscription_being_set_up_in_one_tab_survives_lists_refreshed_from_another(
        own_tab: Page, other: Page) -> None:
    panel = open_subscriptions(own_tab)
    form = panel.get_by_role("form", name="Start a subscription")
    form.get_by_label("tool list changes", exact=True).uncheck()
    uris = form.get_by_label("Other URIs (one per line)", exact=True)
    uris.fill("demo://half/typed")
    # This tab is made to show an older echo, so the refreshed list visibly reaches it (marked "changed").
    own_tab.evaluate("() => { document.querySelector('details.item[data-tool=\"echo\"]').dataset.sig = 'older'; }")

    other.get_by_role("button", name="Refresh lists", exact=True).click()

    expect(own_tab.locator('details.item[data-tool="echo"]')).to_have_attribute("data-mark", "changed")
    expect(uris).to_have_value("demo://half/typed")
    expect(form.get_by_label("tool list changes", exact=True)).not_to_be_checked()


def test_capabilities_saved_from_a_form_shown_before_another_tabs_save_do_not_undo_that_save(
        own_tab: Page, other: Page, console: Console) -> None:
    mine = open_client_settings(own_tab)
    mine.get_by_label("sampling", exact=True).uncheck()  # being changed here, not sent yet

    theirs = open_client_settings(other)
    theirs.get_by_label("elicitation: url", exact=True).uncheck()
    theirs.get_by_role("button", name="Save capabilities", exact=True).click()
    expect(theirs.locator("p[role=status]")).to_have_text("Saved.")
    expect(own_tab.locator("#client-settings .link-only")).to_be_attached()  # the push has come and gone

    mine.get_by_role("button", name="Save capabilities", exact=True).click()
    expect(own_tab.locator("#client-settings p[role=alert]")).to_contain_text("changed in another tab")
    caps = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}.json")).json()["client_capabilities"]
    assert "url" not in caps.get("elicitation", {}), caps  # the other tab's save stands
    assert "sampling" in caps, caps  # and nothing of this tab's stale form was applied


def test_roots_saved_from_a_form_shown_before_another_tabs_save_do_not_undo_that_save(
        own_tab: Page, other: Page, console: Console) -> None:
    mine = open_client_settings(own_tab)
    mine.get_by_label(ROOTS_LABEL, exact=True).fill("file:///mine")

    theirs = open_client_settings(other)
    theirs.get_by_label(ROOTS_LABEL, exact=True).fill("file:///theirs")
    theirs.get_by_role("button", name="Save roots", exact=True).click()
    expect(theirs.locator("p[role=status]")).to_have_text("Saved.")
    expect(own_tab.locator("#client-settings .link-only")).to_contain_text("file:///theirs")

    mine.get_by_role("button", name="Save roots", exact=True).click()
    expect(own_tab.locator("#client-settings p[role=alert]")).to_contain_text("changed in another tab")
    # Refused, what was typed is still there to save again.
    expect(own_tab.locator("#client-settings").get_by_label(ROOTS_LABEL, exact=True)).to_have_value("file:///mine")
    roots = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}.json")).json()["roots"]
    assert roots == [{"uri": "file:///theirs"}], roots


@pytest.fixture
def viewer_context(browser: Browser) -> Iterator[BrowserContext]:
    """A second browser (its own cookies), for whoever was sent a link."""
    context = browser.new_context()
    context.set_default_timeout(15_000)
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    yield context
    context.close()


def test_a_viewer_who_shows_a_hidden_button_in_devtools_and_presses_it_is_told_plainly_it_is_refused(
        page: Page, viewer_context: BrowserContext, console: Console) -> None:
    url, link_id = create_link(page, "viewer")
    viewer = viewer_context.new_page()
    open_as_viewer(viewer, console, url)
    refreshes = page.locator('#timeline-list > li.entry[data-method="tools/list"]')
    before = refreshes.count()
    # What devtools would do: drop the class that hides every action from a viewer.
    viewer.evaluate("() => document.body.classList.remove('role-viewer')")
    viewer.get_by_role("button", name="Refresh lists", exact=True).click()
    expect(viewer.get_by_role("alert").filter(has_text="read-only")).to_be_visible()
    expect(refreshes).to_have_count(before)
    revoke(page, link_id)


def _target_typed_then_roots_pushed(context: BrowserContext, page: Page, console: Console,
                                    type_in: Callable[[Locator], None], roots: str) -> Locator:
    """A failed connect's target form, typed in by `type_in` once the page is live; then another tab saves roots
    and the session head is pushed here. Returns the form's URL field after the push (the session is deleted)."""
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill("http://127.0.0.1:9/mcp")
    page.get_by_role("button", name="Connect", exact=True).click()
    problem = page.get_by_role("region", name="Connection problem")
    expect(problem).to_contain_text("Could not connect", timeout=30_000)
    expect(page.locator("body")).to_have_attribute("data-ws", "open")
    type_in(problem.get_by_label("Server URL"))
    seq = page.locator("#ws-seq").get_attribute("data-seq")

    other = context.new_page()
    other.goto(page.url)
    theirs = open_client_settings(other)
    theirs.get_by_label(ROOTS_LABEL, exact=True).fill(roots)
    theirs.get_by_role("button", name="Save roots", exact=True).click()
    expect(theirs.locator("p[role=status]")).to_have_text("Saved.")
    other.close()

    expect(page.locator("#ws-seq")).not_to_have_attribute("data-seq", seq or "")  # the push came here
    return page.get_by_role("region", name="Connection problem").get_by_label("Server URL")


def _delete_shown_session(page: Page, console: Console) -> None:
    sid = page.url.rsplit("/", 1)[-1]
    deleted = page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base},
                                max_redirects=0)
    assert deleted.status == 303, deleted.status


def test_a_target_being_edited_after_a_failed_connect_survives_roots_saved_in_another_tab(
        context: BrowserContext, page: Page, console: Console) -> None:
    field = _target_typed_then_roots_pushed(context, page, console,
                                            lambda f: f.fill("http://127.0.0.1:9/half-typed"),
                                            "file:///srv/from-the-other-tab")
    expect(field).to_have_value("http://127.0.0.1:9/half-typed")
    _delete_shown_session(page, console)


def test_a_target_typed_before_the_pages_script_ran_survives_a_push_from_another_tab(
        context: BrowserContext, page: Page, console: Console) -> None:
    # Typed while the page was still loading (its deferred scripts not yet run), the field changed with no input
    # event for the script to see: the next push of the session head put the target back as it was.
    field = _target_typed_then_roots_pushed(
        context, page, console, lambda f: f.evaluate("el => { el.value = 'http://127.0.0.1:9/typed-early'; }"),
        "file:///srv/pushed-while-typed")
    expect(field).to_have_value("http://127.0.0.1:9/typed-early")
    _delete_shown_session(page, console)


def test_capabilities_json_refused_as_not_json_stays_in_the_editor_as_typed(own_tab: Page) -> None:
    settings = open_client_settings(own_tab)
    settings.locator("details.caps-editor > summary").click()
    settings.get_by_label("Client capabilities (JSON)", exact=True).fill('{"sampling": {}, "roots": ')
    settings.get_by_role("button", name="Save capabilities JSON", exact=True).click()
    expect(own_tab.locator("#client-settings p[role=alert]")).to_contain_text("Not valid JSON")
    editor = own_tab.locator("#client-settings").get_by_label("Client capabilities (JSON)", exact=True)
    expect(editor).to_be_visible()
    expect(editor).to_have_value('{"sampling": {}, "roots": ')


class LaggingFeed:
    """A tab's websocket with the console's pushes held back while `holding`, then let through in order: a tab that
    still shows what it was last pushed."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[str | bytes] = []
        self.page_side: WebSocketRoute | None = None

    def route(self, ws: WebSocketRoute) -> None:
        self.page_side = ws
        server = ws.connect_to_server()  # what the page sends still goes straight through
        server.on_message(self.from_console)

    def from_console(self, message: str | bytes) -> None:
        if self.holding:
            self.held.append(message)
        elif self.page_side is not None:
            self.page_side.send(message)

    def release(self) -> None:
        self.holding = False
        assert self.page_side is not None
        for message in self.held:
            self.page_side.send(message)
        self.held.clear()


def test_abandon_pressed_in_a_tab_still_showing_round_1_after_another_tab_answered_it_abandons_nothing(
        context: BrowserContext, own_tab: Page, console: Console) -> None:
    feed = LaggingFeed()
    mine = context.new_page()
    mine.route_web_socket(re.compile(r"/ws$"), feed.route)
    mine.goto(own_tab.url)
    wait_live(mine)
    track(mine)
    card = settle(own_tab, call_tool(own_tab, "always_more"), "awaiting_input")
    op = card.get_attribute("data-op")
    abandon = mine.locator(f"#inbox-op-{op}").get_by_role("button", name=f"Abandon operation {op} (send nothing)",
                                                           exact=True)
    expect(abandon).to_be_visible()  # round 1 has reached this tab

    feed.holding = True
    press(own_tab, dialog(card, "more_1"), "Decline")  # the other tab answers; the server asks round 2
    expect(dialog(card, "more_2")).to_have_count(1)
    abandon.click()  # this tab still shows round 1

    expect(mine.locator("#action-problems [role=alert]")).to_contain_text("nothing was abandoned")
    data = op_json(own_tab, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 2, data

    feed.release()  # the pushes arrive: this tab shows round 2, and Abandon there gives it up
    expect(mine.locator('#inbox section[role=dialog][data-key="more_2"]')).to_have_count(1)
    abandon.click()
    settle(own_tab, card, "abandoned")
    expect(mine.locator(f"#inbox-op-{op}")).to_have_count(0)
    expect(mine.locator("#action-problems [role=alert]")).to_have_count(0)  # the refusal is not left standing
    mine.close()


def test_abandon_on_an_operations_card_gives_it_up_and_the_pushed_card_says_so(own_tab: Page, console: Console) -> None:
    card = settle(own_tab, call_tool(own_tab, "always_more"), "awaiting_input")

    card.get_by_role("button", name="Abandon this operation (send nothing)", exact=True).click()

    settle(own_tab, card, "abandoned")
    expect(card.get_by_role("alert")).to_contain_text("Abandoned by the user")
    assert op_json(own_tab, console, card)["status"] == "abandoned"


def lagging_tab(context: BrowserContext, url: str) -> tuple[Page, LaggingFeed]:
    """Another live tab on the session at `url`, whose pushes the test can hold back."""
    feed = LaggingFeed()
    tab = context.new_page()
    tab.route_web_socket(re.compile(r"/ws$"), feed.route)
    tab.goto(url)
    wait_live(tab)
    return track(tab), feed


def post_from_another_tab(page: Page, console: Console, op: str | None, action: str) -> None:
    response = page.request.post(console.url(f"/sessions/{session_id(page)}/operations/{op}/{action}"),
                                 headers={"Origin": console.base})
    assert response.ok, (response.status, response.text())


def test_cancel_pressed_on_a_card_still_showing_an_operation_another_tab_cancelled_says_so_beside_the_button(
        context: BrowserContext, own_tab: Page, console: Console) -> None:
    mine, feed = lagging_tab(context, own_tab.url)
    card = running_card(mine, "long_job", Seconds="30")
    op = card.get_attribute("data-op")
    # Cancel can only reach a request that has gone out: wait until the round has its JSON-RPC id.
    assert wait_until(lambda: op_json(mine, console, card)["rounds"][0]["request_id"] != "", 10), "never sent"

    feed.holding = True
    post_from_another_tab(mine, console, op, "cancel")
    cancel = card.get_by_role("button", name="Cancel", exact=True)
    cancel.click()  # this tab still shows it running

    refusal = card.locator("button + .action-problem[role=alert]")
    expect(refusal).to_contain_text("Nothing was cancelled")
    expect(refusal).to_contain_text("is cancelled, not running")
    expect(card).to_have_attribute("data-status", "running")  # the card stays; only its push may change it
    assert op_json(mine, console, card)["status"] == "cancelled"

    feed.release()
    expect(card).to_have_attribute("data-status", "cancelled")
    expect(mine.locator(".action-problem")).to_have_count(0)  # gone with the card it was said on
    mine.close()


def test_enable_and_retry_pressed_on_a_card_another_tab_already_retried_sends_nothing_and_says_so_beside_it(
        context: BrowserContext, own_tab: Page, console: Console) -> None:
    saved = own_tab.request.post(console.url(f"/sessions/{session_id(own_tab)}/capabilities"),
                                 form={"mode": "json", "caps_json": "{}"}, headers={"Origin": console.base})
    assert saved.ok, saved.status
    mine, feed = lagging_tab(context, own_tab.url)
    card = settle(mine, call_tool(mine, "profile_form"), "error")
    op = card.get_attribute("data-op")
    retry = card.get_by_role("button", name="Enable and retry", exact=True)
    expect(retry).to_be_visible()

    feed.holding = True
    post_from_another_tab(mine, console, op, "enable-and-retry")  # round 2 now asks for the profile
    retry.click()

    refusal = card.locator("button + .action-problem[role=alert]")
    expect(refusal).to_contain_text("nothing was sent")
    expect(refusal).to_contain_text("No client capability is asked for")
    expect(retry).to_be_visible()  # the card was not swapped for the bare error
    data = op_json(mine, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 2, data  # no third tools/call

    feed.release()
    settle(mine, card, "awaiting_input")
    expect(mine.locator(".action-problem")).to_have_count(0)
    mine.close()
