"""A new user's first hour in a real browser, against servers nobody here wrote: server-memory started from the
stdio form with its environment, killed and restarted from its page; server-filesystem keeping the directory it
was started on, then given the owner's roots."""

from __future__ import annotations

import os
import re
import shlex
import signal
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import Console
from tests.browser.ui import open_client_settings, open_tool
from tests.realservers.fixtures import (
    ROOT,
    fastmcp_url,
    filesystem_argv,
    memory_argv,
    needs_fastmcp,
    needs_filesystem,
    needs_memory,
)

__all__ = ["fastmcp_url"]  # a fixture, used by name
SLOW_MS = 60_000
STARTED = re.compile(r"started pid (\d+)")


def _pid(page: Page, console: Console) -> int:
    sid = page.url.rsplit("/", 1)[1]
    data = page.request.get(console.url(f"/sessions/{sid}.json")).json()
    found = [int(m.group(1)) for e in data["timeline"] for m in [STARTED.search(str(e.get("message") or ""))] if m]
    return found[0]


def _start_stdio(page: Page, console: Console, command: str, env: str = "", cwd: str = "") -> None:
    page.goto(console.url("/"))
    page.get_by_label("Command to start the server").fill(command)
    page.get_by_label("Working directory (optional)").fill(cwd)
    if env:
        page.get_by_label(re.compile(r"^Environment")).fill(env)
    page.get_by_role("button", name="Start and connect", exact=True).click()
    expect(page).to_have_url(re.compile(r"/sessions/[^/?#]+$"))
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=SLOW_MS)


@needs_memory
def test_server_memory_started_with_its_environment_is_restarted_from_its_page_after_it_dies(
        page: Page, console: Console, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    _start_stdio(page, console, shlex.join(memory_argv()), env=f"MEMORY_FILE_PATH={memory}", cwd=str(ROOT))
    tool = open_tool(page, "read_graph")
    tool.get_by_role("button", name="Call read_graph", exact=True).click()
    expect(tool.locator(".result .operation")).to_have_count(1, timeout=SLOW_MS)

    os.kill(_pid(page, console), signal.SIGTERM)
    restart = page.get_by_role("button", name="Restart the server", exact=True)
    expect(restart).to_be_visible(timeout=SLOW_MS)
    restart.click()
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=SLOW_MS)
    expect(page.locator("#timeline-list")).to_contain_text("started pid", timeout=SLOW_MS)


@needs_filesystem
def test_server_filesystem_keeps_its_own_directory_until_the_owner_sets_roots(
        page: Page, console: Console, tmp_path: Path) -> None:
    started, chosen = tmp_path / "started", tmp_path / "chosen"
    started.mkdir()
    chosen.mkdir()
    _start_stdio(page, console, shlex.join(filesystem_argv(started)), cwd=str(ROOT))
    tool = open_tool(page, "list_allowed_directories")
    tool.get_by_role("button", name="Call list_allowed_directories", exact=True).click()
    expect(tool.locator(".result")).to_contain_text(str(started), timeout=SLOW_MS)

    settings = open_client_settings(page)
    settings.get_by_label("Roots (one file://URI optional name per line)", exact=True).fill(f"{chosen.as_uri()} Mine")
    settings.get_by_role("button", name="Save roots", exact=True).click()
    expect(page.locator("#timeline-list")).to_contain_text(f"answered at once with 1 root: {chosen.as_uri()}",
                                                           timeout=SLOW_MS)
    tool.get_by_role("button", name="Call list_allowed_directories", exact=True).click()
    expect(tool.locator(".result .operation").first).to_contain_text(str(chosen), timeout=SLOW_MS)


@needs_fastmcp
def test_a_fastmcp_tool_shows_its_hints_and_answers_a_call(page: Page, console: Console, fastmcp_url: str) -> None:
    page.goto(console.url("/"))
    page.get_by_label("Server URL").fill(fastmcp_url)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page.locator("#session-status")).to_have_attribute("data-status", "connected", timeout=SLOW_MS)
    row = page.locator('details.item[data-tool="add"]')
    expect(row.locator(":scope > summary .badge.hint", has_text="read-only")).to_be_visible()
    expect(row.locator(":scope > summary")).to_contain_text("Adds two numbers.")  # closed, and the description shows
    tool = open_tool(page, "add")
    tool.get_by_label(re.compile(r"^a\b")).fill("2")
    tool.get_by_label(re.compile(r"^b\b")).fill("3")
    tool.get_by_role("button", name="Call add", exact=True).click()
    expect(tool.locator(".result .operation")).to_contain_text("5", timeout=SLOW_MS)
    expect(page.locator("#session-head h1")).to_contain_text("Notes Server")
