"""The HAR of a session on the 2024-11-05 HTTP+SSE transport: each message is a POST to the endpoint the stream
named, answered 202, and its JSON-RPC answer comes later on the GET stream. The export says all of that.

Against the real legacy test server (`tests/legacy/server.py --sse-2024`) as its own process on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.headless import report
from app.mcp.client import ClientConfig, McpClient
from app.mcp.era import LegacyEra
from app.mcp.handshake import initialize
from app.mcp.sse_transport import HttpSseTransport
from app.mcp.wire import WireEvent
from tests.integration.conftest import Console, child_env
from tests.legacy.fixtures import legacy_server

__all__ = ["legacy_server"]  # a fixture
ROOT = Path(__file__).resolve().parents[2]


def _entry_of(har: dict[str, Any], method: str) -> dict[str, Any]:
    found = [e for e in har["log"]["entries"] if e["request"].get("postData")
             and json.loads(e["request"]["postData"]["text"]).get("method") == method]
    assert len(found) == 1, [e["request"].get("postData") for e in har["log"]["entries"]]
    return found[0]


def _answers(content: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON-RPC frames in a HAR content rebuilt as SSE (`data:` lines)."""
    return [json.loads(line[len("data: "):]) for line in content["text"].splitlines() if line.startswith("data: ")]


async def test_a_2024_sse_tools_call_is_in_the_har_as_its_post_to_the_endpoint_with_the_answer_from_the_stream(
        console: Console, legacy_server: Callable[..., str]) -> None:
    url = legacy_server("--sse-2024")
    s = await console.connect(kind="http", url=url, headers="", era="sse-2024")
    assert s["status"] == "connected", s["status_message"]
    reply = await console.call_tool(s["id"], "echo", text="over the old stream")
    assert reply["status"] == "complete", reply
    for query, shown_session in (("", False), ("?secrets=1", True)):
        response = await console.http.get(f"/sessions/{s['id']}/export.har{query}")
        assert response.status_code == 200, response.text
        entry = _entry_of(response.json(), "tools/call")
        request = entry["request"]
        posted = urlsplit(request["url"])
        assert request["method"] == "POST" and posted.path == "/messages", request["url"]
        assert posted.netloc == urlsplit(url).netloc, request["url"]
        # The endpoint's ?sessionId= binds a POST to its stream, a credential: masked unless the owner asks.
        assert posted.query.startswith("sessionId=") and (len(posted.query) > 20) is shown_session, posted.query
        sent = json.loads(request["postData"]["text"])
        assert sent["params"]["name"] == "echo" and sent["params"]["arguments"] == {"text": "over the old stream"}
        sent_headers = {h["name"].lower(): h["value"] for h in request["headers"]}
        assert sent_headers["content-type"] == "application/json", sent_headers
        answer = entry["response"]
        assert answer["status"] == 202 and answer["statusText"] == "Accepted", answer
        assert {h["name"].lower() for h in answer["headers"]} >= {"content-length"}, answer["headers"]
        assert answer["bodySize"] == 0, "the POST's own answer had no body"
        final = _answers(answer["content"])[-1]
        assert final["id"] == sent["id"] and final["result"]["content"] == [
            {"type": "text", "text": "over the old stream"}], answer["content"]
        assert "SSE stream" in answer["content"]["comment"], answer["content"]
    key = reply["key"]
    command = (await console.http.get(f"/sessions/{s['id']}/entries/{key}/curl")).text
    assert "/messages?sessionId=" in command and "needs a live SSE stream" in command, command


async def test_the_cli_har_of_a_2024_sse_call_agrees_with_the_consoles(legacy_server: Callable[..., str]) -> None:
    # The HAR writer of `call` given what this transport records, beside the console's (same process, no CLI).
    url = legacy_server("--sse-2024")
    events: list[WireEvent] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None)) as http:
        transport = HttpSseTransport(url, http, events.append)
        client = McpClient(transport, ClientConfig(client_info={"name": "t", "version": "0"},
                                                   capabilities=dict, era=LegacyEra(), idle_timeout_s=10.0))
        await transport.start()
        try:
            await initialize(client)
            reply = await client.request("tools/call", {"name": "echo", "arguments": {"text": "headless"}})
        finally:
            await client.close()
    assert reply.result is not None, reply.error
    entry = _entry_of(report.har(events, url), "tools/call")
    assert urlsplit(entry["request"]["url"]).path == "/messages", entry["request"]["url"]
    assert entry["response"]["status"] == 202 and entry["response"]["bodySize"] == 0, entry["response"]
    assert _answers(entry["response"]["content"])[-1]["result"]["content"][0]["text"] == "headless"
    assert "SSE stream" in entry["response"]["content"]["comment"] and entry["_mcp"]["answeredOn"] == "sse-stream"


def test_call_with_era_sse_2024_runs_the_tool_over_the_older_transport_and_its_har_shows_the_post_and_the_stream(
        legacy_server: Callable[..., str], tmp_path: Path) -> None:
    url = legacy_server("--sse-2024")
    har_path = tmp_path / "call.har"
    done = subprocess.run([sys.executable, "-m", "app", "call", url, "echo", "--arg", "text=over sse",
                           "--era", "sse-2024", "--har", str(har_path)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["result"]["content"][0]["text"] == "over sse", out
    assert any("initialize: " in line and "--era sse-2024" in line for line in done.stderr.splitlines()), \
        done.stderr
    entry = _entry_of(json.loads(har_path.read_text()), "tools/call")
    assert urlsplit(entry["request"]["url"]).path == "/messages", entry["request"]["url"]
    assert entry["response"]["status"] == 202 and entry["_mcp"]["answeredOn"] == "sse-stream"
    assert _answers(entry["response"]["content"])[-1]["result"]["content"][0]["text"] == "over sse"


def test_call_refuses_era_sse_2024_with_a_stdio_command() -> None:
    done = subprocess.run([sys.executable, "-m", "app", "call", "--stdio", "true", "echo", "--era", "sse-2024"],
                          cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=90,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "--era sse-2024 is an HTTP transport" in done.stderr, done.stderr
