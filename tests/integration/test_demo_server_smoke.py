"""Smoke tests for the bundled demo server (`python -m app.demo`), against a real process.

Raw JSON-RPC over httpx (HTTP) and newline-delimited JSON over pipes (stdio), exactly as
a 2026-07-28 client puts it on the wire - no SDK client, no mocks.
"""

from __future__ import annotations

import itertools
import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import child_env, pump, stop_process

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = "2026-07-28"
STARTUP_TIMEOUT_S = 30.0
IO_TIMEOUT_S = 15.0

FULL_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}

EXPECTED_TOOLS = {
    "echo", "add", "profile_form", "open_link", "ask_llm", "list_roots", "two_step", "always_more",
    "state_only", "multi_ask", "progress_fast", "progress_slow", "long_job", "cancellations",
    "add_tool", "touch_resource", "weather", "media", "fail", "regional", "log_demo", "html_trap",
    "counter_app", "bump_counter", "reset_counter",
}  # fmt: skip

_ids = itertools.count(1)


def _meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": FULL_CAPS if caps is None else caps,
        "io.modelcontextprotocol/clientInfo": {"name": "demo-smoke-test", "version": "0.0.1"},
        **extra,
    }


def _request(method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    caps = meta.pop("caps", None)
    body_params = dict(params or {})
    body_params["_meta"] = _meta(caps, **meta)
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": body_params}





# --- HTTP ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.demo", "--port", str(port)],
        cwd=REPO_ROOT,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(target=pump, args=(proc.stderr, lines), daemon=True).start()
    try:
        expected = f"demo server listening on http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        seen: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or proc.poll() is not None:
                pytest.fail(f"demo server did not become ready; stderr so far: {''.join(seen)!r}")
            try:
                line = lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            seen.append(line)
            if line.strip() == expected:
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=IO_TIMEOUT_S) as http:
        yield http


def _headers(body: dict[str, Any]) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": body["method"],
    }
    params = body.get("params") or {}
    if body["method"] in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params["name"]
    elif body["method"] == "resources/read":
        headers["Mcp-Name"] = params["uri"]
    return headers


def _sse_messages(text: str) -> list[dict[str, Any]]:
    """Parse an SSE body: CRLF or LF, comments ignored, `data:` lines joined per event."""
    messages: list[dict[str, Any]] = []
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line == "":
            if data and "".join(data).strip():
                messages.append(json.loads("\n".join(data)))
            data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data and "".join(data).strip():
        messages.append(json.loads("\n".join(data)))
    return messages


def _post(
    http: httpx.Client, url: str, body: dict[str, Any]
) -> tuple[httpx.Response, dict[str, Any], list[dict[str, Any]]]:
    """POST one request; return (response, final JSON-RPC message, notifications before it)."""
    response = http.post(url, json=body, headers=_headers(body))
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = _sse_messages(response.text)
    else:
        messages = [response.json()]
    finals = [m for m in messages if m.get("id") == body["id"]]
    assert len(finals) == 1, messages
    return response, finals[0], [m for m in messages if "id" not in m]


def _call(http: httpx.Client, url: str, method: str, params: dict[str, Any], **meta: Any) -> dict[str, Any]:
    response, message, _ = _post(http, url, _request(method, params, **meta))
    assert response.status_code == 200, message
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


def _answer_form(request: dict[str, Any]) -> dict[str, Any]:
    """Fill whatever small form two_step asks for, by field name."""
    properties = request["params"]["requestedSchema"]["properties"]
    content: dict[str, Any] = {}
    if "name" in properties:
        content["name"] = "Ada"
    if "confirm" in properties:
        content["confirm"] = True
    return {"action": "accept", "content": content}


def test_server_discover(client: httpx.Client, base_url: str) -> None:
    result = _call(client, base_url, "server/discover", {})
    assert result["resultType"] == "complete"
    assert PROTOCOL in result["supportedVersions"]
    caps = result["capabilities"]
    assert caps["tools"]["listChanged"] is True
    assert caps["prompts"]["listChanged"] is True
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert "completions" in caps and "logging" in caps
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-console-demo"
    assert "profile_form" in result["instructions"]


