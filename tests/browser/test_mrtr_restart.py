"""An MRTR operation waiting for input survives a `kill -9` of the console: the 2026-07-28 revision keeps no state on
the server between rounds, so the retry needs only the original params, the last round's requestState and the
answers, and the console's fold holds the first two. After the restart the session shows the operation in the same
round with its dialog; answering it (once reconnected) completes it against the same server."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import RunningConsole, wait_live
from tests.browser.test_mrtr_dialogs import call_tool, idle, op_json, press, sent_params, settle, track

pytestmark = pytest.mark.browser


def test_an_operation_waiting_for_input_is_answered_after_a_kill_9_and_completes_against_the_same_server(
        tmp_path: Path, context: BrowserContext) -> None:
    first = RunningConsole(tmp_path)
    demo_server = set(first.children)  # `demo` started it in a session of its own: it outlives a kill -9
    second: RunningConsole | None = None
    try:
        page = track(context.new_page())
        page.goto(first.console.launch_url)
        wait_live(page)
        sid = first.console.session_id
        card = settle(page, call_tool(page, "two_step"), "awaiting_input")
        op = card.get_attribute("data-op")
        before = op_json(page, first.console, card)
        assert before["status"] == "awaiting_input" and len(before["rounds"]) == 1

        first.proc.kill()  # SIGKILL: nothing flushed on the way out
        first.proc.wait(timeout=10)

        second = RunningConsole(tmp_path)  # the same data directory: the same store, the same public name
        page.goto(second.console.launch_url)
        wait_live(page)
        page.goto(second.console.url(f"/sessions/{sid}"))
        expect(page.locator("#session-status")).to_have_attribute("data-status", "closed")
        asked = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        expect(asked).to_have_count(1)
        expect(asked.get_by_label("Your name", exact=True)).to_be_visible()

        page.get_by_role("button", name="Reconnect", exact=True).first.click()
        wait_live(page)
        idle(page)
        first_dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        first_dialog.get_by_label("Your name", exact=True).fill("Ada")
        press(page, first_dialog, "Accept")
        second_dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        expect(second_dialog.get_by_label("Confirm?", exact=True)).to_be_visible()
        second_dialog.get_by_label("Confirm?", exact=True).check()
        press(page, second_dialog, "Accept")

        data = page.request.get(second.console.url(f"/sessions/{sid}/operations/{op}.json")).json()
        assert data["status"] == "complete", data["status"]
        assert data["final"]["result"]["content"][0]["text"] == "hello Ada, confirmed=true"
        rounds = data["rounds"]
        assert rounds[0]["state"] == before["rounds"][0]["state"] is not None
        retried = sent_params(page, second.console, rounds[1]["key"])
        assert retried["requestState"] == before["rounds"][0]["state"], "requestState echoed byte for byte"
        assert retried["name"] == "two_step" and set(retried["inputResponses"]) == set(rounds[0]["input_keys"])
    finally:
        if second is not None:
            second.kill_all(second.terminate())
        first.kill_all(demo_server | (first.children if first.proc.poll() is None else set()))


def test_mcp_console_demo_stopped_and_started_again_takes_up_its_session_and_the_waiting_operation_completes(
        tmp_path: Path, context: BrowserContext) -> None:
    """`mcp-console demo` stops its demo server with it. Started again on the same data directory, the demo server
    listens on the port it had and seals requestState with the key kept there, and the console takes the restored
    session up again instead of opening another: what waited for input is answered against the same server."""
    first = RunningConsole(tmp_path)
    second: RunningConsole | None = None
    try:
        page = track(context.new_page())
        page.goto(first.console.launch_url)
        wait_live(page)
        sid = first.console.session_id
        card = settle(page, call_tool(page, "two_step"), "awaiting_input")
        op = card.get_attribute("data-op")
        before = op_json(page, first.console, card)
        first.kill_all(first.terminate())  # SIGTERM: the console stops, and its demo server with it
        assert not first.demo_port_open()

        second = RunningConsole(tmp_path)
        assert second.console.demo_url == first.console.demo_url, "the demo server listens where it did"
        assert second.console.session_id == sid, "the restored session is taken up, not a new one opened"
        page.goto(second.console.launch_url)
        wait_live(page)
        expect(page.locator("#session-status")).to_have_attribute("data-status", "connected")
        dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        dialog.get_by_label("Your name", exact=True).fill("Grace")
        press(page, dialog, "Accept")
        confirm = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        confirm.get_by_label("Confirm?", exact=True).check()
        press(page, confirm, "Accept")
        data = page.request.get(second.console.url(f"/sessions/{sid}/operations/{op}.json")).json()
        assert data["status"] == "complete", (data["status"], data["message"])
        assert data["final"]["result"]["content"][0]["text"] == "hello Grace, confirmed=true"
        assert data["rounds"][0]["state"] == before["rounds"][0]["state"]
        listed = page.request.get(second.console.url("/sessions.json")).json()["sessions"]
        assert [s["id"] for s in listed] == [sid]
        key = (tmp_path / "data" / "demo-state.key")
        assert key.stat().st_mode & 0o777 == 0o600
    finally:
        if second is not None:
            second.kill_all(second.terminate())
        if first.proc.poll() is None:
            first.kill_all(first.terminate())
