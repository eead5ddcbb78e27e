"""`mcp-console call` says what the transport said, as the web timeline does: the era probe and its fallback, each
HTTP status line, a stream's notes. One line each on stderr (stdout stays the JSON a CI step reads), in order,
and the same notes in that JSON under `transport_notes`; a server's text in them never reaches the terminal as
the control characters it may hold.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Seen, TinyHttp, mcp_console
from tests.legacy.fixtures import legacy_url

# Then format characters a terminal shows as nothing: a soft hyphen, and tag characters that spell "rm" unseen.


ESC_ID = "\x1b]0;pwned\x07\x1b[2Jevent-7"  # an SSE id that retitles the terminal and clears it
__all__ = ["legacy_url"]  # a fixture




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


# -- `mcp-console check` and `call` in a CI job against a hostile server.
#
# What the server may try: die half way through a check after a clean discover, or answer discover with an error
# (the job must not pass: a crash, or nothing checked, is no clean run), and put terminal control sequences in
# every string it sends (an OSC that retitles the terminal, a cursor move or a carriage return that paints
# "ALL GOOD" over the report, a C1 CSI, a bidi override): what the console writes to stdout shows them as
# escapes, never as the bytes a terminal acts on.

ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[1;32mALL GOOD\x1b[0m\r\n0 errors\u009b31m\u202e\u00ad\U000e0072\U000e006d"

# A well-behaved server (cache fields and all, so the linter finds nothing) that misbehaves as MODE says.
SERVER = textwrap.dedent('''
    import json, sys
    MODE, ESC = sys.argv[1], json.loads(sys.argv[2])
    CACHE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method, out = msg.get("method"), {"jsonrpc": "2.0", "id": msg["id"]}
        if MODE == "silent":
            continue
        if MODE == "refuses everything":
            out["error"] = {"code": -32601, "message": "nope " + ESC}
        elif method == "server/discover" and MODE == "internal error on discover":
            out["error"] = {"code": -32603, "message": "internal error"}
        elif method == "server/discover":
            out["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, **CACHE}
        elif method == "tools/list":
            if MODE == "exit on tools/list":
                sys.exit(3)
            out["result"] = {"tools": [{"name": "t", "inputSchema": {"type": "object"},
                                        "annotations": {"readOnlyHint": True}}], **CACHE}
        elif method == "tools/call":
            if MODE == "exit on tools/call":
                sys.exit(3)
            if MODE == "escapes in an error":
                out["error"] = {"code": -32000, "message": ESC}
            else:
                out["result"] = {"content": [{"type": "text", "text": ESC}], "resultType": "complete"}
        else:
            out["result"] = {"resultType": "complete"}
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
''')


def _server(tmp_path: Path, mode: str) -> str:
    script = tmp_path / "cli_target.py"
    script.write_text(SERVER)
    return shlex.join([sys.executable, str(script), mode, json.dumps(ESC)])




def _check(tmp_path: Path, mode: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return mcp_console("check", "--stdio", _server(tmp_path, mode), "--call-tools", "--settle", "0.05",
                       "--listen-wait", "0.1", *extra)


def test_a_clean_server_passes_the_check(tmp_path: Path) -> None:
    done = _check(tmp_path, "clean")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["exit on tools/list", "exit on tools/call"])
def test_a_server_that_dies_after_a_clean_discover_fails_the_check_as_unreachable(tmp_path: Path, mode: str) -> None:
    done = _check(tmp_path, mode)
    assert done.returncode == 2, done.stdout + done.stderr  # not 0: nothing found because nothing was there
    assert "went away" in done.stdout
    report = json.loads(_check(tmp_path, mode, "--json").stdout)
    assert report["exit"] == 2


def test_a_server_whose_discover_fails_fails_the_check_as_nothing_could_be_checked(tmp_path: Path) -> None:
    # A 2026-07-28 server MUST implement server/discover; one that answers it (and so everything) with an internal
    # error gave the check nothing to look at, no finding, and exit 0.
    done = _check(tmp_path, "internal error on discover")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nothing else could be checked" in done.stdout


TERMINAL_BYTES = ("\x1b", "\x07", "\r", "\u009b", "\u202e", "\u00ad", "\U000e0072", "\U000e006d")


@pytest.mark.parametrize("mode", ["escapes in an error", "escapes in a result"])
def test_the_check_report_shows_a_servers_control_characters_as_escapes(tmp_path: Path, mode: str) -> None:
    done = _check(tmp_path, mode)
    for byte in TERMINAL_BYTES:
        assert byte not in done.stdout, (byte, done.stdout)
    assert "\n0 errors" not in done.stdout  # a server's newline starts no line of the report
    as_json = _check(tmp_path, mode, "--json").stdout
    for byte in TERMINAL_BYTES:
        assert byte not in as_json, (byte, as_json)
    json.loads(as_json)


@pytest.mark.parametrize("mode", ["escapes in an error", "escapes in a result"])
def test_the_call_output_shows_a_servers_control_characters_as_escapes_and_stays_json(
        tmp_path: Path, mode: str) -> None:
    done = mcp_console("call", "--stdio", _server(tmp_path, mode), "t")
    for byte in TERMINAL_BYTES:
        assert byte not in done.stdout, (byte, done.stdout)
    reply = json.loads(done.stdout)
    said = reply["error"]["message"] if "error" in reply else reply["result"]["content"][0]["text"]
    assert ESC in said  # the escapes are JSON's: the value reads back whole
    assert done.returncode == (1 if mode == "escapes in an error" else 0)


def test_a_call_to_a_server_that_refuses_every_method_says_so_escaped_and_exits_unreachable(tmp_path: Path) -> None:
    done = mcp_console("call", "--stdio", _server(tmp_path, "refuses everything"), "t")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "could not start a session with the server" in done.stderr
    assert "\x1b" not in done.stderr + done.stdout and "\\x1b" in done.stderr


def test_a_call_to_a_server_that_never_answers_discover_says_the_probe_failed_as_the_console_does(
        tmp_path: Path) -> None:
    done = mcp_console("call", "--timeout", "1", "--stdio", _server(tmp_path, "silent"), "t")
    # The connect machine the console drives: an unanswered probe is no sign of an older server, and no session.
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "could not start a session with the server: server/discover failed" in done.stderr
    assert "server/discover answered" not in done.stderr
