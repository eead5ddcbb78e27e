"""OAuth in real Chromium against real everything: a console process, oidc-provider (tests/oauth_services.py) and the
demo server it protects. The owner connects from the home page, opens the authorization page from the panel, signs
in and consents in the popup, and the console's own /oauth/callback brings the session on; then refresh, step-up,
what a link holder sees, stepping through, a restart, and a failure that names its step.

One provider, one protected demo and one console serve the module (tokens live TTL_S seconds, so a refresh shows);
the tests that change a flow's settings or restart the console open sessions or consoles of their own."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from app.mcp.oauth.grant import decoded_jwt
from tests import oauth_services
from tests.browser.conftest import (
    CONNECT_TIMEOUT_MS,
    Console,
    RunningConsole,
    descendants,
    is_loopback_url,
    wait_live,
    wait_until,
)
from tests.browser.test_console_ui import call_echo
from tests.browser.test_sharing import create_link
from tests.browser.ui import label, open_tool
from tests.oauth_services import OidcProvider, free_port

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]

TTL_S = 8
FIRST_FLOW = ("challenge", "resource metadata", "server metadata", "registration", "authorization")


# --- one provider, one protected demo, one console for the module ------------------------------------------------
# tests/oauth_services.py's fixtures, run once for the module: the same names (tests/conftest.py marks by them), the
# same bodies (`__wrapped__`), a wider scope.


@pytest.fixture(scope="module")
def oauth_token_ttl() -> int:
    return TTL_S


@pytest.fixture(scope="module")
def protected_demo_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def oidc_provider(oauth_token_ttl: int, protected_demo_port: int) -> Iterator[OidcProvider]:
    yield from oauth_services.oidc_provider.__wrapped__(oauth_token_ttl, protected_demo_port)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def protected_demo(oidc_provider: OidcProvider, protected_demo_port: int) -> Iterator[str]:
    yield from oauth_services.protected_demo.__wrapped__(oidc_provider, protected_demo_port)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    run = RunningConsole(tmp_path_factory.mktemp("oauth-console"))
    try:
        yield run
    finally:
        run.kill_all(run.terminate())


@pytest.fixture(scope="module")
def shared() -> dict[str, str]:
    """The module's session on the protected demo, once the first test (or whoever needs it first) opened it."""
    return {}


@pytest.fixture
def owner(context: BrowserContext, running: RunningConsole) -> Page:
    page = context.new_page()
    page.goto(running.console.launch_url)
    wait_live(page)
    return page


# --- helpers -------------------------------------------------------------------------------------------------------


def status(page: Page) -> Any:
    return expect(page.locator("#auth-panel .auth-status"))


def connect_from_home(page: Page, console: Console, url: str) -> str:
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#.]+$"))
    return urlsplit(page.url).path.rsplit("/", 1)[1]


def open_session(page: Page, console: Console, url: str) -> str:
    made = page.request.post(console.url("/sessions"), form={"kind": "http", "url": url, "headers": ""},
                             headers={"Accept": "application/json", "Origin": console.base})
    assert made.ok, made.text()
    sid = str(made.json()["id"])
    page.goto(console.url(f"/sessions/{sid}"))
    return sid


def sign_in(page: Page) -> dict[str, str]:
    """Clicks "Open the authorization page", signs in and consents in the popup; returns the callback's parameters
    (code, state, iss) as the popup brought them to the console."""
    callbacks: list[str] = []
    with page.context.expect_page() as opened:
        page.locator("#auth-open").click()
    popup = opened.value
    popup.on("request", lambda r: callbacks.append(r.url) if "/oauth/callback" in r.url else None)
    for _ in range(4):  # login (unless the provider remembers alice), consent, then the callback hops on
        popup.wait_for_load_state()
        if callbacks:
            break
        if popup.locator("input[name=login]").count():
            popup.fill("input[name=login]", "alice")
            popup.fill("input[name=password]", "any password")
        with popup.expect_navigation():
            popup.locator("button[type=submit]").click()
    popup.wait_for_url(re.compile(r"/sessions/"))
    popup.close()
    assert callbacks, "the provider never sent the popup back to the console's callback"
    return {k: v[0] for k, v in parse_qs(urlsplit(callbacks[0]).query).items()}


