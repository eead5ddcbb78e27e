"""How tests and benchmarks launch Chromium through Playwright.

Playwright's own browser download cannot work on machines without internet access, so a system
Chromium (Debian's `chromium`, /usr/bin/chromium) is preferred when present. Elsewhere the normal
Playwright-managed browser is used, so `playwright install chromium` keeps working for users.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def system_chromium() -> str | None:
    explicit = os.environ.get("MCP_CONSOLE_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def launch_options() -> dict[str, Any]:
    options: dict[str, Any] = {"headless": True, "args": list(CHROMIUM_FLAGS)}
    path = system_chromium()
    if path:
        options["executable_path"] = path
    return options
