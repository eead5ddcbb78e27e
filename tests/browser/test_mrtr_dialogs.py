"""MRTR in real Chromium: input_required rounds become dialogs, and the answers go back as retries.

Every test drives the console the way a person does (open a tool, call it, answer the dialogs by their labels)
and then checks what reached the demo server: its MRTR tools echo exactly the response value they received, and
the session's JSON (operations, rounds, raw wire frames) shows the retries themselves.

Pushed fragments (the websocket) and htmx responses both replace an operation's card. Before typing into a
dialog, `settle` waits until every htmx request of the tab has finished and the timeline entry of the operation
(updated by the same push as the card) shows the card's status and round count, so no late swap can wipe what
was typed.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, Request, Route, expect

from tests.browser.conftest import Console, open_launch_url, wait_live
from tests.browser.test_hostile_forms import connect
from tests.browser.ui import label, open_client_settings, open_tool
from tests.hostile.tools_fidelity import ODD_KEYS

if TYPE_CHECKING:
    from collections.abc import Callable


pytestmark = pytest.mark.browser

# Counts htmx requests started and finished in this tab. "Finished" is the XHR's loadend, which fires after htmx's
# load handler has swapped the response in. (htmx:afterRequest cannot be used: when a push has already replaced
# the card, the form that made the request is detached and its events never reach the document.)
TRACK_HTMX = """
(() => {
  if (window.__hx) return;
  window.__hx = {started: 0, done: 0};
  document.addEventListener("htmx:beforeRequest", (e) => {
    window.__hx.started += 1;
    e.detail.xhr.addEventListener("loadend", () => { window.__hx.done += 1; });
  });
})()
"""
ROUNDS = re.compile(r"(\d+) rounds?\b")
DEFAULT_CAP = 10


# --- helpers -------------------------------------------------------------------------------------------------------


def track(page: Page) -> Page:
    page.add_init_script(TRACK_HTMX)  # survives reloads
    page.evaluate(TRACK_HTMX)  # the page that is already open
    return page


def idle(page: Page) -> None:
    """Waits until every htmx request this tab started has been answered and swapped in."""
    page.wait_for_function("() => window.__hx && window.__hx.started === window.__hx.done")


def session_id(page: Page) -> str:
    return urlsplit(page.url).path.rsplit("/", 1)[-1]






def start(page: Page, item: Locator, button: str) -> Locator:
    """Clicks the button that starts an operation in `item` and returns the operation's card."""
    item.get_by_role("button", name=button, exact=True).click()
    card = item.locator(".result .operation[data-op]")
    expect(card).to_have_count(1)
    return card


def call_tool(page: Page, name: str) -> Locator:
    return start(page, open_tool(page, name), f"Call {name}")


def op_entry(page: Page, card: Locator) -> Locator:
    return page.locator(f'#timeline-list > li.entry.op[data-op="{card.get_attribute("data-op")}"]')


def rounds_shown(card: Locator) -> int:
    match = ROUNDS.search(card.locator(".op-head .help").inner_text())
    assert match, card.locator(".op-head").inner_text()
    return int(match[1])


def settle(page: Page, card: Locator, status: str) -> Locator:
    """Waits for the card to reach `status` and for every swap of it (htmx response, pushes) to have landed."""
    idle(page)
    expect(card).to_have_attribute("data-status", status)
    n = rounds_shown(card)
    entry = op_entry(page, card)
    expect(entry).to_have_attribute("data-status", status)
    expect(entry.locator(":scope > details > summary .notes")).to_have_text(
        re.compile(rf"^{n} round{'' if n == 1 else 's'}( ·|$)"))
    idle(page)
    expect(card).to_have_attribute("data-status", status)
    return card


def dialog(card: Locator, key: str | None = None) -> Locator:
    """The card's input requests: in the page's one "Awaiting your input" place, not in the card."""
    selector = (f'#inbox .inbox-op[data-op="{card.get_attribute("data-op")}"] section[role=dialog]'
                + (f'[data-key="{key}"]' if key else ""))
    return card.page.locator(selector)


def press(page: Page, where: Locator, button: str) -> None:
    """Clicks a dialog button (exact name) and waits until the answer's response has been swapped in."""
    where.get_by_role("button", name=button, exact=True).click()
    idle(page)


def op_json(page: Page, console: Console, card: Locator) -> dict[str, Any]:
    op = card.get_attribute("data-op")
    response = page.request.get(console.url(f"/sessions/{session_id(page)}/operations/{op}.json"))
    assert response.ok, response.status
    data: dict[str, Any] = response.json()
    return data


