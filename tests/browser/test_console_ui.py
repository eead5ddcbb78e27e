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

pytestmark = pytest.mark.browser

COOKIE = "mcp_console_token"
PAGE_WEIGHT_LIMIT = 100 * 1024


def label(text: str) -> re.Pattern[str]:
    """A field's label: its title, then a '*' when required ('A *'); never a longer label that starts alike."""
    return re.compile(rf"^{re.escape(text)}(\s*\*)?$")


def open_tool(page: Page, name: str) -> Locator:
    item = page.locator(f'details.item[data-tool="{name}"]')
    item.locator(":scope > summary").click()
    expect(item.get_by_role("button", name=f"Call {name}", exact=True)).to_be_visible()
    return item


def call(item: Locator, name: str) -> str:
    """Clicks "Call NAME" and returns the timeline key of the reply shown in the tool's result."""
    item.get_by_role("button", name=f"Call {name}", exact=True).click()
    reply = item.locator(".result .reply")
    expect(reply).to_have_attribute("data-entry", re.compile(r"\S"))
    key = reply.get_attribute("data-entry")
    assert key
    return key


def open_entry(page: Page, key: str) -> Locator:
    """Opens a timeline entry and waits for its wire frames (loaded when the details open)."""
    entry = page.locator(f"#timeline-list > li.entry#e-{key}")
    entry.locator(":scope > details > summary").click()
    expect(entry.locator(".detail .frame").first).to_be_visible()
    return entry


def header_rows(frame: Locator) -> dict[str, str]:
    rows = frame.locator("table.headers tr").evaluate_all(
        "rows => rows.map(r => [r.querySelector('th').textContent, r.querySelector('td code').textContent])")
    return {name.strip().lower(): value for name, value in rows}


