"""Two console processes on one PostgreSQL and one Redis, in real Chromium: a call made in the owner's tab on
process A appears live in a viewer's tab on process B; `kill -9` of A loses nothing recorded, and the next
action on B takes the session over (the call A left in flight shows failed, a new call works).

Cookies are honoured only under the public host and the port a request arrives on, and browsers do not
isolate cookies by port: both processes share the public name and the token, so the owner's cookie set on A
is honoured on B too, and the viewer's link cookie (set where it opened the link, on B) is the viewer's only
credential.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, is_loopback_url, wait_live
from tests.browser.test_console_ui import call_echo, same_entry
from tests.browser.test_live_feeds import running_card
from tests.browser.test_sharing import create_link
from tests.integration.conftest import DemoProcess, free_port
from tests.team_processes import ConsoleProcess, Team

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAKEOVER_TIMEOUT_MS = 20_000


@pytest.fixture
def demo() -> Iterator[DemoProcess]:
    server = DemoProcess(free_port())
    server._start()
    yield server
    server.stop()


def new_context(browser: Browser) -> BrowserContext:
    context = browser.new_context()
    context.set_default_timeout(15_000)
    context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    return context


@pytest.fixture
def owner_context(browser: Browser) -> Iterator[BrowserContext]:
    context = new_context(browser)
    yield context
    context.close()


@pytest.fixture
def viewer_context(browser: Browser) -> Iterator[BrowserContext]:
    context = new_context(browser)
    yield context
    context.close()


def on_process(url: str, member: ConsoleProcess) -> str:
    """The same path on another process of the team (same public name, that process's port)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"{member.spec.public_host}:{member.port}", parts.path, parts.query, ""))


def connect_on(page: Page, member: ConsoleProcess, demo_url: str) -> str:
    """The owner logs in on `member` and connects a session to the demo server there; returns the session id."""
    page.goto(member.launch_url)
    page.get_by_label("Server URL").fill(demo_url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(member.base)}/sessions/[^/?#]+$"))
    wait_live(page, CONNECT_TIMEOUT_MS)
    return page.url.rsplit("/", 1)[1]


def start_long_job(page: Page) -> str:
    """Starts a call that will not end by itself for a minute; returns its operation id."""
    card = running_card(page, "long_job", Seconds="60")
    expect(card).to_have_attribute("data-status", "running")
    return str(card.get_attribute("data-op"))


def op_entry(page: Page, op: str) -> Locator:
    return page.locator(f'#timeline-list > li.entry[data-op="{op}"]')


def test_a_call_on_process_a_reaches_a_viewer_on_process_b_live_and_survives_a_kill_of_a(
        team: Team, demo: DemoProcess, owner_context: BrowserContext, viewer_context: BrowserContext) -> None:
    a, b = team.start("a"), team.start("b")
    owner = owner_context.new_page()
    session_id = connect_on(owner, a, demo.url)
    link_url, _link_id = create_link(owner, "viewer")
    assert urlsplit(link_url).port == a.port  # links are built from the process that made them

    viewer = viewer_context.new_page()
    viewer.goto(on_process(link_url, b))  # the same link, opened on the other process
    expect(viewer).to_have_url(f"{b.base}/sessions/{session_id}")
    wait_live(viewer)
    expect(viewer.locator("body")).to_have_class(re.compile(r"\brole-viewer\b"))
    expect(viewer.locator(".owned-by")).to_contain_text("Connection held by console process")
    viewer.evaluate("window.__sameDocument = true")

    text = f"across processes {uuid.uuid4().hex[:8]}"
    entry = call_echo(owner, text)
    seen = same_entry(viewer, entry)
    expect(seen).to_have_attribute("data-status", re.compile("^(ok|complete)$"))
    expect(seen.locator(":scope > details > summary .name")).to_have_text("echo")
    assert viewer.evaluate("window.__sameDocument === true"), "the viewer's tab reloaded instead of updating live"

    op = start_long_job(owner)
    expect(op_entry(viewer, op)).to_have_attribute("data-status", "running")  # B heard of it before A dies
    recorded = viewer.locator("#timeline-list > li.entry").evaluate_all(
        "els => els.map(e => e.id ? '#' + e.id : `[data-op=\"${e.dataset.op}\"]`)")
    assert len(recorded) >= 4, recorded  # the list calls, echo, long_job

    a.kill()

    # Everything recorded is still there: the page after a reload, and its JSON twin.
    viewer.reload()
    for selector in recorded:
        expect(viewer.locator(f"#timeline-list > li.entry{selector}")).to_have_count(1)
    twin = viewer.request.get(f"{b.base}/sessions/{session_id}.json")
    assert twin.status == 200, twin.text()[:300]
    listed = {f"#e-{e['key']}" for e in twin.json()["timeline"] if e.get("key")} | {
        f'[data-op="{e["op"]}"]' for e in twin.json()["timeline"] if e.get("op")}
    assert set(recorded) <= listed, (recorded, twin.json()["timeline"])
    assert text in twin.text()

    # The page on B says the owner is gone once its lease lapsed (no action needed to learn it).
    owner_b = owner_context.new_page()

    def says_gone() -> bool:
        owner_b.goto(f"{b.base}/sessions/{session_id}")
        return owner_b.locator(".owner-gone").count() == 1

    expect_eventually(says_gone, TAKEOVER_TIMEOUT_MS, "B's page to say the owner process stopped")

    # The next action on B takes the session over: the call in flight shows failed, a new one works.
    wait_live(owner_b)
    again = f"after the takeover {uuid.uuid4().hex[:8]}"
    call_echo(owner_b, again)
    expect(owner_b.locator(".owned-by")).to_have_count(0)
    job = op_entry(owner_b, op)
    expect(job).to_have_attribute("data-status", re.compile("error|failed"))
    job.locator(":scope > details > summary").click()  # the entry's body (its message) loads on open
    expect(job.locator(".entry-body")).to_contain_text("the console process that ran this request stopped")
    # The viewer, still on B, saw the takeover live.
    expect(op_entry(viewer, op)).to_have_attribute("data-status", re.compile("error|failed"))


def expect_eventually(check: object, timeout_ms: int, what: str) -> None:
    import time

    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
    pytest.fail(f"timed out waiting for {what}")