def sent_params(page: Page, console: Console, round_key: str) -> dict[str, Any]:
    """The params of the request a round sent, parsed from the raw frame that went out on the wire."""
    response = page.request.get(console.url(f"/sessions/{session_id(page)}/entries/{round_key}.json"))
    assert response.ok, response.status
    out = [w for w in response.json()["wire"] if w["direction"] == "out" and '"method"' in w["raw"]]
    assert len(out) == 1, out
    params: dict[str, Any] = json.loads(out[0]["raw"])["params"]
    return params


def echoed(card: Locator) -> Any:
    """What the demo tool echoed: the exact JSON it received, as text (sorted keys) and as structuredContent."""
    text = card.locator(".reply pre.text-content").inner_text()
    value = json.loads(text)
    assert text == json.dumps(value, sort_keys=True), text
    assert json.loads(card.locator(".reply pre.structured").inner_text()) == value
    return value


def awaiting_ops(page: Page, console: Console) -> set[str]:
    data = page.request.get(console.url(f"/sessions/{session_id(page)}.json")).json()
    return {op["op"] for op in data["operations"] if op["status"] == "awaiting_input"}


@pytest.fixture
def tab(page: Page, console: Console) -> Iterator[Page]:
    """The shared demo session's tab, tracking its htmx requests.

    Operations a test leaves awaiting input are abandoned afterwards, so the shared session's "Awaiting your
    input" panel does not grow with every test."""
    before = awaiting_ops(page, console)
    yield track(page)
    for op in awaiting_ops(page, console) - before:
        page.request.post(console.url(f"/sessions/{session_id(page)}/operations/{op}/abandon"),
                          headers={"Origin": console.base})


@pytest.fixture
def own_tab(context: BrowserContext, console: Console) -> Iterator[Page]:
    """A tab on a new session on the demo server, for tests that change the session's capabilities or roots
    (or need a session with nothing else awaiting input). The session is deleted afterwards."""
    page = context.new_page()
    open_launch_url(page, console)
    page.goto(console.url("/"))
    page.get_by_role("button", name="Connect to the demo server over HTTP", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    assert page.url != console.session_url, "connecting should open a new session"
    wait_live(page)
    track(page)
    sid = session_id(page)
    yield page
    deleted = page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base},
                                max_redirects=0)
    assert deleted.status == 303, deleted.status


# --- form elicitation ----------------------------------------------------------------------------------------------


def test_every_field_kind_of_profile_form_is_filled_by_its_label_and_the_server_receives_typed_json(
        tab: Page) -> None:
    card = settle(tab, call_tool(tab, "profile_form"), "awaiting_input")
    form = dialog(card, "profile")
    expect(form).to_have_attribute("data-kind", "form")
    expect(form.get_by_label("Homepage", exact=True)).to_have_value("https://example.com/")
    expect(form.get_by_label("Age", exact=True)).to_have_value("30")
    expect(form.get_by_label("Subscribe to the newsletter", exact=True)).to_be_checked()
    for required in ("Full name", "Email address", "Age", "Favourite colour"):
        expect(form.get_by_label(required, exact=True)).to_have_attribute("required", "")
    expect(form.get_by_label("Full name", exact=True)).to_have_accessible_description(
        "How should we address you? 2 to 40 characters.")

    form.get_by_label("Full name", exact=True).fill("Ada Lovelace")
    form.get_by_label("Email address", exact=True).fill("ada@example.org")
    form.get_by_label("Homepage", exact=True).fill("https://ada.example.org/notes")
    expect(form.get_by_label("Birthday", exact=True)).to_have_attribute("type", "date")
    expect(form.get_by_label("Birthday", exact=True)).to_have_value("")  # left empty: must not be sent
    form.get_by_label("Next meeting", exact=True).fill("2026-08-01T09:30:00Z")
    form.get_by_label("Height (m)", exact=True).fill("1.65")
    form.get_by_label("Age", exact=True).fill("41")
    form.get_by_label("Subscribe to the newsletter", exact=True).uncheck()
    form.get_by_label("Favourite colour", exact=True).select_option("blue")
    form.get_by_label("T-shirt size", exact=True).select_option(label="Large")
    form.get_by_label("Plan", exact=True).select_option(label="Pro tier")
    tags = form.get_by_role("group", name="Tags", exact=True)
    expect(tags.get_by_label("alpha", exact=True)).to_be_checked()  # the schema default
    tags.get_by_label("gamma", exact=True).check()
    toppings = form.get_by_role("group", name="Pizza toppings", exact=True)
    toppings.get_by_label("Extra cheese", exact=True).check()
    toppings.get_by_label("Olives", exact=True).check()
    form.get_by_label("nickname", exact=True).fill("Ada")

    press(tab, form, "Accept")

    settle(tab, card, "complete")
    got = echoed(card)
    assert got == {"action": "accept", "content": {
        "name": "Ada Lovelace", "email": "ada@example.org", "homepage": "https://ada.example.org/notes",
        "next_meeting": "2026-08-01T09:30:00Z", "height_m": 1.65, "age": 41, "subscribe": False,
        "color": "blue", "size": "l", "tier": "pro", "tags": ["alpha", "gamma"], "toppings": ["cheese", "olive"],
        "nickname": "Ada"}}, got
    content = got["content"]
    assert type(content["age"]) is int and type(content["height_m"]) is float
    assert content["subscribe"] is False
    assert "birthday" not in content
    text = card.locator(".reply pre.text-content").inner_text()
    assert '"age": 41,' in text and '"height_m": 1.65,' in text and '"subscribe": false' in text, text