def errors_of(page: Page) -> list[str]:
    """Collects uncaught page errors and console errors, to assert there were none."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            problems.append(f"console.error: {msg.text}")

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


def call_echo(page: Page, text: str) -> str:
    echo = open_tool(page, "echo")
    echo.get_by_label(label("Text")).fill(text)
    key = call(echo, "echo")
    expect(echo.locator(".result pre.text-content")).to_have_text(text)
    expect(page.locator(f"#e-{key}")).to_have_attribute("data-status", "ok")
    return key


def test_launch_url_sets_an_httponly_cookie_and_lands_on_the_connected_session_without_the_token(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    problems = errors_of(page)

    open_launch_url(page, console)

    assert "token" not in page.url and console.token not in page.url
    assert urlsplit(page.url).path == f"/sessions/{console.session_id}"
    cookies = [c for c in context.cookies() if c["name"] == COOKIE]
    assert len(cookies) == 1, context.cookies()
    cookie = cookies[0]
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["value"] == console.token
    assert cookie["domain"] == "127.0.0.1"
    assert console.token not in page.evaluate("document.cookie"), "page scripts must not see the owner token"
    expect(page.locator("#session-status")).to_have_text("connected")
    assert problems == []


def test_calling_add_from_its_form_shows_the_sum_and_logs_a_tools_call_with_typed_json_and_mcp_headers(
        page: Page) -> None:
    for name in ("echo", "add", "profile_form", "html_trap"):
        expect(page.locator(f'details.item[data-tool="{name}"]')).to_be_visible()
    calls = page.locator('#timeline-list > li.entry[data-method="tools/call"]')
    before = calls.count()

    add = open_tool(page, "add")
    a, b = add.get_by_label(label("A")), add.get_by_label(label("B"))
    expect(a).to_have_attribute("type", "number")
    a.fill("2")
    b.fill("40")
    key = call(add, "add")

    result = add.locator(".result")
    expect(result.locator("pre.text-content")).to_have_text("42")
    expect(result.locator(".alert.ok")).to_contain_text("structuredContent matches outputSchema")
    expect(result.locator("pre.structured")).to_contain_text('"sum": 42')

    entry = page.locator(f"#timeline-list > li.entry#e-{key}")
    expect(entry).to_have_attribute("data-method", "tools/call")
    expect(entry).to_have_attribute("data-status", "ok")
    expect(calls).to_have_count(before + 1)
    expect(entry.locator(".name")).to_have_text("add")

    open_entry(page, key)
    sent = entry.locator(".detail .frame.dir-out").first
    expect(sent.locator("table.headers")).to_be_visible()
    headers = header_rows(sent)
    assert headers.get("mcp-method") == "tools/call", headers
    assert headers.get("mcp-name") == "add", headers
    raw = sent.locator("pre.raw").inner_text()
    assert re.search(r'"a":\s*2\b', raw) and not re.search(r'"a":\s*"2"', raw), raw
    body = json.loads(raw)
    assert body["method"] == "tools/call"
    assert body["params"]["name"] == "add"
    assert body["params"]["arguments"] == {"a": 2, "b": 40}
    assert all(type(v) is int for v in body["params"]["arguments"].values())


def test_a_call_made_in_one_tab_appears_live_in_another_tab_on_the_same_session(
        context: BrowserContext, page: Page, console: Console) -> None:
    other = context.new_page()
    other.goto(console.session_url)
    wait_live(other)
    other.evaluate("window.__sameDocument = true")

    text = f"two tabs {uuid.uuid4().hex[:8]}"
    key = call_echo(page, text)

    arrived = other.locator(f"#timeline-list > li.entry#e-{key}")
    expect(arrived).to_have_attribute("data-status", "ok")
    expect(arrived).to_have_attribute("data-method", "tools/call")
    expect(arrived.locator(".name")).to_have_text("echo")
    assert other.evaluate("window.__sameDocument === true"), "the second tab reloaded instead of updating live"


def test_starting_the_demo_over_stdio_from_home_connects_and_echo_works(page: Page, console: Console) -> None:
    problems = errors_of(page)
    page.goto(console.url("/"))

    start_demo_over_stdio(page, console)

    expect(page.get_by_text("Server stderr", exact=True)).to_be_visible()
    expect(page.locator("#stderr-lines")).to_be_attached()
    key = call_echo(page, "hello over stdio")
    expect(page.locator(f"#e-{key}")).to_have_attribute("data-method", "tools/call")
    assert problems == []


def test_html_from_the_server_is_shown_as_text_and_never_runs(page: Page) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    trap = open_tool(page, "html_trap")
    key = call(trap, "html_trap")

    text = trap.locator(".result pre.text-content")
    expect(text).to_contain_text("<script>alert(1)</script>")
    expect(text).to_contain_text("<img src=x onerror=alert(2)>")
    expect(text).to_contain_text("<b>not bold</b> &amp; done")
    main = page.locator("main")
    expect(main.locator("script")).to_have_count(0)
    expect(main.locator("img[onerror], img[src='x']")).to_have_count(0)
    expect(main.locator("b", has_text="not bold")).to_have_count(0)

    entry = open_entry(page, key)
    expect(entry.locator(".detail .frame.dir-in pre.raw", has_text="<script>alert(1)</script>")).to_have_count(1)
    expect(main.locator("script")).to_have_count(0)
    assert dialogs == []


def test_a_connection_failure_is_shown_on_the_session_page_and_the_console_keeps_working(
        page: Page, console: Console) -> None:
    problems = errors_of(page)
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
    assert [p for p in problems if "Failed to load resource" not in p] == []


def test_first_load_of_the_session_page_stays_under_100_kb_of_js_and_css_and_only_talks_to_127_0_0_1(
        context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    requests: list[Request] = []
    sockets: list[WebSocket] = []
    page.on("request", requests.append)
    page.on("websocket", sockets.append)

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
    foreign = [u for u in urls if urlsplit(u).scheme != "data" and urlsplit(u).hostname != "127.0.0.1"]
    assert foreign == []
