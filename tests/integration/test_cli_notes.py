"""`mcp-console call` says what the transport said, as the web timeline does: the era probe and its fallback, each
HTTP status line, a stream's notes. One line each on stderr (stdout stays the JSON a CI step reads), in order,
and the same notes in that JSON under `transport_notes`; a server's text in them never reaches the terminal as
the control characters it may hold.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import Seen, TinyHttp, child_env
from tests.legacy.fixtures import legacy_url

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 90.0
ESC_ID = "\x1b]0;pwned\x07\x1b[2Jevent-7"  # an SSE id that retitles the terminal and clears it
__all__ = ["legacy_url"]  # a fixture


def mcp_console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_call_in_auto_on_a_2025_server_says_the_probe_fell_back_and_each_http_status_in_order(
        legacy_url: str) -> None:
    done = mcp_console("call", legacy_url, "echo", "--arg", "text=noted", "--era", "auto")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["method"] == "tools/call" and out["result"]["content"][0]["text"] == "noted", out  # fields as before
    lines = done.stderr.splitlines()
    fallback = next(i for i, line in enumerate(lines) if "falling back to 2025-11-25" in line)
    assert "server/discover not served" in lines[fallback], lines
    called = next(i for i, line in enumerate(lines) if "tools/call" in line and "HTTP 200" in line)
    assert fallback < called, lines  # in the order they happened
    notes: list[dict[str, Any]] = out["transport_notes"]
    assert any("falling back to 2025-11-25" in n["note"] for n in notes), notes
    assert any(n.get("method") == "tools/call" and n.get("http_status") == 200 for n in notes), notes


def _answers_on_a_stream_with_the_id(tiny_http: TinyHttp, sse_id: str) -> str:
    """A server with one tool `t`, whose call is answered on an SSE stream under the event id `sse_id`; its URL."""
    def handler(seen: Seen) -> tuple[int, str, bytes]:
        message = seen.json()
        method, rid = message.get("method"), message.get("id")
        if method == "server/discover":
            return 200, "application/json", TinyHttp.result(rid, TinyHttp.discover(capabilities={"tools": {}}))
        if method == "tools/list":
            return 200, "application/json", TinyHttp.result(rid, {"tools": [
                {"name": "t", "inputSchema": {"type": "object"}}], "resultType": "complete"})
        answer = TinyHttp.result(rid, {"content": [{"type": "text", "text": "ok"}], "resultType": "complete"})
        return 200, "text/event-stream", f"id: {sse_id}\ndata: ".encode() + answer + b"\n\n"

    return tiny_http.start(handler).url


def test_a_note_holding_a_servers_escape_sequence_is_printed_without_the_escape_character(
        tiny_http: TinyHttp) -> None:
    done = mcp_console("call", _answers_on_a_stream_with_the_id(tiny_http, ESC_ID), "t", "--era", "modern")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr, done.stderr
    assert "\x1b" not in done.stdout, done.stdout
    said = [line for line in done.stderr.splitlines() if "event-7" in line]
    assert len(said) == 1 and "sse id=" in said[0] and "\\x1b]0;pwned\\x07" in said[0], done.stderr
    notes = json.loads(done.stdout)["transport_notes"]
    assert any(n["note"] == f"sse id={ESC_ID}" for n in notes), notes  # the JSON keeps the value, as JSON escapes


def test_check_says_the_transports_notes_on_stderr_and_in_its_json_report_as_call_does(demo_url: str) -> None:
    done = mcp_console("check", demo_url, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["target"] == demo_url and report["findings"] == [], report  # the report's fields as before
    notes: list[dict[str, Any]] = report["transport_notes"]
    assert any(n.get("method") == "server/discover" and n.get("http_status") == 200 for n in notes), notes
    assert any("server/discover" in line and "HTTP 200" in line for line in done.stderr.splitlines()), done.stderr
    text = mcp_console("check", demo_url)
    assert text.returncode == 0, text.stderr
    assert "rules checked" in text.stdout and "HTTP 200" not in text.stdout  # stdout stays the report
    assert any("server/discover" in line and "HTTP 200" in line for line in text.stderr.splitlines()), text.stderr


def test_a_servers_200_kb_sse_id_is_one_short_line_and_one_short_note_not_200_kb_of_each(
        tiny_http: TinyHttp) -> None:
    huge = "i" * 200_000

    done = mcp_console("call", _answers_on_a_stream_with_the_id(tiny_http, huge), "t", "--era", "modern")
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stderr.splitlines()) < 3_000, "a 200 KB line reached the terminal"
    [note] = [n["note"] for n in json.loads(done.stdout)["transport_notes"] if n["note"].startswith("sse id=")]
    assert len(note) < 3_000 and "more characters" in note