def fill_invalid_profile(form: Locator) -> dict[str, Locator]:
    """Fills profile_form with values its schema forbids; returns the fields by property name."""
    fields = {name: form.get_by_label(label, exact=True) for name, label in (
        ("name", "Full name"), ("email", "Email address"), ("next_meeting", "Next meeting"), ("age", "Age"))}
    fields["name"].fill("A")
    fields["email"].fill("not-an-email")
    fields["next_meeting"].fill("2026-08-01 09:30")  # no zone: not RFC 3339
    fields["age"].fill("700")
    tags = form.get_by_role("group", name="Tags", exact=True)
    for tag in ("beta", "gamma", "delta"):  # with the default "alpha": 4 of at most 3
        tags.get_by_label(tag, exact=True).check()
    fields["tags"] = tags.get_by_label("alpha", exact=True)
    return fields


SERVER_ERRORS = {
    "name": "Must be at least 2 characters.",
    "email": "Enter an email address.",
    "next_meeting": "Enter a date and time as in 2026-07-28T09:30:00Z (RFC 3339, with a zone).",
    "age": "Must be at most 150.",
    "tags": "Choose at most 3.",
}


def test_invalid_answers_are_stopped_by_the_browser_and_by_the_server_and_no_retry_is_sent(
        tab: Page, console: Console) -> None:
    answers: list[Request] = []
    tab.on("request", lambda r: answers.append(r) if r.url.endswith("/answer") else None)
    card = settle(tab, call_tool(tab, "profile_form"), "awaiting_input")
    form = dialog(card, "profile")
    fields = fill_invalid_profile(form)
    expect(form.locator('.field-error[data-for="tags"]')).to_have_text("Choose at most 3.")  # console.js, live

    press(tab, form, "Accept")

    # The browser's own validation refuses to submit: nothing was posted and no retry went out.
    flaws = {"name": "tooShort", "email": "typeMismatch", "next_meeting": "patternMismatch", "age": "rangeOverflow",
             "tags": "customError"}
    for name, flaw in flaws.items():
        assert fields[name].evaluate(f"el => el.validity.{flaw}") is True, (name, flaw)
    assert form.locator("form").evaluate("f => f.checkValidity()") is False
    assert form.locator("form").evaluate("f => f.classList.contains('htmx-request')") is False
    assert answers == []
    data = op_json(tab, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 1, data

    # Without the browser's checks (novalidate), the server's own validation answers, beside each field.
    form.locator("form").evaluate("f => f.setAttribute('novalidate', '')")
    press(tab, form, "Accept")

    assert len(answers) == 1
    for name, message in SERVER_ERRORS.items():
        expect(form.locator(f'.field-error[data-for="{name}"]')).to_have_text(message)
    expect(form.locator(".field.invalid")).to_have_count(len(SERVER_ERRORS))
    expect(card).to_have_attribute("data-status", "awaiting_input")
    data = op_json(tab, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 1, data
    assert data["errors"]["profile"] == SERVER_ERRORS

    # A value no browser form can produce (a colour that is not offered), posted directly: refused as well.
    posted = tab.request.post(
        console.url(f"/sessions/{session_id(tab)}/operations/{card.get_attribute('data-op')}/answer"),
        headers={"Origin": console.base},
        form={"key": "profile", "action": "accept", "arg.name": "Ada", "arg.email": "ada@example.org",
              "arg.age": "30", "arg.color": "purple"})
    assert posted.ok, posted.status
    assert "Choose one of the offered values." in posted.text()
    data = op_json(tab, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 1, data
    assert data["errors"]["profile"] == {"color": "Choose one of the offered values."}


def test_a_form_refused_by_the_server_keeps_what_was_typed_beside_the_errors(tab: Page) -> None:
    card = settle(tab, call_tool(tab, "profile_form"), "awaiting_input")
    form = dialog(card, "profile")
    fill_invalid_profile(form)
    form.get_by_label("nickname", exact=True).fill("Ada")
    form.locator("form").evaluate("f => f.setAttribute('novalidate', '')")

    press(tab, form, "Accept")

    expect(form.locator('.field-error[data-for="name"]')).to_have_text(SERVER_ERRORS["name"])
    # The refused form has been swapped in (press waited for it): read the values as they are now.
    shown = {label: form.get_by_label(label, exact=True).input_value()
             for label in ("Full name", "Email address", "Age", "nickname")}
    assert shown == {"Full name": "A", "Email address": "not-an-email", "Age": "700", "nickname": "Ada"}
    assert form.get_by_role("group", name="Tags", exact=True).get_by_label("delta", exact=True).is_checked()


@pytest.mark.parametrize("action", ["Decline", "Cancel"])
def test_decline_and_cancel_send_the_matching_action_without_content(tab: Page, action: str) -> None:
    card = settle(tab, call_tool(tab, "profile_form"), "awaiting_input")

    press(tab, dialog(card, "profile"), action)

    settle(tab, card, "complete")
    assert echoed(card) == {"action": action.lower()}


def test_answer_with_defaults_names_the_required_fields_without_a_default_and_sends_nothing(
        tab: Page, console: Console) -> None:
    card = settle(tab, call_tool(tab, "profile_form"), "awaiting_input")

    press(tab, dialog(card, "profile"), "Answer with defaults")

    form = dialog(card, "profile")
    expect(form.locator('.field-error[data-for="name"]')).to_have_text("This field is required and has no default.")
    expect(form.locator('.field-error[data-for="email"]')).to_have_text("This field is required and has no default.")
    expect(form.locator('.field-error[data-for="age"]')).to_have_text("")  # it has a default
    data = op_json(tab, console, card)
    assert data["status"] == "awaiting_input" and len(data["rounds"]) == 1, data


def test_answer_with_defaults_sends_the_schema_defaults_when_every_required_field_has_one(
        tab: Page, console: Console) -> None:
    prompt = tab.locator('details.item[data-prompt="confirm_prompt"]')
    prompt.locator(":scope > summary").click()
    prompt.get_by_label(label("topic")).fill("tides")
    card = settle(tab, start(tab, prompt, "Get prompt confirm_prompt"), "awaiting_input")

    press(tab, dialog(card, "confirm_topic"), "Answer with defaults")

    settle(tab, card, "complete")
    expect(card.locator(".reply .message")).to_have_count(2)
    rounds = op_json(tab, console, card)["rounds"]
    assert sent_params(tab, console, rounds[1]["key"])["inputResponses"] == {
        "confirm_topic": {"action": "accept", "content": {"proceed": True}}}


# --- rounds, ids and requestState ------------------------------------------------------------------------------------


def test_two_step_takes_two_input_rounds_with_new_ids_and_each_retry_echoes_the_last_request_state(
        tab: Page, console: Console) -> None:
    card = settle(tab, call_tool(tab, "two_step"), "awaiting_input")
    first = dialog(card)
    expect(first).to_have_count(1)
    first.get_by_label("Your name", exact=True).fill("Grace")
    press(tab, first, "Accept")

    settle(tab, card, "awaiting_input")
    second = dialog(card)
    expect(second.get_by_label("Confirm?", exact=True)).to_be_visible()
    second.get_by_label("Confirm?", exact=True).check()
    press(tab, second, "Accept")

    settle(tab, card, "complete")
    expect(card.locator(".reply pre.text-content")).to_have_text("hello Grace, confirmed=true")

    data = op_json(tab, console, card)
    rounds = data["rounds"]
    assert len(rounds) >= 3, rounds  # name, confirmation, final answer
    ids = [r["request_id"] for r in rounds]
    assert len(set(ids)) == len(ids), ids
    assert [r["status"] for r in rounds[:2]] == ["input_required", "input_required"]
    assert rounds[0]["state"] is not None and rounds[1]["state"] is not None
    assert all(r["human_ms"] is not None and r["human_ms"] >= 0 for r in rounds[:2]), rounds  # answered by a person
    first_sent = sent_params(tab, console, rounds[0]["key"])
    assert "requestState" not in first_sent and "inputResponses" not in first_sent
    for before, after in itertools.pairwise(rounds):
        params = sent_params(tab, console, after["key"])
        assert params["requestState"] == before["state"], (before["n"], after["n"])
        assert params["name"] == "two_step"
        assert set(params["inputResponses"]) == set(before["input_keys"])

    expect(card.locator("details.rounds-box table.rounds tbody tr")).to_have_count(len(rounds))
    expect(card.locator(".op-head .help")).to_contain_text(f"{len(rounds)} rounds")
    entry = op_entry(tab, card)
    # Collapsed by default, with a one-line summary; open, a waterfall row per round.
    expect(entry.locator(":scope > details")).not_to_have_attribute("open", "")
    expect(entry.locator(".op-summary")).to_contain_text(f"{len(rounds)} rounds")
    entry.locator(":scope > details > summary").click()
    expect(entry.locator(".waterfall .wf-row")).to_have_count(len(rounds))
    inspectors = entry.locator("details.state-inspector")
    expect(inspectors).to_have_count(sum(1 for r in rounds if r["state"] is not None))
    for i, r in enumerate(r for r in rounds if r["state"] is not None):
        info = r["state_info"]
        assert info["size"] == len(r["state"].encode("utf-8"))
        summary = inspectors.nth(i).locator("summary")
        expect(summary).to_contain_text(f"{info['size']} B")
        expect(summary).to_contain_text(info["encoding"])
        inspectors.nth(i).locator("summary").click()
        expect(inspectors.nth(i).locator("pre.raw-state")).to_have_text(r["state"])


def test_several_input_requests_in_one_round_are_all_answered_before_a_single_retry(
        tab: Page, console: Console) -> None:
    roots = tab.request.get(console.url(f"/sessions/{session_id(tab)}.json")).json()["roots"]
    card = settle(tab, call_tool(tab, "multi_ask"), "awaiting_input")
    color, workspace = dialog(card, "favorite_color"), dialog(card, "workspace_roots")
    expect(color).to_have_attribute("data-kind", "form")
    expect(workspace).to_have_attribute("data-kind", "roots")
    expect(card.locator(".alert.info").first).to_contain_text("2 answers (0 given)")

    color.get_by_label("Favourite colour", exact=True).select_option("red")
    press(tab, color, "Accept")

    settle(tab, card, "awaiting_input")
    expect(card.locator(".alert.info").first).to_contain_text("2 answers (1 given)")
    expect(color.locator(".alert.ok")).to_contain_text("Answered.")
    expect(workspace.get_by_role("button", name="Send these roots", exact=True)).to_be_visible()
    data = op_json(tab, console, card)
    assert len(data["rounds"]) == 1 and data["answered"] == ["favorite_color"], data

    press(tab, workspace, "Send these roots")

    settle(tab, card, "complete")
    assert echoed(card) == {"favorite_color": {"action": "accept", "content": {"color": "red"}},
                            "workspace_roots": {"roots": roots}}
    assert len(op_json(tab, console, card)["rounds"]) == 2


def test_an_operation_that_always_wants_more_input_is_capped_after_ten_rounds(tab: Page, console: Console) -> None:
    card = call_tool(tab, "always_more")
    for n in range(1, DEFAULT_CAP):  # the last round's question is not asked: no retry could carry its answer
        settle(tab, card, "awaiting_input")
        assert rounds_shown(card) == n
        form = dialog(card, f"more_{n}")
        form.get_by_label(f"Round {n}: anything to add?", exact=True).fill(f"note {n}")
        press(tab, form, "Accept")

    settle(tab, card, "capped")
    expect(card.get_by_role("alert")).to_contain_text(f"the cap is {DEFAULT_CAP}")
    expect(card.get_by_role("alert")).to_contain_text(f"Stopped after {DEFAULT_CAP} rounds")
    expect(dialog(card)).to_have_count(0)
    data = op_json(tab, console, card)
    assert data["status"] == "capped" and len(data["rounds"]) == DEFAULT_CAP, data
    assert [r["input_keys"] for r in data["rounds"]] == [[f"more_{n}"] for n in range(1, DEFAULT_CAP + 1)]
    last = sent_params(tab, console, data["rounds"][-1]["key"])
    assert last["inputResponses"] == {f"more_{DEFAULT_CAP - 1}": {
        "action": "accept", "content": {"note": f"note {DEFAULT_CAP - 1}"}}}


def test_a_request_state_only_round_is_retried_at_once_without_any_dialog(tab: Page, console: Console) -> None:
    item = open_tool(tab, "state_only")
    tab.locator("#inbox").evaluate("""el => {
        window.__dialogSeen = false;
        new MutationObserver(() => { if (el.querySelector("section[role=dialog]")) window.__dialogSeen = true; })
          .observe(el, {childList: true, subtree: true});
    }""")

    card = settle(tab, start(tab, item, "Call state_only"), "complete")

    expect(card.locator(".reply pre.text-content")).to_have_text("done after state-only round")
    assert tab.evaluate("window.__dialogSeen") is False
    expect(card.locator('table.rounds tr[data-round="1"]')).to_contain_text("retried at once")
    data = op_json(tab, console, card)
    first, second = data["rounds"]
    assert first["retried_at_once"] is True and first["input_keys"] == [] and first["state"] is not None
    params = sent_params(tab, console, second["key"])
    assert params["requestState"] == first["state"] and "inputResponses" not in params
    assert first["request_id"] != second["request_id"]


# --- URL mode, sampling, roots -------------------------------------------------------------------------------------


def test_url_mode_shows_the_full_url_with_its_host_and_opens_nothing_until_clicked(
        tab: Page, context: BrowserContext) -> None:
    url = "https://example.com/demo-auth?step=1"
    fetched: list[Request] = []
    popups: list[Page] = []
    context.on("request", lambda r: fetched.append(r) if urlsplit(r.url).hostname == "example.com" else None)
    context.on("page", lambda p: popups.append(p))

    def sign_in_page(route: Route) -> None:
        route.fulfill(status=200, content_type="text/html", body="<title>demo sign-in</title>")

    context.route("https://example.com/**", sign_in_page)
    card = settle(tab, call_tool(tab, "open_link"), "awaiting_input")
    ask = dialog(card, "open_link")
    expect(ask).to_have_attribute("data-kind", "url")
    expect(ask.locator(".url-display")).to_have_text(url)
    expect(ask.locator("mark.url-host")).to_have_text("example.com")
    link = ask.locator("a.open-url")
    expect(link).to_have_attribute("href", url)
    expect(link).to_have_attribute("target", "_blank")
    rel = (link.get_attribute("rel") or "").split()
    assert "noopener" in rel and "noreferrer" in rel, rel
    assert fetched == [] and popups == [], "nothing may be fetched or opened before the click"

    with tab.expect_popup() as opened:
        link.click()
    popup = opened.value
    popup.wait_for_load_state()
    assert popup.url == url
    assert popup.evaluate("window.opener") is None
    visits = [r for r in fetched if r.is_navigation_request()]
    assert len(visits) == 1 and visits[0].headers.get("referer") is None, [r.headers for r in visits]
    popup.close()

    press(tab, ask, "Retry (accept)")
    settle(tab, card, "complete")
    expect(card.locator(".reply pre.text-content")).to_have_text("url accepted")


def test_declining_a_url_request_sends_decline(tab: Page) -> None:
    card = settle(tab, call_tool(tab, "open_link"), "awaiting_input")

    press(tab, dialog(card, "open_link"), "Decline")

    settle(tab, card, "complete")
    assert echoed(card) == {"action": "decline"}


def test_a_sampling_request_shows_the_messages_and_the_written_reply_goes_back_as_a_create_message_result(
        tab: Page) -> None:
    card = settle(tab, call_tool(tab, "ask_llm"), "awaiting_input")
    ask = dialog(card, "llm")
    expect(ask).to_have_attribute("data-kind", "sampling")
    expect(ask.locator("ol.sampling-messages > li")).to_have_count(1)
    expect(ask.locator("ol.sampling-messages > li")).to_contain_text("What is the capital of France?")
    facts = ask.locator("dl.sampling-facts")
    expect(facts.locator("dt").first).to_have_text("maxTokens")
    expect(facts.locator("dd").first).to_have_text("200")

    ask.get_by_label("Assistant reply", exact=True).fill("Paris, on the Seine.")
    ask.get_by_label("Model name", exact=True).fill("test-model-7")
    press(tab, ask, "Send reply")

    settle(tab, card, "complete")
    got = echoed(card)
    assert got["role"] == "assistant"
    assert got["content"] == {"type": "text", "text": "Paris, on the Seine."}
    assert got["model"] == "test-model-7"


def test_declining_a_sampling_request_ends_the_operation_without_a_retry(tab: Page, console: Console) -> None:
    card = settle(tab, call_tool(tab, "ask_llm"), "awaiting_input")

    press(tab, dialog(card, "llm"), "Decline")

    settle(tab, card, "abandoned")
    expect(card.get_by_role("alert")).to_contain_text("declined")
    expect(dialog(card)).to_have_count(0)
    data = op_json(tab, console, card)
    assert data["status"] == "abandoned" and len(data["rounds"]) == 1, data


def test_roots_edited_in_client_settings_are_previewed_and_sent_exactly(own_tab: Page, console: Console) -> None:
    roots = [{"uri": "file:///home/ada/analytical-engine", "name": "Engine notes"},
             {"uri": "file:///srv/punched-cards"}]
    settings = open_client_settings(own_tab)
    settings.get_by_label("Roots (one file://URI optional name per line)", exact=True).fill(
        "file:///home/ada/analytical-engine Engine notes\nfile:///srv/punched-cards\n")
    settings.get_by_role("button", name="Save roots", exact=True).click()
    expect(own_tab.locator("#client-settings > p[role=status]")).to_have_text("Saved.")
    saved = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}.json")).json()["roots"]
    assert saved == roots

    card = settle(own_tab, call_tool(own_tab, "list_roots"), "awaiting_input")
    ask = dialog(card, "roots")
    expect(ask).to_have_attribute("data-kind", "roots")
    assert json.loads(ask.locator("pre.roots-preview").inner_text()) == {"roots": roots}
    press(own_tab, ask, "Send these roots")

    settle(own_tab, card, "complete")
    assert echoed(card) == {"roots": roots}


# --- surviving a reload, missing capabilities, prompts and resources -------------------------------------------


def test_a_pending_dialog_survives_a_page_reload_and_can_be_answered_there(own_tab: Page, console: Console) -> None:
    card = settle(own_tab, call_tool(own_tab, "profile_form"), "awaiting_input")
    op = card.get_attribute("data-op")

    own_tab.reload()
    wait_live(own_tab)

    pending = own_tab.locator("#inbox")
    expect(pending.get_by_role("heading", name="Awaiting your input")).to_be_visible()
    expect(pending.locator(".inbox-op")).to_have_count(1)
    form = pending.locator(f'.inbox-op[data-op="{op}"] section[role=dialog][data-key="profile"]')
    form.get_by_label("Full name", exact=True).fill("Mary Somerville")
    form.get_by_label("Email address", exact=True).fill("mary@example.org")
    press(own_tab, form, "Accept")

    # No card after a reload: the timeline entry says it finished, and the heading goes with the dialog.
    expect(own_tab.locator(f'#timeline-list > li.entry.op[data-op="{op}"]')).to_have_attribute(
        "data-status", "complete")
    expect(pending.get_by_role("heading", name="Awaiting your input")).to_be_hidden()
    done = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}/operations/{op}.json")).json()
    got = json.loads(done["final"]["result"]["content"][0]["text"])
    assert got["action"] == "accept"
    assert got["content"]["name"] == "Mary Somerville" and got["content"]["email"] == "mary@example.org"
    assert got["content"]["age"] == 30 and type(got["content"]["age"]) is int


def test_a_missing_client_capability_is_named_and_enable_and_retry_brings_up_the_dialog(
        own_tab: Page, console: Console) -> None:
    settings = open_client_settings(own_tab)
    caps = settings.get_by_role("form", name="Client capabilities")
    for box in caps.get_by_role("checkbox").all():
        box.uncheck()
    caps.get_by_role("button", name="Save capabilities", exact=True).click()
    expect(own_tab.locator("#client-settings pre.caps-json")).to_have_text("{}")

    card = settle(own_tab, call_tool(own_tab, "profile_form"), "error")
    expect(card.get_by_role("alert").first).to_contain_text("elicitation")
    needed = card.locator(".alert.error pre")
    assert json.loads(needed.inner_text()) == {"elicitation": {"form": {}}}
    data = op_json(own_tab, console, card)
    assert data["required_capabilities"] == {"elicitation": {"form": {}}}
    assert data["final"]["error"]["code"] == -32021

    press(own_tab, card, "Enable and retry")

    settle(own_tab, card, "awaiting_input")
    expect(dialog(card, "profile").get_by_label("Full name", exact=True)).to_be_visible()
    data = op_json(own_tab, console, card)
    assert [r["status"] for r in data["rounds"]] == ["error", "input_required"]
    assert data["rounds"][0]["request_id"] != data["rounds"][1]["request_id"]
    caps_now = own_tab.request.get(console.url(f"/sessions/{session_id(own_tab)}.json")).json()
    assert caps_now["client_capabilities"] == {"elicitation": {"form": {}}}


def test_after_enable_and_retry_the_client_settings_show_the_enabled_capability(own_tab: Page) -> None:
    settings = open_client_settings(own_tab)
    caps = settings.get_by_role("form", name="Client capabilities")
    for box in caps.get_by_role("checkbox").all():
        box.uncheck()
    caps.get_by_role("button", name="Save capabilities", exact=True).click()
    expect(own_tab.locator("#client-settings pre.caps-json")).to_have_text("{}")
    card = settle(own_tab, call_tool(own_tab, "profile_form"), "error")

    press(own_tab, card, "Enable and retry")
    settle(own_tab, card, "awaiting_input")

    # Both are current once the answer and its pushes have landed (settle): no waiting for a change.
    settings = own_tab.locator("#client-settings")
    assert settings.get_by_label("elicitation: form", exact=True).is_checked()
    assert json.loads(settings.locator("pre.caps-json").inner_text()) == {"elicitation": {"form": {}}}


def test_saving_roots_says_saved_once_and_not_for_the_request_settings(own_tab: Page) -> None:
    settings = open_client_settings(own_tab)
    settings.get_by_label("Roots (one file://URI optional name per line)", exact=True).fill("file:///srv/x\n")
    settings.get_by_role("button", name="Save roots", exact=True).click()
    expect(own_tab.locator("#client-settings > p[role=status]")).to_have_text("Saved.")

    # The whole panel was swapped in at once: count what it says now.
    assert own_tab.get_by_role("form", name="Request settings").get_by_role("status").count() == 0
    assert own_tab.locator("#client-settings").get_by_role("status").count() == 1


def test_a_prompt_behind_an_elicitation_returns_its_messages_once_confirmed(tab: Page) -> None:
    prompt = tab.locator('details.item[data-prompt="confirm_prompt"]')
    prompt.locator(":scope > summary").click()
    prompt.get_by_label(label("topic")).fill("volcanoes")
    card = settle(tab, start(tab, prompt, "Get prompt confirm_prompt"), "awaiting_input")
    ask = dialog(card, "confirm_topic")
    expect(ask.locator(".dialog-message")).to_have_text("Build a prompt about 'volcanoes'?")
    expect(ask.get_by_label("Build this prompt?", exact=True)).to_be_checked()

    press(tab, ask, "Accept")

    settle(tab, card, "complete")
    messages = card.locator(".reply .message")
    expect(messages).to_have_count(2)
    expect(messages.nth(0)).to_contain_text("Let's talk about volcanoes.")
    expect(messages.nth(1)).to_contain_text("Start with the three most surprising facts about volcanoes.")


def test_a_guarded_resource_is_read_after_its_elicitation_is_answered(tab: Page) -> None:
    item = tab.locator("#group-resources div.item").filter(
        has=tab.get_by_role("form", name="Read demo://guarded", exact=True))
    card = settle(tab, start(tab, item, "Read guarded"), "awaiting_input")
    ask = dialog(card, "guarded_access")
    ask.get_by_label("Why do you need the guarded resource?", exact=True).fill("to test the console")

    press(tab, ask, "Accept")

    settle(tab, card, "complete")
    expect(card.locator(".reply pre.text-content")).to_have_text(
        "The guarded resource: access granted after an elicitation round.")


# -- Wire fidelity in real Chromium: a dialog answers the input request the server keyed, whatever the key.

def test_dialogs_keyed_with_nul_line_breaks_or_a_lone_surrogate_answer_the_keys_the_server_gave(
        context: BrowserContext, console: Console, hostile_http: Callable[..., str]) -> None:
    # The key went back in a hidden input as text: the HTML parser reads NUL as U+FFFD and a CR as LF, a form
    # posts line breaks as CRLF, and a lone surrogate has no form at all; the answer matched no request and the
    # dialog stayed for ever. It goes as JSON text (ASCII escapes), which survives the page.
    page, _, _ = connect(context, console, hostile_http("fidelity"))
    tool = open_tool(page, "odd_keys")
    tool.get_by_role("button", name="Call odd_keys", exact=True).click()
    dialogs = page.locator("#inbox section[role=dialog]")
    expect(dialogs).to_have_count(len(ODD_KEYS))
    for i in range(len(ODD_KEYS) - 1):  # each says it was answered (the retry waits for the last)
        dialogs.nth(i).get_by_role("button", name="Accept", exact=True).click()
        expect(dialogs.nth(i).locator(".alert.ok")).to_be_visible()
    dialogs.nth(len(ODD_KEYS) - 1).get_by_role("button", name="Accept", exact=True).click()
    expect(tool.locator(".result pre.text-content")).to_have_text(json.dumps(sorted(ODD_KEYS)))