def access_claims(page: Page) -> dict[str, Any]:
    shown = json.loads(page.locator("#auth-panel .auth-grant pre.jwt").first.text_content() or "{}")
    return dict(shown["claims"])


def authorized(page: Page, console: Console, url: str, shared: dict[str, str]) -> str:
    """The module's session, connected and authorized (signing in again only if an earlier test left it out)."""
    if "sid" not in shared:
        shared["sid"] = open_session(page, console, url)
    page.goto(console.url(f"/sessions/{shared['sid']}"))
    expect(page.locator(".auth-status[data-auth-status=done], #auth-open").first).to_be_visible(
        timeout=CONNECT_TIMEOUT_MS)
    if page.locator("#auth-open").count():
        sign_in(page)
    wait_live(page)
    status(page).to_have_attribute("data-auth-status", "done")
    return shared["sid"]


def stored_oauth(data_dir: Path, sid: str) -> dict[str, Any]:
    with sqlite3.connect(f"file:{data_dir / 'console.sqlite3'}?mode=ro", uri=True) as db:
        row = db.execute("SELECT data FROM secrets WHERE session_id=?", (sid,)).fetchone()
    return dict(json.loads(json.loads(row[0])["oauth"])) if row else {}


def claims_of(token: str) -> dict[str, Any]:
    decoded = decoded_jwt(token)
    return dict(decoded["claims"]) if decoded else {}


def store_text(data_dir: Path) -> str:
    """The event log (and its exact copies), the entry index and the sessions' rows: the store but its secrets."""
    with sqlite3.connect(f"file:{data_dir / 'console.sqlite3'}?mode=ro", uri=True) as db:
        rows = [*db.execute("SELECT data FROM events"), *db.execute("SELECT facts, text FROM entry_index"),
                *db.execute("SELECT meta FROM sessions"), *db.execute("SELECT data FROM exact_events")]
    return "\n".join(" ".join(map(str, row)) for row in rows)


def refresh_lists(page: Page) -> None:
    page.get_by_role("button", name="Refresh lists", exact=True).click()


def sign_out(page: Page) -> None:
    open_auth_settings(page)
    page.locator("#auth-signout").click()
    status(page).to_have_attribute("data-auth-status", "signed_out")


def save_settings(page: Page, form: Any) -> None:
    """Saves the OAuth settings and waits for the panel the save pushes (it replaces the one marked here)."""
    page.locator("#auth-panel").evaluate("panel => { panel.dataset.before = '1'; }")
    form.get_by_role("button", name="Save").click()
    expect(page.locator("#auth-panel:not([data-before])")).to_have_count(1)


def reconnect(page: Page) -> Any:
    """The connection problem's button: "Try again" for a session that never connected, else "Reconnect"."""
    return page.get_by_role("button", name=re.compile(r"^(Reconnect|Try again)$"))


def open_auth_settings(page: Page) -> Any:
    box = page.locator("details.auth-settings")
    if box.get_attribute("open") is None:
        box.locator(":scope > summary").click()
    return box.get_by_role("form", name="OAuth settings")


# --- the tests -----------------------------------------------------------------------------------------------------


