"""MCP Apps end to end: the real @modelcontextprotocol/server-basic-vanillajs (ext-apps 2.x, the official TypeScript
SDK) in real Chromium. Its view renders in the sandbox proxy on another origin, gets the tool input and result,
calls a tool through the bridge, and every message is an entry on the timeline; a viewer link replays it.

Skips when the npm package is not installed (scripts/test.sh installs it, pinned).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, FrameLocator, Page, expect

from tests.browser.conftest import Console, port_open, wait_until
from tests.browser.ui import open_tool, session_of_its_own

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / ".cache/npm/node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"
needs_server = pytest.mark.skipif(not SERVER.exists() or shutil.which("node") is None,
                                  reason="@modelcontextprotocol/server-basic-vanillajs is not installed "
                                         "(bash scripts/test.sh installs it) or node is missing")
pytestmark = [pytest.mark.browser, needs_server]
SLOW_MS = 60_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def apps_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example server over Streamable HTTP on a port of its own (it binds every interface; tests use loopback)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("apps") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["node", str(SERVER)], env={**os.environ, "PORT": str(port)}, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: port_open("127.0.0.1", port), 30), log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def apps_session(page: Page, console: Console, apps_url: str) -> Iterator[str]:
    with session_of_its_own(page, console, {"kind": "http", "url": apps_url, "headers": ""}) as sid:
        yield sid


def _view(page: Page, app: str) -> FrameLocator:
    """The view's frame: the inner frame of the sandbox proxy of app `app` (Playwright waits for it as it is used)."""
    return page.frame_locator(f"#app-{app} iframe.app-frame").frame_locator("iframe")


def _call_get_time(page: Page) -> str:
    item = open_tool(page, "get-time")
    item.get_by_role("button", name="Call get-time", exact=True).click()
    # This call's app, by the link its card gives (earlier calls' apps are listed too, closed).
    pointer = item.locator(".app-pointer a").last
    expect(pointer).to_be_visible(timeout=SLOW_MS)
    return str(pointer.get_attribute("href")).removeprefix("#app-")


def _entries(page: Page, method: str) -> int:
    return page.locator(f'#timeline-list > li.entry[data-method="{method}"]').count()


