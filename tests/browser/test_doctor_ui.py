"""The connection doctor in real Chromium: a failed connect shows the check list, the failed step with what to do,
and the steps after it skipped; the owner runs it again, or on a connected session, with "Run the doctor"."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, Console, open_launch_url
from tests.integration.doctor_targets import refused_port

pytestmark = pytest.mark.browser


def test_a_failed_connect_shows_the_doctors_check_list_with_the_failed_step_and_its_fix(
        page: Page, console: Console) -> None:
    open_launch_url(page, console)
    with refused_port() as port:
        page.goto(console.url("/"))
        page.get_by_label("Server URL").fill(f"http://127.0.0.1:{port}/mcp")
        page.get_by_role("button", name="Connect", exact=True).click()
        problem = page.get_by_role("region", name="Connection problem")
        expect(problem).to_contain_text("Could not connect", timeout=CONNECT_TIMEOUT_MS)
        doctor = problem.get_by_role("region", name="Connection doctor")
        failed = doctor.locator('li[data-status="fail"]')
        expect(failed).to_have_count(1, timeout=CONNECT_TIMEOUT_MS)
        expect(failed).to_contain_text("TCP connect")
        expect(failed).to_contain_text("refused the connection")
        expect(failed.locator(".fix")).to_contain_text(f"Nothing listens on port {port}")
        expect(doctor.locator('li[data-status="ok"]')).to_contain_text("name resolution")
        expect(doctor.locator('li[data-status="skipped"]').first).to_contain_text("not run: TCP connect failed")
        expect(doctor).to_contain_text("failed at TCP connect")
        expect(page.locator("#timeline-list")).to_contain_text("doctor: TCP connect failed")

        doctor.get_by_role("button", name="Run the doctor").click()  # again, at will: the list comes back
        expect(page.get_by_role("region", name="Connection doctor").locator('li[data-status="fail"]')).to_contain_text(
            "TCP connect", timeout=CONNECT_TIMEOUT_MS)


def test_the_owner_runs_the_doctor_on_the_connected_demo_session_and_every_step_passes(
        page: Page, console: Console) -> None:
    open_launch_url(page, console)
    page.locator("details.doctor-box > summary").click()
    page.get_by_role("button", name="Run the doctor").click()
    doctor = page.get_by_role("region", name="Connection doctor")
    expect(doctor).to_contain_text("every step passed", timeout=CONNECT_TIMEOUT_MS)
    expect(doctor.locator('li[data-status="fail"]')).to_have_count(0)
    expect(doctor.locator('li[data-status="warn"]')).to_contain_text("CORS for browser hosts")
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected")
    # The report is open on every load from now on; it spans the head, and never squeezes the session's name into
    # a column one letter wide (its longest line used to take the whole width, hiding "Rename").
    page.reload()
    expect(page.locator("details.doctor-box")).to_have_attribute("open", "")
    heading, head = page.locator("#session-head h1").bounding_box(), page.locator("#session-head").bounding_box()
    assert heading is not None and head is not None and heading["width"] >= head["width"] / 3, (heading, head)
    expect(page.locator("details.rename > summary")).to_be_visible()