def test_a_session_on_a_protected_server_is_authorized_from_the_panel_then_lists_its_tools_and_calls_echo(
        owner: Page, running: RunningConsole, protected_demo: str, shared: dict[str, str]) -> None:
    sid = connect_from_home(owner, running.console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    for step in FIRST_FLOW:
        expect(owner.locator(f'li.auth-step[data-step="{step}"]')).to_have_count(1)
    assert owner.locator("#auth-open").get_attribute("target") == "_blank"

    sign_in(owner)

    wait_live(owner)
    status(owner).to_have_attribute("data-auth-status", "done")
    expect(owner.locator('details.item[data-tool="echo"]')).to_have_count(1)
    claims = access_claims(owner)
    assert claims["sub"] == "alice" and "mcp:read" in claims["scope"].split(), claims
    for step in ("resource metadata", "server metadata", "registration", "token"):
        expect(owner.locator("#timeline-list > li.entry", has_text=f"oauth: {step}").first).to_be_attached()
    call_echo(owner, "hello through OAuth")
    shared["sid"] = sid


def test_an_expired_token_is_refreshed_on_the_next_call_without_a_second_sign_in(
        owner: Page, running: RunningConsole, protected_demo: str, shared: dict[str, str]) -> None:
    authorized(owner, running.console, protected_demo, shared)
    badge = owner.locator("#auth-panel [data-refreshed]")
    before = int(badge.get_attribute("data-refreshed") or 0) if badge.count() else 0
    expires = float(owner.locator(".auth-expiry").get_attribute("data-expires") or 0)
    owner.wait_for_function("() => Date.now() / 1000 > Number(document.querySelector('.auth-expiry').dataset.expires)"
                            " + 0.5", timeout=(TTL_S + 10) * 1000)

    call_echo(owner, "after the token expired")

    expect(badge).to_have_attribute("data-refreshed", str(before + 1))
    status(owner).to_have_attribute("data-auth-status", "done")
    expect(owner.locator('li.auth-step[data-step="refresh"]')).to_have_count(1)
    expect(owner.locator('li.auth-step[data-step="authorization"]')).to_have_count(0)
    expect(owner.locator("#auth-open")).to_have_count(0)
    assert float(owner.locator(".auth-expiry").get_attribute("data-expires") or 0) > expires


def test_write_note_steps_up_to_mcp_write_with_a_new_authorization_page_and_completes_after_consent(
        owner: Page, running: RunningConsole, protected_demo: str, shared: dict[str, str]) -> None:
    authorized(owner, running.console, protected_demo, shared)
    item = open_tool(owner, "write_note")
    item.get_by_label(label("Text")).fill("stepped up")
    item.get_by_role("button", name="Call write_note", exact=True).click()

    status(owner).to_have_attribute("data-auth-status", "waiting")
    asked = parse_qs(urlsplit(owner.locator("#auth-open").get_attribute("href") or "").query)["scope"][0].split()
    assert {"mcp:read", "mcp:write"} <= set(asked), asked
    sign_in(owner)

    expect(item.locator(".result pre.text-content")).to_contain_text("note saved", timeout=CONNECT_TIMEOUT_MS)
    expect(item.locator(".result pre.text-content")).to_contain_text("stepped up")
    status(owner).to_have_attribute("data-auth-status", "done")
    assert {"mcp:read", "mcp:write"} <= set(access_claims(owner)["scope"].split())
    expect(owner.locator("#timeline-list > li.entry", has_text="replay of").first).to_be_attached()


def test_a_viewer_link_shows_the_steps_and_claims_but_no_token_secret_code_or_state_anywhere_it_reaches(
        owner: Page, running: RunningConsole, protected_demo: str, browser: Browser) -> None:
    console, data = running.console, running.log.parent / "data"
    sid = open_session(owner, console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    auth_url = owner.locator("#auth-open").get_attribute("href") or ""
    link, _ = create_link(owner, "viewer")
    viewer_context = browser.new_context()
    viewer_context.route(lambda url: not is_loopback_url(url), lambda route: route.abort())
    try:
        viewer = viewer_context.new_page()
        frames: list[str] = []  # every push the viewer's websocket carried, swapped in or not
        viewer.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(str(f))))
        viewer.goto(link)
        expect(viewer).to_have_url(console.url(f"/sessions/{sid}"))
        expect(viewer.locator("body")).to_have_attribute("data-ws", "open")
        expect(viewer.locator("body")).to_have_class(re.compile(r"\brole-viewer\b"))
        # The viewer watches the flow wait for the owner; the authorization page is the owner's alone.
        status(viewer).to_have_attribute("data-auth-status", "waiting")
        expect(viewer.locator('li.auth-step[data-step="authorization"]')).to_have_count(1)
        expect(viewer.locator("#auth-open, #auth-stop")).to_have_count(0)
        waiting_html = viewer.content()
        callback = sign_in(owner)
        status(viewer).to_have_attribute("data-auth-status", "done", timeout=CONNECT_TIMEOUT_MS)
        wait_live(viewer)
        expect(viewer.locator('li.auth-step[data-step="token"]')).to_have_count(1)
        assert access_claims(viewer)["sub"] == "alice"
        expect(viewer.locator("#auth-signout, details.auth-settings")).to_have_count(0)

        shown = access_claims(owner)
        # The stored token (read once the store has it) is the one the panel shows.
        assert wait_until(lambda: claims_of(stored_oauth(data, sid).get("grant", {}).get("access_token", "")) == shown,
                          10.0)
        kept = stored_oauth(data, sid)
        secrets = {"access token": kept["grant"]["access_token"], "refresh token": kept["grant"]["refresh_token"],
                   "code": callback["code"], "state": callback["state"], "authorization URL": auth_url,
                   **({"id token": kept["grant"]["id_token"]} if kept["grant"].get("id_token") else {}),
                   **{f"client secret for {issuer}": r["client_secret"]
                      for issuer, r in kept["registrations"].items() if r.get("client_secret")}}
        seen = {"the viewer's page while waiting": waiting_html, "the viewer's page": viewer.content(),
                "the viewer's websocket": "\n".join(frames)}
        for path in (f"/sessions/{sid}.json", f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har",
                     f"/sessions/{sid}/timeline?before=999999999&limit=500"):
            answer = viewer.request.get(console.url(path))
            assert answer.ok, (path, answer.status)
            seen[f"the viewer's {path}"] = answer.text()
        seen["the owner's export"] = owner.request.get(console.url(f"/sessions/{sid}/export.json")).text()
        seen["the owner's HAR"] = owner.request.get(console.url(f"/sessions/{sid}/export.har")).text()
        seen["the owner's JSON twin"] = owner.request.get(console.url(f"/sessions/{sid}.json")).text()
        seen["the owner's page once signed in"] = owner.content()
        seen["the event log"] = store_text(data)
        assert "oauth: token" in seen["the event log"], "the OAuth exchanges are in the log, masked"
        assert "auth-panel" in seen["the viewer's websocket"], "the viewer was pushed the flow as it went"
        for action in ("stop", "continue", "signout", "settings"):  # the owner's hand only
            refused = viewer.request.post(console.url(f"/sessions/{sid}/auth/{action}"), form={"client_id": "x"},
                                          headers={"Origin": console.base}, max_redirects=0)
            assert refused.status == 403, (action, refused.status)
        assert viewer.request.get(console.url(f"/sessions/{sid}/auth/token")).status == 403
        mine = owner.request.get(console.url(f"/sessions/{sid}/auth/token"))  # the owner may take it to a shell
        assert mine.ok and mine.text().strip() == secrets["access token"]
        replayed = viewer.request.get(console.url(f"/oauth/callback?{urlencode(callback)}"))
        assert replayed.status == 400, "a callback is used once"
        seen["a replayed callback"] = replayed.text()
        leaks = [(what, where) for what, value in secrets.items() for where, text in seen.items() if value in text]
        assert not leaks, leaks
    finally:
        viewer_context.close()