def test_a_tools_view_renders_on_its_own_origin_and_gets_the_tool_input_and_result(
        page: Page, apps_session: str, console: Console) -> None:
    app = _call_get_time(page)
    proxy = page.locator(f"#app-{app} iframe.app-frame")
    src = str(proxy.get_attribute("src"))
    # Another origin than the console's: its own host name, no cookie of the console's.
    assert urlsplit(src).hostname != urlsplit(console.base).hostname
    assert urlsplit(src).hostname and urlsplit(src).hostname.endswith("-sandbox.localhost")
    view = _view(page, app)
    # The view shows the time the tool returned: it received ui/notifications/tool-result.
    expect(view.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\dT"), timeout=SLOW_MS)
    # Every bridge message is on the timeline, in the order the spec sets.
    for method in ("app: ui/notifications/sandbox-proxy-ready", "app: ui/notifications/sandbox-resource-ready",
                   "app: ui/initialize", "app: ui/notifications/initialized", "app: ui/notifications/tool-input",
                   "app: ui/notifications/tool-result"):
        expect(page.locator(f'#timeline-list > li.entry[data-method="{method}"]').first).to_be_visible(
            timeout=SLOW_MS)
    # The view was read with resources/read, an operation of its own on the timeline.
    expect(page.locator('#timeline-list > li.entry.op[data-method="resources/read"]').first).to_be_visible()
    # The policy applied is shown (the view declares none: the spec's default).
    page.locator(f"#app-{app} .app-facts > summary").click()
    expect(page.locator(f"#app-{app} .app-csp")).to_contain_text("connect-src 'none'")
    # The view runs with an opaque origin: it cannot read the console's cookies or storage.
    assert view.locator("body").evaluate("b => window.origin") == "null"


def test_a_views_tool_call_goes_through_the_bridge_and_is_linked_to_the_server_exchange(
        page: Page, apps_session: str) -> None:
    app = _call_get_time(page)
    view = _view(page, app)
    expect(view.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-"), timeout=SLOW_MS)
    before = _entries(page, "app: tools/call")
    calls_before = page.locator('#timeline-list > li.entry.op[data-method="tools/call"]').count()
    first = view.locator("#server-time").inner_text()
    apps_before = page.locator("#apps-list .app").count()
    view.get_by_role("button", name="Get Server Time").click()
    bridge = page.locator('#timeline-list > li.entry[data-method="app: tools/call"]').first
    expect(bridge).to_have_attribute("data-status", "ok", timeout=SLOW_MS)
    assert _entries(page, "app: tools/call") == before + 1
    # It led to a tools/call operation of its own; each entry links to the other.
    expect(page.locator('#timeline-list > li.entry.op[data-method="tools/call"]')).to_have_count(calls_before + 1)
    link = bridge.locator("a.via")
    expect(link).to_have_attribute("href", re.compile(r"^#e-op-[\w-]+$"))
    target = str(link.get_attribute("href"))[1:]
    expect(page.locator(f"#{target} a.via")).to_have_attribute("href", f"#{bridge.get_attribute('id')}")
    # The view got the answer and shows a new time; no new app was opened for the view's own call.
    expect(view.locator("#server-time")).not_to_have_text(first, timeout=SLOW_MS)
    expect(page.locator("#apps-list .app")).to_have_count(apps_before)


def test_a_views_message_and_link_reach_the_person_and_the_link_opens_only_on_their_click(
        page: Page, context: BrowserContext, apps_session: str) -> None:
    app = _call_get_time(page)
    view = _view(page, app)
    expect(view.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-"), timeout=SLOW_MS)
    view.locator("#message-text").fill("hello from the view <b>bold</b>")
    view.get_by_role("button", name="Send Message").click()
    said = page.locator(f"#app-{app} .app-said")
    expect(said).to_contain_text("hello from the view <b>bold</b>", timeout=SLOW_MS)  # as text, never markup
    expect(said.locator("b")).to_have_count(0)
    view.locator("#link-url").fill("https://example.com/docs")
    view.get_by_role("button", name="Open Link").click()
    offer = page.locator(f"#app-{app} .app-link")
    expect(offer).to_contain_text("https://example.com/docs", timeout=SLOW_MS)
    assert len(context.pages) == 1  # nothing opened by the view itself
    # Typing into the view scrolled the page to the frame; a person scrolls back up to the offer first.
    page.evaluate("() => window.scrollTo(0, 0)")
    offer.get_by_role("button", name="Dismiss").click()
    expect(offer, page.locator(f"#app-{app}").inner_html()).to_have_count(0)
    entry = page.locator('#timeline-list > li.entry[data-method="app: ui/open-link"]').first
    expect(entry).to_have_attribute("data-status", "error", timeout=SLOW_MS)  # refused: the person did not open it


def test_host_context_controls_reach_the_view_as_host_context_changed(page: Page, apps_session: str) -> None:
    app = _call_get_time(page)
    view = _view(page, app)
    expect(view.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-"), timeout=SLOW_MS)
    page.locator(f"#app-{app} .app-context select[name=theme]").select_option("dark")
    entry = page.locator('#timeline-list > li.entry[data-method="app: ui/notifications/host-context-changed"]')
    expect(entry.first).to_be_visible(timeout=SLOW_MS)
    # The view applies the theme it is told (ext-apps sets data-theme / color-scheme on its root).
    expect(view.locator("html")).to_have_attribute("data-theme", "dark")


def test_a_viewer_link_replays_the_recorded_view_and_cannot_call_tools(
        page: Page, context: BrowserContext, apps_session: str, console: Console) -> None:
    app = _call_get_time(page)
    view = _view(page, app)
    expect(view.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-"), timeout=SLOW_MS)
    made = page.request.post(console.url(f"/sessions/{apps_session}/links"), form={"role": "viewer"},
                             headers={"Accept": "application/json", "Origin": console.base})
    assert made.ok, made.text()
    link = str(made.json()["url"])
    viewer_context = context.browser.new_context()  # type: ignore[union-attr]
    viewer_context.route(lambda url: not (urlsplit(url).hostname or "").endswith((".localhost", "127.0.0.1")),
                         lambda route: route.abort())
    try:
        viewer = viewer_context.new_page()
        viewer.goto(link)
        expect(viewer.locator(f"#app-{app} .app-replay")).to_be_visible(timeout=SLOW_MS)
        # Closed on a page load (a view run is a recorded run): the person opens it.
        viewer.locator(f"#app-{app} .app-body > summary").click()
        seen = _view(viewer, app)
        expect(seen.locator("#server-time")).to_have_text(re.compile(r"^\d{4}-"), timeout=SLOW_MS)
        calls = _entries(page, "app: tools/call")
        seen.get_by_role("button", name="Get Server Time").click()
        # The view is refused (a viewer sends nothing: the example shows its error mark), and nothing is recorded.
        expect(seen.locator("#server-time")).to_have_text("[ERROR]", timeout=SLOW_MS)
        assert _entries(page, "app: tools/call") == calls
    finally:
        viewer_context.close()
