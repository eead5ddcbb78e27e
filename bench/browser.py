"""Headless Chromium for the browser benchmarks, launched as the tests launch it (`tests/chromium.py`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from playwright.sync_api import BrowserContext, CDPSession, Page, sync_playwright

from tests.chromium import launch_options

WS_OPEN_TIMEOUT_MS = 15_000


@contextlib.contextmanager
def chromium() -> Iterator[BrowserContext]:
    """A fresh browser and context; both are closed when the block ends, also on error."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(**launch_options())
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            try:
                yield context
            finally:
                context.close()
        finally:
            browser.close()


def open_session_page(context: BrowserContext, launch_url: str) -> Page:
    """Open the launch URL (sets the cookie, redirects to the session) and wait for the live websocket."""
    page = context.new_page()
    page.goto(launch_url, wait_until="load")
    page.wait_for_selector("body[data-ws=open]", state="attached", timeout=WS_OPEN_TIMEOUT_MS)
    return page


def page_metrics(cdp: CDPSession, page: Page) -> dict[str, Any]:
    """DOM and heap figures after a forced garbage collection, so the numbers are live objects only."""
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    counts = page.evaluate("""() => ({
        elements: document.getElementsByTagName('*').length,
        timeline: document.querySelectorAll('#timeline-list > li').length })""")
    return {"elements": counts["elements"], "timeline_entries": counts["timeline"],
            "dom_nodes": int(metrics.get("Nodes", 0)),
            "js_heap_mb": round(metrics.get("JSHeapUsedSize", 0) / 2**20, 2),
            "js_listeners": int(metrics.get("JSEventListeners", 0))}


def cdp_session(context: BrowserContext, page: Page) -> CDPSession:
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    return cdp