def test_stepping_through_pauses_before_each_step_until_continue_and_stop_fails_the_flow_naming_the_step(
        owner: Page, running: RunningConsole, protected_demo: str) -> None:
    open_session(owner, running.console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    form = open_auth_settings(owner)
    form.get_by_label(re.compile("step through")).check()
    save_settings(owner, form)
    expect(owner.locator("input[name=step_through]")).to_be_checked()

    owner.locator("#auth-stop").click()  # stopped on the authorization page
    status(owner).to_have_attribute("data-auth-status", "failed")
    expect(owner.locator("#auth-panel .auth-message")).to_contain_text("authorization")

    reconnect(owner).click()
    paused_before: list[str] = []
    for _ in range(12):
        expect(owner.locator(".auth-status[data-auth-status=paused], #auth-open, "
                             ".auth-status[data-auth-status=done]").first).to_be_visible(timeout=CONNECT_TIMEOUT_MS)
        if owner.locator(".auth-status[data-auth-status=done]").count():
            break
        if owner.locator("#auth-open").count():
            sign_in(owner)
            continue
        message = owner.locator("#auth-panel .auth-message").inner_text()
        paused_before.append(re.search(r"before the (.+) step", message)[1])  # type: ignore[index]
        owner.locator("#auth-continue").click()
        expect(owner.locator("#auth-panel .auth-message", has_text=message)).to_have_count(0)
    wait_live(owner)
    # The client registered by the stopped run is used again: that step has nothing to send, so no pause.
    assert paused_before == ["resource metadata", "server metadata", "authorization", "token"], paused_before
    expect(owner.locator('li.auth-step[data-step="registration"]')).to_contain_text("registered at")

    sign_out(owner)
    echo = open_tool(owner, "echo")
    echo.get_by_label(label("Text")).fill("never sent")
    echo.get_by_role("button", name="Call echo", exact=True).click()
    status(owner).to_have_attribute("data-auth-status", "paused")
    owner.locator("#auth-stop").click()
    status(owner).to_have_attribute("data-auth-status", "failed")
    stopped = "stopped by you before the resource metadata step"
    expect(owner.locator("#auth-panel .auth-message")).to_contain_text(stopped)
    expect(echo.locator(".result")).to_contain_text(f"OAuth stopped at the resource metadata step: {stopped}")


def test_a_restarted_console_keeps_the_tokens_and_reconnects_without_a_new_sign_in(
        tmp_path: Path, context: BrowserContext, protected_demo: str) -> None:
    first = RunningConsole(tmp_path)
    second: RunningConsole | None = None
    try:
        page = context.new_page()
        page.goto(first.console.launch_url)
        wait_live(page)
        sid = signed_in_session(page, first.console, protected_demo)
        claims = access_claims(page)
        assert wait_until(lambda: stored_oauth(tmp_path / "data", sid).get("grant"), 10.0)
        assert not first.terminate()

        second = RunningConsole(tmp_path)
        page.goto(second.console.launch_url)
        wait_live(page)
        page.goto(second.console.url(f"/sessions/{sid}"))
        again = reconnect(page)
        expect(page.locator("#session-status[data-status=connected]").or_(again).first).to_be_visible(
            timeout=CONNECT_TIMEOUT_MS)
        if again.count():
            again.click()
        wait_live(page)
        status(page).to_have_attribute("data-auth-status", "done")
        expect(page.locator("#auth-open")).to_have_count(0)
        assert access_claims(page)["sub"] == claims["sub"]
        call_echo(page, "after a restart")
        expect(page.locator("#timeline-list > li.entry", has_text="oauth: authorization")).to_have_count(1)
    finally:
        if second is not None:
            second.kill_all(second.terminate())
        first.kill_all(first.terminate())


def test_a_wrong_client_secret_fails_the_token_step_naming_the_rule_and_the_fix(
        owner: Page, running: RunningConsole, protected_demo: str, oidc_provider: OidcProvider) -> None:
    open_session(owner, running.console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    owner.locator("#auth-stop").click()
    status(owner).to_have_attribute("data-auth-status", "failed")
    form = open_auth_settings(owner)
    # The provider's pre-registered native client takes loopback redirects on any port: the console's 127.0.0.1.
    port = urlsplit(running.console.base).port
    form.get_by_label(re.compile(r"^Client id \(")).fill(oidc_provider.client_id)
    form.get_by_label(re.compile(r"^Client secret")).fill("not-the-secret")
    form.get_by_label("Redirect URI").fill(f"http://127.0.0.1:{port}/oauth/callback")
    save_settings(owner, form)
    reconnect(owner).click()
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    expect(owner.locator('li.auth-step[data-step="registration"]')).to_contain_text(
        f"pre-registered client id {oidc_provider.client_id} (set by you), with a client secret")
    sign_in(owner)

    status(owner).to_have_attribute("data-auth-status", "failed", timeout=CONNECT_TIMEOUT_MS)
    token = owner.locator('li.auth-step[data-step="token"]')
    expect(token).to_have_class(re.compile(r"\bst-failed\b"))
    expect(token.locator(".finding code")).to_have_text("oauth.token-refused")
    expect(token.locator(".fix")).to_contain_text("Fix:")
    expect(owner.locator("#auth-panel .auth-message")).to_contain_text("token")
    assert "not-the-secret" not in owner.content() + store_text(running.log.parent / "data")


def test_cancelling_on_the_providers_login_page_fails_the_callback_step_with_access_denied_and_a_fix(
        owner: Page, running: RunningConsole, protected_demo: str) -> None:
    open_session(owner, running.console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    with owner.context.expect_page() as opened:
        owner.locator("#auth-open").click()
    popup = opened.value
    popup.get_by_role("link", name="[ Cancel ]").click()  # oidc-provider's abort: error=access_denied
    popup.wait_for_url(re.compile(r"/sessions/"))
    popup.close()

    status(owner).to_have_attribute("data-auth-status", "failed")
    callback = owner.locator('li.auth-step[data-step="callback"]')
    expect(callback).to_have_class(re.compile(r"\bst-failed\b"))
    expect(callback.locator(".finding")).to_contain_text("oauth.authorization-refused")
    expect(callback.locator(".finding")).to_contain_text("access_denied")
    expect(callback.locator(".fix")).to_contain_text("Fix:")
    expect(owner.locator("#auth-panel .auth-message")).to_contain_text("callback: the authorization server refused")


def test_settings_typed_and_not_saved_survive_the_panel_pushed_when_the_flow_changes(
        owner: Page, running: RunningConsole, protected_demo: str) -> None:
    open_session(owner, running.console, protected_demo)
    status(owner).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    open_auth_settings(owner).get_by_label(re.compile(r"^Scope")).fill("mcp:read mcp:write")
    owner.locator("#auth-stop").click()
    status(owner).to_have_attribute("data-auth-status", "failed")
    expect(owner.get_by_role("form", name="OAuth settings").get_by_label(re.compile(r"^Scope"))).to_have_value(
        "mcp:read mcp:write")


def signed_in_session(page: Page, console: Console, url: str) -> str:
    sid = open_session(page, console, url)
    status(page).to_have_attribute("data-auth-status", "waiting", timeout=CONNECT_TIMEOUT_MS)
    sign_in(page)
    wait_live(page)
    return sid


def test_signing_out_then_calling_a_tool_registers_and_signs_in_anew(
        owner: Page, running: RunningConsole, protected_demo: str) -> None:
    signed_in_session(owner, running.console, protected_demo)
    sign_out(owner)
    echo = open_tool(owner, "echo")
    echo.get_by_label(label("Text")).fill("signed in again")
    echo.get_by_role("button", name="Call echo", exact=True).click()
    status(owner).to_have_attribute("data-auth-status", re.compile(r"^(waiting|failed)$"))
    assert owner.locator("#auth-panel .auth-status").get_attribute("data-auth-status") == "waiting", \
        owner.locator("#auth-panel .auth-message").inner_text()
    sign_in(owner)
    expect(echo.locator(".result pre.text-content")).to_have_text("signed in again")


def test_one_stop_ends_the_paused_flow_for_every_request_refused_with_it(
        owner: Page, running: RunningConsole, protected_demo: str) -> None:
    signed_in_session(owner, running.console, protected_demo)
    form = open_auth_settings(owner)
    form.get_by_label(re.compile("step through")).check()
    save_settings(owner, form)
    expect(owner.locator("input[name=step_through]")).to_be_checked()
    sign_out(owner)
    try:
        with owner.expect_response(lambda r: r.url.endswith("/refresh"), timeout=5_000):
            refresh_lists(owner)  # four lists, each refused
            status(owner).to_have_attribute("data-auth-status", "paused")
            owner.locator("#auth-stop").click()
        status(owner).to_have_attribute("data-auth-status", "failed")
    finally:  # no flow left paused: the module's console must stop at its teardown (see the SIGTERM test)
        answered: list[bool] = []
        owner.on("response", lambda r: answered.append(True) if r.url.endswith("/refresh") else None)
        for _ in range(8):
            stop = owner.locator("#auth-stop")
            expect(stop.or_(owner.locator(".auth-status[data-auth-status=failed]")).first).to_be_visible()
            if answered or not stop.count():
                break
            owner.locator("#auth-panel").evaluate("panel => { panel.dataset.before = '1'; }")
            stop.click()
            expect(owner.locator("#auth-panel:not([data-before])")).to_have_count(1)


def test_sigterm_stops_a_console_whose_flow_is_paused_while_a_request_waits_on_it(
        tmp_path: Path, context: BrowserContext, protected_demo: str) -> None:
    run = RunningConsole(tmp_path)
    try:
        page = context.new_page()
        page.goto(run.console.launch_url)
        wait_live(page)
        signed_in_session(page, run.console, protected_demo)
        form = open_auth_settings(page)
        form.get_by_label(re.compile("step through")).check()
        save_settings(page, form)
        sign_out(page)
        refresh_lists(page)  # its answer waits for the lists, which wait for the owner's Continue
        status(page).to_have_attribute("data-auth-status", "paused")
        run.proc.terminate()
        run.proc.wait(timeout=5)  # raises TimeoutExpired while the console still runs
    finally:
        run.kill_all(run.children | descendants(run.proc.pid))
