"""Sharing in real Chromium: a viewer link in another browser, revoking it, and presenter mode hiding secrets."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, wait_live
from tests.browser.test_console_ui import call, call_echo, header_rows, open_entry, same_entry
from tests.browser.ui import delete_session_on_screen, label, open_tool

pytestmark = pytest.mark.browser

SECRET = "secret123"
WS_CLOSE_DEADLINE_MS = 5_000


@pytest.fixture
def viewer_context(browser: Browser) -> Iterator[BrowserContext]:
    """A second browser (its own cookies): whoever was sent the link, not the owner."""
    context = browser.new_context()
    context.set_default_timeout(15_000)
    yield context
    context.close()


def owner_panel(page: Page) -> Locator:
    panel = page.locator("details.owner-panel")
    if panel.get_attribute("open") is None:
        panel.locator(":scope > summary").click()
    expect(panel.get_by_role("button", name="Create share link")).to_be_visible()
    return panel


def link_ids(page: Page) -> set[str]:
    return set(page.locator("#links tr[data-link]").evaluate_all("rows => rows.map(r => r.dataset.link)"))


def create_link(page: Page, role: str = "viewer") -> tuple[str, str]:
    """Creates a share link from the owner panel; returns its URL (shown once) and its id."""
    panel = owner_panel(page)
    before = link_ids(page)
    panel.get_by_label("Role").select_option(role)
    panel.get_by_role("button", name="Create share link").click()
    new_url = page.get_by_label("New share link")
    # Built from the console's own name and port, whatever Host the page was opened under.
    origin = re.escape(f"{urlsplit(page.url).scheme}://{urlsplit(page.url).netloc}")
    expect(new_url).to_have_value(re.compile(rf"^{origin}/s/\S+$"))
    assert urlsplit(page.url).hostname.endswith(".localhost")  # type: ignore[union-attr]
    expect(page.locator("#links tr[data-link]")).to_have_count(len(before) + 1)
    (link_id,) = link_ids(page) - before
    return new_url.input_value(), link_id


def revoke(page: Page, link_id: str) -> None:
    owner_panel(page)
    page.get_by_role("button", name=f"Revoke {link_id}", exact=True).click()
    expect(page.locator(f'#links tr[data-link="{link_id}"]')).to_contain_text("revoked")


def open_as_viewer(viewer: Page, console: Console, url: str) -> None:
    """Opens a share link: the landing page trades the token for a cookie and goes on to the session."""
    viewer.goto(url)
    expect(viewer).to_have_url(console.session_url)
    wait_live(viewer)
    expect(viewer.locator("body")).to_have_class(re.compile(r"\brole-viewer\b"))


def test_a_viewer_in_another_browser_sees_the_owners_call_live_and_can_send_nothing(
        page: Page, viewer_context: BrowserContext, console: Console) -> None:
    url, link_id = create_link(page, "viewer")
    viewer = viewer_context.new_page()
    open_as_viewer(viewer, console, url)
    expect(viewer.locator(".owner-panel")).to_have_count(0)
    viewer.evaluate("window.__sameDocument = true")

    entry = call_echo(page, f"for the viewer {uuid.uuid4().hex[:8]}")
    seen = same_entry(viewer, entry)
    expect(seen).to_have_attribute("data-status", "complete")
    expect(seen.locator(":scope > details > summary .name")).to_have_text("echo")
    assert viewer.evaluate("window.__sameDocument === true"), "the viewer's page reloaded instead of updating live"

    echo = viewer.locator('details.item[data-tool="echo"]')
    echo.locator(":scope > summary").click()
    expect(echo.locator("p.description")).to_be_visible()
    expect(echo.get_by_role("button", name="Call echo", exact=True)).to_be_hidden()
    # What each resource is (URI, name, type) shows to a viewer; only its Read button is the owner's.
    resource = viewer.locator("#group-resources .item .resource-head", has_text="demo://readme").first
    expect(resource.locator("code")).to_be_visible()
    expect(resource.locator("code")).to_contain_text("demo://readme")
    expect(resource.get_by_role("button")).to_be_hidden()
    viewer.locator("#subscriptions > details > summary").click()
    expect(viewer.locator("#subscriptions").get_by_role("heading", name="Subscriptions")).to_be_visible()
    expect(viewer.get_by_role("button", name="Start listening")).to_be_hidden()

    calls = page.locator('#timeline-list > li.entry[data-method="tools/call"]')
    before = calls.count()
    response = viewer.request.post(console.url(f"/sessions/{console.session_id}/tools/call"),
                                   form={"tool": "echo", "text": "from a viewer"},
                                   headers={"Origin": console.base})
    assert response.status == 403, (response.status, response.text()[:300])
    expect(calls).to_have_count(before)
    revoke(page, link_id)


def test_revoking_a_link_closes_the_viewers_open_websocket_and_the_link_no_longer_opens_the_session(
        page: Page, viewer_context: BrowserContext, console: Console) -> None:
    url, link_id = create_link(page, "viewer")
    viewer = viewer_context.new_page()
    open_as_viewer(viewer, console, url)

    revoke(page, link_id)

    expect(viewer.locator("body")).to_have_attribute("data-ws", "closed", timeout=WS_CLOSE_DEADLINE_MS)
    response = viewer.reload()
    assert response is not None and response.status == 401, response and response.status
    again = viewer.goto(url)
    assert again is not None and again.status == 404, again and again.status


def test_presenter_mode_masks_a_bearer_header_that_the_owner_otherwise_sees(page: Page, console: Console) -> None:
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(console.demo_url)
    page.get_by_label("Extra headers").fill(f"Authorization: Bearer {SECRET}")
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    wait_live(page, CONNECT_TIMEOUT_MS)
    session_url = page.url
    discover = page.locator('#timeline-list > li.entry[data-method="server/discover"]')

    sent = open_entry(discover).locator(".detail .frame.dir-out").first
    expect(sent.locator("table.headers")).to_be_visible()
    assert header_rows(sent).get("Authorization") == f"Bearer {SECRET}", header_rows(sent)

    page.get_by_role("button", name="Presenter mode", exact=True).click()
    expect(page.locator("body")).to_have_class(re.compile(r"\bpresenter\b"))
    expect(page).to_have_url(session_url)
    wait_live(page)
    sent = open_entry(discover).locator(".detail .frame.dir-out").first
    assert header_rows(sent).get("Authorization") == "Bearer ••••••", header_rows(sent)
    # A 2026-07-28 demo shows its MCP headers: they stay visible in presenter mode, credentials masked.
    expect(sent.locator("table.headers")).to_be_visible()
    assert header_rows(sent).get("Mcp-Method") == "server/discover", header_rows(sent)
    assert SECRET not in page.content()

    page.get_by_role("button", name="Leave presenter mode", exact=True).click()
    expect(page.locator("body")).not_to_have_class(re.compile(r"\bpresenter\b"))
    delete_session_on_screen(page)
    expect(page).to_have_url(console.url("/"))


def test_a_viewer_page_works_whole_when_the_target_url_holds_the_pages_own_words_and_a_credential(
        page: Page, viewer_context: BrowserContext, console: Console) -> None:
    """`?tenant=json&x=sessions&y=stylesheet&z=exchange`: ordinary values, shown as typed, no longer masked out of
    the viewer's markup (which broke its JSON links, websocket, CSS and export); the credential is masked once,
    when recorded, and appears nowhere on the viewer's side."""
    token = f"tok-{uuid.uuid4().hex[:12]}"
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(console.demo_url + "?tenant=json&x=sessions&y=stylesheet&z=exchange")
    page.get_by_label("Extra headers").fill(f"Authorization: Bearer {token}")
    secret_box = page.locator("#secret-slots-http").get_by_label(re.compile(r"header Authorization"))
    expect(secret_box).to_be_checked()  # listed as typed, ticked: credential-shaped
    expect(page.locator("#secret-slots-http").get_by_label(re.compile(r"query parameter tenant"))).not_to_be_checked()
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    wait_live(page, CONNECT_TIMEOUT_MS)
    session_url = page.url
    expect(page.locator(".session-head .target")).to_contain_text("?tenant=json&x=sessions&y=stylesheet&z=exchange")
    expect(page.locator(".session-head .secret-note")).to_contain_text("header Authorization")

    url, link_id = create_link(page, "viewer")
    viewer = viewer_context.new_page()
    viewer.goto(url)
    expect(viewer).to_have_url(session_url)
    wait_live(viewer)  # its websocket connected: /sessions/{id}/ws is whole
    assert viewer.evaluate("getComputedStyle(document.body).margin") == "0px"  # the stylesheet applied
    expect(viewer.locator(".session-head .target")).to_contain_text("tenant=json&x=sessions")
    echo = open_tool(page, "echo")
    echo.get_by_label(label("Text")).fill(f"said to the viewer with {token}")
    entry = call(page, echo, "echo")
    # Recorded once, masked: the owner's card too (the owner's entry detail has the exact frame).
    expect(echo.locator(".result pre.text-content")).to_have_text("said to the viewer with ••••••")
    seen = same_entry(viewer, entry)
    expect(seen).to_have_attribute("data-status", "complete")  # pushed live
    open_entry(seen)  # the lazily loaded body and frames, whole
    sent = seen.locator(".detail .frame.dir-out").first
    assert header_rows(sent).get("Authorization") == "Bearer ••••••", header_rows(sent)
    twin = viewer.request.get(session_url + ".json")
    assert twin.ok and twin.headers["content-type"] == "application/json" and token not in twin.text()
    exported = viewer.request.get(session_url + "/export.json")
    assert exported.ok and token not in exported.text() and '"exchange"' in exported.text()
    assert token not in viewer.content()
    imported = page.request.post(console.url("/sessions/import"), headers={"Accept": "application/json",
                                                                           "Origin": console.base},
                                 multipart={"file": {"name": "s.json", "mimeType": "application/json",
                                                     "buffer": exported.body()}})
    assert imported.ok, imported.text()[:300]
    revoke(page, link_id)
