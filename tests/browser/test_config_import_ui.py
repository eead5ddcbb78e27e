"""Importing config files in real Chromium: a Claude Desktop file pasted and a VS Code file uploaded, the preview
with a secret masked, sessions created, and a stdio server that starts only when the owner clicks Connect."""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import CONNECT_TIMEOUT_MS, ROOT, Console, wait_live, wait_until

SECRET = "sk-claude-file-31337"


def processes_marked(mark: str) -> list[int]:
    """The processes of this user whose environment holds `mark` (a stdio server started with it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if mark.encode() in environ:
                found.append(int(entry))
    return found


def owner_page(context: BrowserContext, console: Console) -> Page:
    page = context.new_page()
    page.goto(console.launch_url)
    expect(page).to_have_url(console.session_url)
    page.goto(console.url("/"))
    return page


def test_a_pasted_claude_desktop_file_previews_masked_and_its_stdio_server_starts_only_on_connect(
        context: BrowserContext, console: Console) -> None:
    mark = f"mark-{secrets.token_hex(6)}"
    config = {"mcpServers": {
        "demo-over-stdio": {"command": sys.executable, "args": ["-m", "app.demo", "--stdio"], "cwd": str(ROOT),
                            "env": {"DEMO_API_KEY": SECRET, "IMPORT_MARK": mark}, "x-kept": True},
        "demo-over-http": {"url": console.demo_url}}}
    page = owner_page(context, console)
    page.get_by_label("Paste a config file").fill(json.dumps(config))
    page.get_by_role("button", name="Preview the import").click()

    table = page.locator("table.config-servers")
    expect(table.locator("tr[data-server='demo-over-stdio']")).to_contain_text("DEMO_API_KEY=••••••")
    expect(table.locator("tr[data-server='demo-over-stdio']")).to_contain_text("secret, masked")
    expect(table.locator("tr[data-server='demo-over-stdio']")).to_contain_text("x-kept")
    assert SECRET not in table.inner_text()
    page.get_by_role("button", name="Create sessions").click()

    expect(page).to_have_url(console.url("/"))
    row = page.locator("table.sessions tr", has_text="demo-over-stdio")
    expect(row).to_contain_text("new")
    assert processes_marked(mark) == [], "the import itself must start no process"
    row.get_by_role("link", name="demo-over-stdio").click()
    expect(page.locator("#session-status")).to_have_attribute("data-status", "new")
    assert processes_marked(mark) == []
    page.get_by_role("button", name="Connect", exact=True).click()
    wait_live(page, CONNECT_TIMEOUT_MS)
    assert wait_until(lambda: processes_marked(mark) != [], 10.0), "Connect should start the server"


def test_an_uploaded_vs_code_file_asks_for_its_password_input_and_masks_it(
        context: BrowserContext, console: Console, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("""{
      // .vscode/mcp.json
      "inputs": [{"type": "promptString", "id": "service-key", "description": "Service key", "password": true}],
      "servers": {"vs-demo": {"type": "http", "url": "%s", "headers": {"X-Service": "${input:service-key}"}}}
    }""".replace("%s", console.demo_url))
    page = owner_page(context, console)
    page.get_by_label("or choose a config file").set_input_files(str(config))
    page.get_by_role("button", name="Preview the import").click()

    expect(page.locator("tr[data-server='vs-demo']")).to_contain_text("header X-Service")
    expect(page.locator("tr[data-server='vs-demo']")).to_contain_text("secret, masked")
    key = page.get_by_label("service-key: Service key (secret)")
    expect(key).to_have_attribute("type", "password")
    key.fill("vs-typed-secret-9")
    page.get_by_role("button", name="Create sessions").click()

    expect(page.locator("#session-status")).to_have_attribute("data-status", "new")  # one server: its page
    expect(page.locator("#session-head .target")).to_contain_text("X-Service: ••••••")
    page.get_by_role("button", name="Connect", exact=True).click()
    wait_live(page, CONNECT_TIMEOUT_MS)
    assert "vs-typed-secret-9" not in page.locator("#session-head").inner_text()
