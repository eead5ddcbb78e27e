"""Real Chromium, the real attack: a hostile target sends the owner to a page on another 127.0.0.1 port.

Cookies are not isolated by port, so with the owner cookie on 127.0.0.1 that page would receive it and could
start a process through /sessions. The console binds its cookies to its own random *.localhost name instead:
a recorder of the test's own (another port, reached as 127.0.0.1 and as localhost) must get no console cookie
and no token in its URL or Referer, and whatever it got (plus the real cookie values, taken from the browser)
must be refused when replayed against the console under Host 127.0.0.1, with no process started.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import Console, is_loopback_url, open_launch_url, wait_live, wait_until
from tests.browser.ui import label, open_tool

pytestmark = pytest.mark.browser
OWNER_COOKIE = "mcp_console_token"
LINK_COOKIE = "mcp_console_link"


class Recorder:
    """A page server on its own 127.0.0.1 port that records every request line and header."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = b"<!doctype html><title>sign in</title><p>nothing to see</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="recorder", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.stop()


def assert_nothing_usable(recorder: Recorder, secrets: list[str]) -> None:
    assert recorder.seen, "the recorder was never visited"
    for path, headers in recorder.seen:
        assert "mcp_console" not in headers.get("cookie", ""), headers
        for secret in secrets:
            assert secret not in path, path
            assert secret not in headers.get("referer", ""), headers
            assert secret not in headers.get("cookie", ""), headers


def console_port(console: Console) -> int:
    return int(urlsplit(console.base).port or 80)


def replay_is_refused(console: Console, cookie: str, marker: Path, session_id: str) -> None:
    """What a thief holds, sent to the console the way the thief can reach it: Host 127.0.0.1."""
    local = f"http://127.0.0.1:{console_port(console)}"
    headers = {"Cookie": cookie, "Origin": local, "Accept": "application/json"}
    with httpx.Client(base_url=local, headers=headers, timeout=10) as thief:
        assert thief.get("/sessions.json").status_code == 401
        assert thief.get(f"/sessions/{session_id}.json").status_code == 401
        started = thief.post("/sessions", data={"kind": "stdio",
                                                "command": f"touch {marker}"})
        assert started.status_code == 401, started.text
    assert not marker.exists(), "a refused POST /sessions must start no process"


def new_context(browser: Browser) -> BrowserContext:
    context = browser.new_context()
    context.set_default_timeout(15_000)
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    return context


def visit_recorder_as_127_and_localhost(page: Page, recorder: Recorder) -> None:
    before = len(recorder.seen)
    page.goto(f"http://127.0.0.1:{recorder.port}/direct")
    page.goto(f"http://localhost:{recorder.port}/via-localhost")
    assert wait_until(lambda: len(recorder.seen) >= before + 2, 10)


def test_a_hostile_targets_url_elicitation_to_another_local_port_gets_nothing_usable(
        context: BrowserContext, console: Console, hostile_http: Any, recorder: Recorder, tmp_path: Path,
        browser: Browser) -> None:
    page = context.new_page()
    open_launch_url(page, console)
    assert urlsplit(page.url).hostname == urlsplit(console.base).hostname != "127.0.0.1"
    created = page.request.post(console.url("/sessions"), form={"kind": "http", "url": hostile_http("auth"),
                                                                "headers": ""},
                                headers={"Origin": console.base, "Accept": "application/json"})
    assert created.ok, created.text()
    sid = created.json()["id"]
    page.goto(console.url(f"/sessions/{sid}"))
    wait_live(page)

    # The attack: the target asks the owner to open its "sign-in page" on another 127.0.0.1 port.
    item = open_tool(page, "sign_in")
    item.get_by_label(label("url")).fill(f"http://127.0.0.1:{recorder.port}/login")
    item.get_by_role("button", name="Call sign_in", exact=True).click()
    card = item.locator(".result .operation[data-op]")
    expect(card).to_have_attribute("data-status", "awaiting_input")
    # Dialogs open in the session's one "Awaiting your input" place, not in the card.
    ask = page.locator(f'#inbox .inbox-op[data-op="{card.get_attribute("data-op")}"] '
                       'section[role=dialog][data-key="login"]')
    with page.expect_popup() as opened:
        ask.locator("a.open-url").click()
    popup = opened.value
    popup.wait_for_load_state()
    assert wait_until(lambda: any(path == "/login" for path, _ in recorder.seen), 10), recorder.seen
    visit_recorder_as_127_and_localhost(popup, recorder)  # and typed by hand, as 127.0.0.1 and as localhost

    owner = next(c for c in context.cookies() if c["name"] == OWNER_COOKIE)
    assert owner["domain"] == urlsplit(console.base).hostname
    assert_nothing_usable(recorder, [console.token, owner["value"]])
    stolen = "; ".join(h["cookie"] for _, h in recorder.seen if "cookie" in h)
    for cookie in [stolen, f"{OWNER_COOKIE}={owner['value']}"]:
        replay_is_refused(console, cookie, tmp_path / "owner-replay-started", sid)

    # A share-link holder's browser: same story with the link cookie.
    link = page.request.post(console.url(f"/sessions/{sid}/links"), form={"role": "operator"},
                             headers={"Origin": console.base, "Accept": "application/json"}).json()
    holder = new_context(browser)
    try:
        tab = holder.new_page()
        tab.goto(link["url"])
        expect(tab).to_have_url(console.url(f"/sessions/{sid}"))
        link_cookie = next(c for c in holder.cookies() if c["name"] == LINK_COOKIE)
        assert link_cookie["domain"] == urlsplit(console.base).hostname
        recorder.seen.clear()
        visit_recorder_as_127_and_localhost(tab, recorder)
        assert_nothing_usable(recorder, [link_cookie["value"], console.token])
        replay_is_refused(console, f"{LINK_COOKIE}={link_cookie['value']}", tmp_path / "link-replay-started", sid)
    finally:
        holder.close()
