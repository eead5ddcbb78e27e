"""Failures are shown, not fatal: a broken target fails its own session, and the console keeps serving.

Each target here is real: a refused port, processes that die or never start, and tiny HTTP servers
(stdlib `http.server` on 127.0.0.1) that answer HTML, broken JSON, the wrong id, odd SSE or too much.
"""

from __future__ import annotations

import shlex
import socket
import sys
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.integration.conftest import Console, Seen, TinyHttp
import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.conftest import Console

# Answers discover with whatever RESULT says (the test writes it), and every other request with an empty result.


async def _still_serves(console: Console, demo_url: str) -> None:
    """The console lists its sessions and connects a second, good session."""
    response = await console.http.get("/sessions.json")
    assert response.status_code == 200
    assert isinstance(response.json()["sessions"], list)
    good = await console.connect(kind="http", url=demo_url, headers="")
    assert good["status"] == "connected", good["status_message"]
    assert good["lists"]["tools"]


def _shown(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Timeline entries that tell what went wrong: a failed exchange or a warning/error notice."""
    return [e for e in s["timeline"]
            if (e["kind"] == "exchange" and e.get("status") == "error")
            or (e["kind"] == "notice" and e.get("level") in ("warning", "error"))]


def _failed(s: dict[str, Any], *fragments: str) -> None:
    assert s["status"] == "failed", s
    message = s["status_message"]
    for fragment in fragments:
        assert fragment.lower() in message.lower(), f"{fragment!r} not in status_message {message!r}"
    assert _shown(s), f"nothing on the timeline says what went wrong: {s['timeline']!r}"


def _refused_port() -> int:
    """A port that was ours a moment ago and now refuses connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _json(body: bytes) -> tuple[int, str, bytes]:
    return 200, "application/json", body


# --- nothing to talk to ------------------------------------------------------------------


async def test_a_refused_url_fails_the_session_and_the_console_keeps_serving(
        console: Console, demo_url: str) -> None:
    url = f"http://127.0.0.1:{_refused_port()}/mcp"
    s = await console.connect(kind="http", url=url, headers="")
    _failed(s, "could not reach", "connection failed")
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    assert discover["method"] == "server/discover" and discover["status"] == "error"
    assert discover["http_status"] is None
    # The request is on the record although it never reached a socket, before the note that says why.
    wire = (await console.entry(s["id"], discover["key"]))["wire"]
    assert [w["direction"] for w in wire][:2] == ["out", "transport"], wire
    assert "could not reach" in (wire[1].get("note") or "")
    await _still_serves(console, demo_url)


async def test_a_stdio_command_that_exits_at_once_fails_the_session(console: Console, demo_url: str) -> None:
    command = shlex.join([sys.executable, "-c", "import sys; sys.exit(3)"])
    s = await console.connect(kind="stdio", command=command)
    _failed(s, "exited")
    notices = [e["message"] for e in s["timeline"] if e["kind"] == "notice"]
    assert any(m.startswith("started pid") for m in notices), notices
    assert any("code 3" in m for m in notices) or "code 3" in s["status_message"], (notices, s["status_message"])
    await _still_serves(console, demo_url)


async def test_a_stdio_command_that_does_not_exist_fails_the_session(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="stdio", command="/nonexistent/mcp-console-no-such-server --stdio")
    _failed(s, "could not start", "/nonexistent/mcp-console-no-such-server")
    notices = [e for e in s["timeline"] if e["kind"] == "notice"]
    assert any("could not start" in e["message"] for e in notices), notices
    await _still_serves(console, demo_url)


# --- HTTP servers that are not (good) MCP servers ----------------------------------------


def _web_page(seen: Seen) -> tuple[int, str, bytes]:
    if seen.path == "/":
        return 200, "text/html", b"<html>hello</html>"
    return 404, "text/html", b"<html>not found</html>"


@pytest.mark.parametrize(("path", "status"), [("/", 200), ("/mcp", 404)], ids=["html-page", "html-404"])
async def test_an_http_endpoint_that_is_not_mcp_fails_the_session_with_its_http_status(
        console: Console, demo_url: str, tiny_http: TinyHttp, path: str, status: int) -> None:
    server = tiny_http.start(_web_page)
    s = await console.connect(kind="http", url=server.base + path, headers="")
    _failed(s, f"HTTP {status}")
    assert "JSON-RPC" in s["status_message"] or "MCP" in s["status_message"], s["status_message"]
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    assert discover["status"] == "error" and discover["http_status"] == status
    assert server.requests and server.requests[0].method == "POST"
    await _still_serves(console, demo_url)


@pytest.mark.parametrize(("path", "status"), [
    ("/", 200),
    ("/mcp", 404),
], ids=["html-page", "html-404"])
async def test_the_failure_message_says_the_endpoint_answered_html_and_is_not_mcp(
        console: Console, tiny_http: TinyHttp, path: str, status: int) -> None:
    server = tiny_http.start(_web_page)
    s = await console.connect(kind="http", url=server.base + path, headers="")
    _failed(s, f"HTTP {status}", "HTML", "not look like an MCP endpoint")


async def test_malformed_json_fails_the_session_and_the_raw_body_is_kept(
        console: Console, demo_url: str, tiny_http: TinyHttp) -> None:
    truncated = b'{"jsonrpc": "2.0", "id": 1, "result": '
    server = tiny_http.start(lambda seen: _json(truncated))
    s = await console.connect(kind="http", url=server.url, headers="")
    _failed(s, "malformed JSON")
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    wire = (await console.entry(s["id"], discover["key"]))["wire"]
    incoming = [w for w in wire if w["direction"] == "in"]
    assert incoming and incoming[0]["raw"] == truncated.decode()
    assert incoming[0]["kind"] == "invalid" and "malformed JSON" in incoming[0]["problem"]
    await _still_serves(console, demo_url)


async def test_a_response_with_the_wrong_id_is_flagged_with_a_warning(
        console: Console, demo_url: str, tiny_http: TinyHttp) -> None:
    def wrong_id(seen: Seen) -> tuple[int, str, bytes]:
        return _json(tiny_http.result(seen.json()["id"] + 1000, tiny_http.discover()))

    server = tiny_http.start(wrong_id)
    s = await console.connect(kind="http", url=server.url, headers="")
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    assert discover["id"] == 1
    assert any("1001" in w and "does not match" in w for w in discover["warnings"]), discover["warnings"]
    await _still_serves(console, demo_url)


async def test_sse_with_crlf_comments_and_an_empty_priming_event_connects(
        console: Console, tiny_http: TinyHttp) -> None:
    def sse(seen: Seen) -> tuple[int, str, bytes]:
        final = tiny_http.result(seen.json()["id"], tiny_http.discover(instructions="over SSE"))
        body = b": keep-alive comment\r\nid: 0\r\ndata:\r\n\r\nid: 1\r\nevent: message\r\ndata: " + final + b"\r\n\r\n"
        return 200, "text/event-stream", body

    server = tiny_http.start(sse)
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected", s["status_message"]
    assert s["server"]["info"]["name"] == "tiny"
    assert s["server"]["instructions"] == "over SSE"
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    assert discover["status"] == "ok" and discover["http_status"] == 200 and discover["warnings"] == []
    assert not [e for e in s["timeline"] if e["kind"] == "notice" and e.get("level") == "warning"]


@pytest.mark.parametrize("framing", ["json", "sse"])
async def test_a_response_larger_than_max_message_bytes_fails_with_a_clear_message(
        make_console: Any, demo_url: str, tiny_http: TinyHttp, framing: str) -> None:
    console: Console = make_console(max_message_bytes=100_000)

    def huge(seen: Seen) -> tuple[int, str, bytes]:
        body = tiny_http.result(seen.json()["id"], tiny_http.discover(instructions="x" * 200_000))
        if framing == "sse":
            return 200, "text/event-stream", b"event: message\ndata: " + body + b"\n\n"
        return _json(body)

    server = tiny_http.start(huge)
    s = await console.connect(kind="http", url=server.url, headers="")
    _failed(s, "than 100000 bytes")
    await _still_serves(console, demo_url)


async def test_extra_headers_from_the_form_are_sent_and_shown_on_the_wire(
        console: Console, tiny_http: TinyHttp) -> None:
    server = tiny_http.start(lambda seen: _json(tiny_http.result(seen.json()["id"], tiny_http.discover())))
    s = await console.connect(kind="http", url=server.url, headers="X-Team: blue\nX-Trace-Id: abc-123\n")
    assert s["status"] == "connected", s["status_message"]
    [seen] = server.requests
    assert seen.headers["x-team"] == "blue" and seen.headers["x-trace-id"] == "abc-123"
    assert seen.headers["mcp-method"] == "server/discover"
    [discover] = [e for e in s["timeline"] if e["kind"] == "exchange"]
    [out] = [w for w in (await console.entry(s["id"], discover["key"]))["wire"] if w["direction"] == "out"]
    assert ["X-Team", "blue"] in out["headers"]  # as typed: names keep their case on the record


async def test_a_header_line_without_a_colon_is_refused_before_anything_starts(console: Console) -> None:
    response = await console.http.post("/sessions", data={"kind": "http", "url": "http://127.0.0.1:9/mcp",
                                                          "headers": "not a header"},
                                       headers={"Accept": "application/json"})
    assert response.status_code == 400
    assert "Name: value" in response.json()["error"]
    assert console.manager.sessions == {}


# -- A server whose discover answer (or prompt list) has the right keys and the wrong shapes.
#
# The session's page reads the answer's capabilities and versions to draw its header and its listen form: a
# capability that is a string (`"tools": "yes"`) or versions that are a number made the page of that session,
# and its JSON twin, fail for as long as the session was kept, for the owner and every link holder alike. The
# answer stays on the timeline as the server sent it; the page shows what of it has the shape it needs.

SERVER = textwrap.dedent('''
    import json, sys
    RESULT = json.loads(sys.argv[1])
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        result = RESULT if msg.get("method") == "server/discover" else {}
        if msg.get("method") == "prompts/list":
            result = {"prompts": [{"name": "n", "arguments": 7}, {"name": "s", "arguments": ["x", 5, {"name": 1}]}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
''')

SHAPES = {
    "a capability that is a string": {"capabilities": {"tools": "yes", "prompts": 1, "resources": [1]}},
    "versions that are a number": {"supportedVersions": 7, "capabilities": {}},
    "versions of objects": {"supportedVersions": [{"v": 1}], "capabilities": {}},
    "capabilities that are a list": {"supportedVersions": ["2026-07-28"], "capabilities": ["tools"]},
    "server info that is a string": {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": "x"},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_a_discover_answer_of_the_wrong_shapes_leaves_the_sessions_page_and_json_working(
        console: Console, tmp_path: Path, shape: str) -> None:
    script = tmp_path / "shapes_server.py"
    script.write_text(SERVER)
    result = {"supportedVersions": ["2026-07-28"], **SHAPES[shape]}
    command = shlex.join([sys.executable, str(script), json.dumps(result)])
    sid = await console.create(kind="stdio", command=command)
    s = await console.settled(sid)
    assert s["status"] in ("connected", "failed"), s["status_message"]
    for path in (f"/sessions/{sid}", f"/sessions/{sid}.json", "/"):
        response = await console.http.get(path)
        assert response.status_code == 200, (path, response.text[:300])


async def test_a_prompt_whose_arguments_are_not_a_list_of_objects_leaves_the_page_and_prompts_get_working(
        console: Console, tmp_path: Path) -> None:
    # "arguments": 7 made the session's page raise (the prompt form iterates them), and a prompts/get of it
    # answered 500; a string among the arguments, the same in prompts/get.
    script = tmp_path / "shapes_server.py"
    script.write_text(SERVER)
    result = {"supportedVersions": ["2026-07-28"], "capabilities": {"prompts": {}}}
    sid = await console.create(kind="stdio", command=shlex.join([sys.executable, str(script), json.dumps(result)]))
    s = await console.settled(sid)
    assert s["status"] == "connected", s["status_message"]
    assert (await console.http.get(f"/sessions/{sid}")).status_code == 200
    for name in ("n", "s"):
        response = await console.http.post(f"/sessions/{sid}/prompts/get", data={"prompt": name},
                                           headers={"Accept": "application/json"})
        assert response.status_code == 200, response.text[:300]