def test_tools_list_has_every_demo_tool(client: httpx.Client, base_url: str) -> None:
    result = _call(client, base_url, "tools/list", {})
    names = {tool["name"] for tool in result["tools"]}
    assert names >= EXPECTED_TOOLS, EXPECTED_TOOLS - names
    regional = next(tool for tool in result["tools"] if tool["name"] == "regional")
    assert regional["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


def test_echo(client: httpx.Client, base_url: str) -> None:
    result = _call(client, base_url, "tools/call", {"name": "echo", "arguments": {"text": "hi <b>there</b>"}})
    assert result["content"] == [{"type": "text", "text": "hi <b>there</b>"}]
    assert not result.get("isError")


def test_add_is_structured(client: httpx.Client, base_url: str) -> None:
    result = _call(client, base_url, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert result["content"][0]["text"] == "42"
    assert result["structuredContent"] == {"sum": 42}


def test_profile_form_echoes_raw_types(client: httpx.Client, base_url: str) -> None:
    params: dict[str, Any] = {"name": "profile_form", "arguments": {}}
    first = _call(client, base_url, "tools/call", params)
    assert first["resultType"] == "input_required"
    [(key, request)] = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    schema = request["params"]["requestedSchema"]
    assert schema["properties"]["tier"]["enumNames"] == ["Free tier", "Pro tier"]
    assert schema["properties"]["age"]["type"] == "integer"
    state = first["requestState"]

    answer = {
        "action": "accept",
        "content": {"name": "Ada", "email": "ada@example.com", "age": 7, "color": "red", "nickname": "7"},
    }
    retry = dict(params, inputResponses={key: answer}, requestState=state)
    final = _call(client, base_url, "tools/call", retry)
    assert final["resultType"] == "complete"
    echoed = final["structuredContent"]
    assert echoed == answer
    assert type(echoed["content"]["age"]) is int  # not coerced to str/float
    assert echoed["content"]["nickname"] == "7"  # not coerced to int
    assert final["content"][0]["text"] == json.dumps(answer, sort_keys=True)

    declined = _call(
        client, base_url, "tools/call", dict(params, inputResponses={key: {"action": "decline"}}, requestState=state)
    )
    assert declined["structuredContent"] == {"action": "decline"}


def test_two_step_takes_two_rounds(client: httpx.Client, base_url: str) -> None:
    params: dict[str, Any] = {"name": "two_step", "arguments": {}}
    retry: dict[str, Any] = dict(params)
    rounds = 0
    for _ in range(5):
        result = _call(client, base_url, "tools/call", retry)
        if result["resultType"] == "complete":
            break
        assert result["resultType"] == "input_required"
        rounds += 1
        responses = {key: _answer_form(req) for key, req in result["inputRequests"].items()}
        retry = dict(params, inputResponses=responses, requestState=result["requestState"])
    else:
        pytest.fail("two_step never completed")
    assert rounds == 2
    assert result["content"][0]["text"] == "hello Ada, confirmed=true"


def test_state_only_round(client: httpx.Client, base_url: str) -> None:
    params: dict[str, Any] = {"name": "state_only", "arguments": {}}
    first = _call(client, base_url, "tools/call", params)
    assert first["resultType"] == "input_required"
    assert "inputRequests" not in first and first["requestState"]
    final = _call(client, base_url, "tools/call", dict(params, requestState=first["requestState"]))
    assert final["content"][0]["text"] == "done after state-only round"


def test_missing_capability_is_32021(client: httpx.Client, base_url: str) -> None:
    body = _request("tools/call", {"name": "ask_llm", "arguments": {}}, caps={})
    response, message, _ = _post(client, base_url, body)
    assert response.status_code == 400
    assert message["error"]["code"] == -32021
    assert message["error"]["data"]["requiredCapabilities"] == {"sampling": {}}


def test_progress_arrives_over_sse(client: httpx.Client, base_url: str) -> None:
    body = _request("tools/call", {"name": "progress_fast", "arguments": {"count": 25}}, progressToken="p-1")
    response, message, notes = _post(client, base_url, body)
    assert response.headers["content-type"].startswith("text/event-stream")
    progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in progress] == list(range(1, 26))
    assert all(p["progressToken"] == "p-1" and p["total"] == 25 for p in progress)
    assert message["result"]["content"][0]["text"] == "sent 25"


def test_long_job_cancel_by_closing_stream(client: httpx.Client, base_url: str) -> None:
    body = _request("tools/call", {"name": "long_job", "arguments": {"seconds": 30}}, progressToken="job")
    with client.stream("POST", base_url, json=body, headers=_headers(body)) as response:
        for line in response.iter_lines():
            if "notifications/progress" in line:
                break  # the job is running; leaving the block closes the stream = cancel
    deadline = time.monotonic() + IO_TIMEOUT_S
    while time.monotonic() < deadline:
        result = _call(client, base_url, "tools/call", {"name": "cancellations", "arguments": {}})
        records = json.loads(result["content"][0]["text"])
        if any(record["request_id"] == str(body["id"]) for record in records):
            return
        time.sleep(0.1)
    pytest.fail("the server never recorded the long_job cancellation")


# --- stdio -----------------------------------------------------------------------------


class _StdioPeer:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, self.lines), daemon=True).start()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = _request(method, params)
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(body) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + IO_TIMEOUT_S
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                break
            message: dict[str, Any] = json.loads(line)  # every stdout line must be a JSON-RPC message
            if message.get("id") == body["id"]:
                return message
        pytest.fail(f"no stdio response to {method}")


def test_stdio_round_trip() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.demo", "--stdio"],
        cwd=REPO_ROOT,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        peer = _StdioPeer(proc)
        discover = peer.request("server/discover", {})
        assert PROTOCOL in discover["result"]["supportedVersions"]

        echo = peer.request("tools/call", {"name": "echo", "arguments": {"text": "over stdio"}})
        assert echo["result"]["content"][0]["text"] == "over stdio"

        params: dict[str, Any] = {"name": "profile_form", "arguments": {}}
        first = peer.request("tools/call", params)["result"]
        assert first["resultType"] == "input_required"
        [key] = first["inputRequests"]
        answer = {"action": "accept", "content": {"name": "Bo", "email": "bo@example.com", "age": 7, "color": "blue"}}
        final = peer.request(
            "tools/call", dict(params, inputResponses={key: answer}, requestState=first["requestState"])
        )
        assert final["result"]["structuredContent"] == answer
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        stop_process(proc)
