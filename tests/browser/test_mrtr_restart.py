"""An MRTR operation waiting for input survives a `kill -9` of the console: the 2026-07-28 revision keeps no state on
the server between rounds, so the retry needs only the original params, the last round's requestState and the
answers, and the console's fold holds them. After the restart the session shows the operation in the same round with
its dialog; answering it completes it against the same server."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import RunningConsole, alive, wait_live, wait_until
from tests.browser.test_mrtr_dialogs import call_tool, idle, op_json, press, sent_params, settle, track

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("stop", ["kill -9", "SIGTERM"])
def test_an_operation_waiting_for_input_is_answered_after_the_console_stops_and_completes_against_the_same_server(
        tmp_path: Path, context: BrowserContext, stop: str) -> None:
    """`mcp-console demo` stops its demo server with it, a `kill -9` included (the kernel stops it: no orphan keeps
    the port). Started again on the same data directory, the demo server listens on the port it had and seals
    requestState with the key kept there, and the console takes the restored session up again instead of opening
    another: the operation waiting in the same round is answered and completes, requestState echoed byte for byte."""
    first = RunningConsole(tmp_path)
    demo_server = set(first.children)
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
        if stop == "kill -9":
            first.proc.kill()  # SIGKILL: nothing flushed on the way out
            first.proc.wait(timeout=10)
            wait_until(lambda: not any(alive(pid) for pid in demo_server), 10.0)
        else:
            assert not first.terminate()
        assert not first.demo_port_open()

        second = RunningConsole(tmp_path)  # the same data directory: the same store, the same public name
        assert second.console.demo_url == first.console.demo_url, "the demo server listens where it did"
        assert second.console.session_id == sid, "the restored session is taken up, not a new one opened"
        page.goto(second.console.launch_url)
        wait_live(page)
        expect(page.locator("#session-status")).to_have_attribute("data-status", "connected")
        idle(page)
        first_dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        first_dialog.get_by_label("Your name", exact=True).fill("Ada")
        press(page, first_dialog, "Accept")
        second_dialog = page.locator(f'#inbox .inbox-op[data-op="{op}"] section[role=dialog]')
        expect(second_dialog.get_by_label("Confirm?", exact=True)).to_be_visible()
        second_dialog.get_by_label("Confirm?", exact=True).check()
        press(page, second_dialog, "Accept")

        data = page.request.get(second.console.url(f"/sessions/{sid}/operations/{op}.json")).json()
        assert data["status"] == "complete", (data["status"], data["message"])
        assert data["final"]["result"]["content"][0]["text"] == "hello Ada, confirmed=true"
        rounds = data["rounds"]
        assert rounds[0]["state"] == before["rounds"][0]["state"] is not None
        retried = sent_params(page, second.console, rounds[1]["key"])
        assert retried["requestState"] == before["rounds"][0]["state"], "requestState echoed byte for byte"
        assert retried["name"] == "two_step" and set(retried["inputResponses"]) == set(rounds[0]["input_keys"])
        listed = page.request.get(second.console.url("/sessions.json")).json()["sessions"]
        assert [s["id"] for s in listed] == [sid]
        assert (tmp_path / "data" / "demo-state.key").stat().st_mode & 0o777 == 0o600
    finally:
        if second is not None:
            second.kill_all(second.terminate())
        first.kill_all(demo_server | (first.children if first.proc.poll() is None else set()))

