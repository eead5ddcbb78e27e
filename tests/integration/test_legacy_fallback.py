"""Auto against a server that only speaks 2025-11-25: the probe is refused, shown, and initialize follows."""

from __future__ import annotations

import json
import shlex
from typing import Any

from tests.integration.conftest import REPO_ROOT, Console
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url

__all__ = ["legacy_url"]


def exchanges(session: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in reversed(session["timeline"]) if e.get("kind") == "exchange"]


def notices(session: dict[str, Any]) -> list[str]:
    return [str(e.get("message")) for e in session["timeline"] if e.get("kind") == "notice"]


async def test_auto_falls_back_to_initialize_when_http_discover_is_refused_and_labels_the_probe(
        console: Console, legacy_url: str) -> None:
    s = await console.connect(kind="http", url=legacy_url)
    assert s["status"] == "connected", s["status_message"]
    probe, init = exchanges(s)[0], exchanges(s)[1]
    assert probe["method"] == "server/discover" and probe["status"] == "error"
    assert init["method"] == "initialize" and init["status"] == "ok"
    assert any(n.startswith("probe: server/discover not served (HTTP 400") for n in notices(s)), notices(s)
    assert s["era"]["era"] == "legacy" and s["era"]["probe"] == probe["key"]
    assert "not initialized" in s["era"]["reason"] and s["server"]["info"]["name"] == "legacy-only"
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    assert "2025-11-25" in page and "probe refused" in page


async def test_legacy_http_calls_carry_the_session_id_and_negotiated_version(
        console: Console, legacy_url: str) -> None:
    s = await console.connect(kind="http", url=legacy_url)
    reply = await console.call_tool(s["id"], "headers")
    seen = json.loads(_text(reply))
    assert seen["mcp-protocol-version"] == "2025-11-25" and seen["mcp-session-id"]


async def test_closing_a_legacy_http_session_deletes_it_on_the_server(console: Console, legacy_url: str) -> None:
    s = await console.connect(kind="http", url=legacy_url)
    await console.manager.get(s["id"]).close()
    after = await console.session(s["id"])
    assert any("DELETE" in n and "HTTP 200" in n for n in notices(after)), notices(after)


async def test_auto_falls_back_over_stdio_on_method_not_found_and_calls_a_tool(console: Console) -> None:
    s = await console.connect(kind="stdio", command=shlex.join(LEGACY_STDIO), cwd=str(REPO_ROOT))
    assert s["status"] == "connected", s["status_message"]
    assert s["era"]["era"] == "legacy" and "-32601" in s["era"]["reason"]
    assert "stdio" in _text(await console.call_tool(s["id"], "echo", text="stdio"))


def _text(reply: dict[str, Any]) -> str:
    """The first text content of a tools/call reply, wherever the JSON twin puts the result."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "text" and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(reply)
    assert found, reply
    return found[0]
