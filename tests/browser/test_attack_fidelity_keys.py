"""Wire fidelity in real Chromium: a dialog answers the input request the server keyed, whatever the key."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import Console
from tests.browser.test_hostile_forms import connect
from tests.browser.ui import open_tool
from tests.hostile.tools_fidelity import ODD_KEYS

if TYPE_CHECKING:
    from collections.abc import Callable


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
