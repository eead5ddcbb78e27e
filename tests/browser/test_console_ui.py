"""The console in real Chromium: launch URL, tool forms, the live timeline, stdio, escaping, failures, page weight."""

from __future__ import annotations

import json
import re
import socket
import uuid
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Dialog, Locator, Page, Request, WebSocket, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, open_launch_url, wait_live
from tests.browser.ui import label, open_tool

pytestmark = pytest.mark.browser

COOKIE = "mcp_console_token"
PAGE_WEIGHT_LIMIT = 100 * 1024
DONE = re.compile(r"^(ok|complete)$")  # an exchange ends "ok"; a tools/call operation (MRTR) ends "complete"






def call(page: Page, item: Locator, name: str) -> Locator:
    """Clicks "Call NAME", waits for the reply in the tool's result and returns the call's timeline entry.

    A call that runs as an MRTR operation has one timeline entry for the operation (data-op), else one entry for
    the exchange (id e-KEY).
    """
    item.get_by_role("button", name=f"Call {name}", exact=True).click()
    reply = item.locator(".result .reply")
    expect(reply).to_have_attribute("data-entry", re.compile(r"\S"))
    card = item.locator(".result .operation[data-op]")
    if card.count():
        return page.locator(f'#timeline-list > li.entry[data-op="{card.get_attribute("data-op")}"]')
    return page.locator(f'#timeline-list > li.entry#e-{reply.get_attribute("data-entry")}')


def same_entry(page: Page, entry: Locator) -> Locator:
    """The same timeline entry in another tab."""
    op = entry.get_attribute("data-op")
    if op:
        return page.locator(f'#timeline-list > li.entry[data-op="{op}"]')
    return page.locator(f"#timeline-list > li.entry#{entry.get_attribute('id')}")


def open_entry(entry: Locator) -> Locator:
    """Opens a timeline entry (and its first round, for an operation) and waits for the wire frames to load."""
    entry.locator(":scope > details > summary").click()
    expect(entry.locator(".entry-body:empty")).to_have_count(0)  # the body loads on open
    rounds = entry.locator("ol.op-rounds > li > details > summary")
    if rounds.count():
        rounds.first.click()
    expect(entry.locator(".detail .frame").first).to_be_visible()
    return entry


def header_rows(frame: Locator) -> dict[str, str]:
    rows = frame.locator("table.headers tr").evaluate_all(
        "rows => rows.map(r => [r.querySelector('th').textContent, r.querySelector('td code').textContent])")
    return {name.strip(): value for name, value in rows}  # names as the wire carried them


