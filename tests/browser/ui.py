"""Small page helpers shared by the browser tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, wait_live


@contextmanager
def session_of_its_own(page: Page, console: Console, form: dict[str, str]) -> Iterator[str]:
    """A session made from `form` (the home page's connect form) and opened live in `page`, deleted after: what a
    suite records there stays out of the shared demo session other browser tests measure."""
    headers = {"Accept": "application/json", "Origin": console.base}
    made = page.request.post(console.url("/sessions"), form=form, headers=headers)
    assert made.ok, made.text()
    sid = str(made.json()["id"])
    page.goto(console.url(f"/sessions/{sid}"))
    wait_live(page, CONNECT_TIMEOUT_MS)
    try:
        yield sid
    finally:
        page.request.post(console.url(f"/sessions/{sid}/delete"), headers={"Origin": console.base}, max_redirects=0)


def label(text: str) -> re.Pattern[str]:
    """A field's label, which may end in the required asterisk ('A *'); never a longer label that starts alike."""
    return re.compile(rf"^{re.escape(text)}(\s*\*)?$")


def open_tool(page: Page, name: str) -> Locator:
    """Opens a tool's form (clicking its summary only when it is closed, so calling twice works)."""
    item = page.locator(f'details.item[data-tool="{name}"]')
    if item.get_attribute("open") is None:
        item.locator(":scope > summary").click()
    try:
        expect(item.get_by_role("button", name=f"Call {name}", exact=True)).to_be_visible()
    except AssertionError as failed:  # say how the form's request went: never sent, pending, or refused
        state = item.evaluate("d => [d.open, d.dataset.loaded, d.querySelector('.lazy-body')?.dataset.status]")
        raise AssertionError(f"{name}'s form did not show: [open, loaded, status] = {state}") from failed
    return item


def delete_session_on_screen(page: Page) -> None:
    """Deletes the open session from the Share and export drawer, answering its "are you sure" step."""
    panel = page.locator("details.owner-panel")
    if panel.get_attribute("open") is None:
        panel.locator(":scope > summary").click()
    confirm = panel.locator("details.confirm-delete")
    confirm.locator(":scope > summary").click()
    confirm.get_by_role("button", name="Delete this session", exact=True).click()


def open_client_settings(page: Page) -> Locator:
    """Opens the Client settings drawer and waits for its forms."""
    page.locator("details.settings-panel > summary").click()
    settings = page.locator("#client-settings")
    expect(settings.get_by_role("button", name="Save roots", exact=True)).to_be_visible()
    return settings
