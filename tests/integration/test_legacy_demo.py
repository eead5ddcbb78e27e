"""Eras against the bundled demo server (the `mcp` SDK serves 2026-07-28 and 2025-11-25 on one endpoint)."""

from __future__ import annotations

import sys

from tests.integration.conftest import REPO_ROOT, Console

DEMO_STDIO = f"{sys.executable} -m app.demo --stdio"


def methods(session: dict) -> list[str]:  # type: ignore[type-arg]
    return [e.get("method") for e in reversed(session["timeline"]) if e.get("kind") == "exchange"]


async def test_demo_forced_legacy_over_http_initializes_and_calls_a_tool(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, era="legacy")
    assert s["status"] == "connected", s["status_message"]
    assert s["era"]["era"] == "legacy" and s["era"]["protocol_version"] == "2025-11-25"
    assert s["era"]["probe"] is None and "server/discover" not in methods(s)
    assert methods(s)[0] == "initialize" and any(t["name"] == "echo" for t in s["lists"]["tools"])
    reply = await console.call_tool(s["id"], "echo", text="hi")
    assert "hi" in str(reply), reply


async def test_demo_in_auto_stays_modern_and_says_discover_answered(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    assert s["era"]["era"] == "modern" and s["era"]["chosen"] == "auto"
    assert "server/discover answered" in s["era"]["reason"] and "initialize" not in methods(s)


async def test_demo_forced_legacy_over_stdio_initializes_and_calls_a_tool(console: Console) -> None:
    s = await console.connect(kind="stdio", command=DEMO_STDIO, cwd=str(REPO_ROOT), era="legacy")
    assert s["status"] == "connected", s["status_message"]
    assert s["era"]["era"] == "legacy" and methods(s)[0] == "initialize"
    reply = await console.call_tool(s["id"], "echo", text="over stdio")
    assert "over stdio" in str(reply), reply