def page_errors(page: Page) -> list[str]:
    """Collects uncaught page errors (exceptions in the page's scripts), to assert there were none."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    return problems


def console_errors(page: Page) -> list[str]:
    problems: list[str] = []

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            problems.append(msg.text)

    page.on("console", on_console)
    return problems


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_demo_over_stdio(page: Page, console: Console) -> None:
    page.get_by_role("button", name="Start the demo server over stdio").click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    assert page.url != console.session_url, "starting the stdio demo should open a new session"
    wait_live(page, CONNECT_TIMEOUT_MS)
    expect(page.locator("#session-head .target .badge")).to_have_text("stdio")


def call_echo(page: Page, text: str) -> Locator:
    echo = open_tool(page, "echo")
    echo.get_by_label(label("Text")).fill(text)
    entry = call(page, echo, "echo")
    expect(echo.locator(".result pre.text-content")).to_have_text(text)
    expect(entry).to_have_attribute("data-status", DONE)
    return entry


def test_launch_url_sets_an_httponly_cookie_and_lands_on_the_connected_session_without_the_token(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    problems = page_errors(page)

    open_launch_url(page, console)

    assert "token" not in page.url and console.token not in page.url
    assert urlsplit(page.url).path == f"/sessions/{console.session_id}"
    cookies = [c for c in context.cookies() if c["name"] == COOKIE]
    assert len(cookies) == 1, context.cookies()
    cookie = cookies[0]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["value"] == console.token
    # Host-only on the console's own random name: 127.0.0.1 (every local service) never gets it.
    assert cookie["domain"] == urlsplit(console.base).hostname and cookie["domain"].endswith(".localhost")
    assert console.token not in page.evaluate("document.cookie"), "page scripts must not see the owner token"
    expect(page.locator("#session-status")).to_have_text("connected")
    assert problems == []


def test_calling_add_from_its_form_shows_the_sum_and_logs_a_tools_call_with_typed_json_and_mcp_headers(
        page: Page) -> None:
    for name in ("echo", "add", "profile_form", "html_trap"):
        expect(page.locator(f'details.item[data-tool="{name}"]')).to_be_visible()
    calls = page.locator('#timeline-list > li.entry[data-method="tools/call"]')

    add = open_tool(page, "add")
    a, b = add.get_by_label(label("A")), add.get_by_label(label("B"))
    expect(a).to_have_attribute("type", "number")
    a.fill("2")
    b.fill("40")
    entry = call(page, add, "add")

    result = add.locator(".result")
    expect(result.locator("pre.text-content")).to_have_text("42")
    expect(result.locator("pre.structured")).to_contain_text('"sum": 42')

    expect(entry).to_have_attribute("data-method", "tools/call")
    expect(entry).to_have_attribute("data-status", DONE)
    # The newest call on the timeline (not a count: the page keeps a bounded window, and a suite run before this
    # one may have filled it, so a new entry can push the oldest out).
    expect(calls.first).to_have_attribute("id", entry.get_attribute("id") or "")
    expect(entry.locator(":scope > details > summary .name")).to_have_text("add")

    open_entry(entry)
    sent = entry.locator(".detail .frame.dir-out").first
    expect(sent.locator("table.headers")).to_be_visible()
    headers = header_rows(sent)
    assert headers.get("Mcp-Method") == "tools/call", headers  # the case the wire carried
    assert headers.get("Mcp-Name") == "add", headers
    raw = sent.locator("pre.raw").inner_text()
    assert re.search(r'"a":\s*2\b', raw) and not re.search(r'"a":\s*"2"', raw), raw
    body = json.loads(raw)
    assert body["method"] == "tools/call"
    assert body["params"]["name"] == "add"
    assert body["params"]["arguments"] == {"a": 2, "b": 40}
    assert all(type(v) is int for v in body["params"]["arguments"].values())


def test_the_add_result_says_its_structured_content_matches_the_output_schema(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    open_launch_url(page, console)

    add = open_tool(page, "add")
    add.get_by_label(label("A")).fill("2")
    add.get_by_label(label("B")).fill("40")
    entry = call(page, add, "add")
    # The push that marks the entry finished is the last word on this call, live card included.
    expect(entry).to_have_attribute("data-status", DONE)

    # Whichever arrives last, the POST response or the live push, must keep the message: check the pushes too,
    # so the outcome does not depend on which one won the race.
    card = add.locator(".result .operation[data-op]")
    op = card.get_attribute("data-op") if card.count() else None
    finished = [f for f in frames if f'id="op-card-{op}"' in f and 'data-status="complete"' in f]
    assert all("structuredContent matches outputSchema." in f for f in finished), finished
    result = add.locator(".result")
    expect(result.locator("pre.structured")).to_contain_text('"sum": 42')
    expect(result.locator(".alert.ok")).to_have_text("structuredContent matches outputSchema.")


def test_the_on_the_timeline_link_of_a_result_points_at_the_calls_timeline_entry(page: Page) -> None:
    entry = call_echo(page, "where is my entry")
    link = page.locator('details.item[data-tool="echo"] .result').get_by_role("link", name="on the timeline")
    href = link.get_attribute("href") or ""
    assert href.startswith("#"), href
    target = page.locator(f"[id='{href[1:]}']")
    expect(target).to_have_count(1)
    assert target.evaluate("(el, entry) => entry.contains(el)", entry.element_handle()), \
        f"{href} is not inside the call's timeline entry #{entry.get_attribute('id')}"


def test_a_tool_call_leaves_no_errors_in_the_browser_console_of_any_tab(
        context: BrowserContext, page: Page, console: Console) -> None:
    other = context.new_page()
    other.goto(console.session_url)
    wait_live(other)
    problems = {"calling tab": console_errors(page), "other tab": console_errors(other)}

    entry = call_echo(page, "quiet console")
    expect(same_entry(other, entry)).to_have_attribute("data-status", DONE)

    assert problems == {"calling tab": [], "other tab": []}


def test_a_call_made_in_one_tab_appears_live_in_another_tab_on_the_same_session(
        context: BrowserContext, page: Page, console: Console) -> None:
    other = context.new_page()
    other.goto(console.session_url)
    wait_live(other)
    other.evaluate("window.__sameDocument = true")

    text = f"two tabs {uuid.uuid4().hex[:8]}"
    entry = call_echo(page, text)

    arrived = same_entry(other, entry)
    expect(arrived).to_have_attribute("data-status", DONE)
    expect(arrived).to_have_attribute("data-method", "tools/call")
    expect(arrived.locator(":scope > details > summary .name")).to_have_text("echo")
    assert other.evaluate("window.__sameDocument === true"), "the second tab reloaded instead of updating live"


def test_starting_the_demo_over_stdio_from_home_connects_and_echo_works(page: Page, console: Console) -> None:
    problems = page_errors(page)
    page.goto(console.url("/"))

    start_demo_over_stdio(page, console)

    expect(page.get_by_text("Server stderr", exact=True)).to_be_visible()
    expect(page.locator("#stderr-lines")).to_be_attached()
    entry = call_echo(page, "hello over stdio")
    expect(entry).to_have_attribute("data-method", "tools/call")
    assert problems == []


def test_html_from_the_server_is_shown_as_text_and_never_runs(page: Page) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    trap = open_tool(page, "html_trap")
    entry = call(page, trap, "html_trap")

    text = trap.locator(".result pre.text-content")
    expect(text).to_contain_text("<script>alert(1)</script>")
    expect(text).to_contain_text("<img src=x onerror=alert(2)>")
    expect(text).to_contain_text("<b>not bold</b> &amp; done")
    main = page.locator("main")
    expect(main.locator("script")).to_have_count(0)
    expect(main.locator("img[onerror], img[src='x']")).to_have_count(0)
    expect(main.locator("b", has_text="not bold")).to_have_count(0)

    open_entry(entry)
    expect(entry.locator(".detail .frame.dir-in pre.raw", has_text="<script>alert(1)</script>").first).to_be_visible()
    expect(main.locator("script")).to_have_count(0)
    assert dialogs == []


def test_a_connection_failure_is_shown_on_the_session_page_and_the_console_keeps_working(
        page: Page, console: Console) -> None:
    problems = page_errors(page)
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    page.goto(console.url("/"))

    page.get_by_label("Server URL").fill(url)
    page.get_by_role("button", name="Connect", exact=True).click()

    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    status = page.locator("#session-status")
    expect(status).to_have_attribute("data-status", "failed", timeout=CONNECT_TIMEOUT_MS)
    expect(status).to_have_text("failed")
    message = page.locator("#session-head").get_by_role("status")
    expect(message).to_contain_text(url)
    expect(message).not_to_contain_text("Traceback")
    failed = page.locator('#timeline-list > li.entry.notice, #timeline-list > li.entry[data-status="error"]')
    expect(failed.first).to_be_visible()

    page.get_by_role("link", name="Sessions", exact=True).click()
    expect(page).to_have_url(console.url("/"))
    expect(page.get_by_role("row").filter(has_text=url)).to_contain_text("failed")
    start_demo_over_stdio(page, console)
    call_echo(page, "still working")
    assert problems == []


def test_first_load_of_the_session_page_stays_under_100_kb_of_js_and_css_and_only_talks_to_127_0_0_1(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    requests: list[Request] = []
    sockets: list[WebSocket] = []
    page.on("request", lambda request: requests.append(request))
    page.on("websocket", lambda ws: sockets.append(ws))

    open_launch_url(page, console)

    assets = [r for r in requests if r.resource_type in ("script", "stylesheet")]
    assert len([r for r in assets if r.resource_type == "script"]) >= 3, [r.url for r in assets]
    assert any(r.resource_type == "stylesheet" for r in assets), [r.url for r in assets]
    sizes: dict[str, int] = {}
    for request in assets:
        response = request.response()
        assert response is not None and response.status == 200, request.url
        sizes[request.url] = request.sizes()["responseBodySize"]
    assert sum(sizes.values()) <= PAGE_WEIGHT_LIMIT, sizes

    urls = [r.url for r in requests] + [ws.url for ws in sockets]
    assert sockets, "the session page should open its websocket"
    own = urlsplit(console.base).hostname
    foreign = [u for u in urls if urlsplit(u).scheme != "data" and urlsplit(u).hostname != own]
    assert foreign == []
