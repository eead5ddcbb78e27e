"""Attack: `mcp-console check` and `call` in a CI job against a hostile server.

What the server may try: die half way through a check after a clean discover, or answer discover with an error
(the job must not pass: a crash, or nothing checked, is no clean run), and put terminal control sequences in
every string it sends (an OSC that retitles the terminal, a cursor move or a carriage return that paints
"ALL GOOD" over the report, a C1 CSI, a bidi override): what the console writes to stdout shows them as
escapes, never as the bytes a terminal acts on.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.conftest import child_env

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 90.0
# Then format characters a terminal shows as nothing: a soft hyphen, and tag characters that spell "rm" unseen.
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


def mcp_console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


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
