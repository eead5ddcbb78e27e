"""The command line's `call` and `check` against real servers: either era (Auto probes server/discover and falls
back to 2025-11-25 initialize), and hostile servers whose answers must give a report and an exit code that say
what happened, never a traceback or a process left behind."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.hostile.fixtures import hostile_argv
from tests.integration.conftest import mcp_console
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url

__all__ = ["legacy_url"]


def test_call_in_auto_falls_back_to_initialize_on_a_legacy_http_server(legacy_url: str) -> None:
    done = mcp_console("call", legacy_url, "echo", "--arg", "text=hello legacy")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["content"][0]["text"] == "hello legacy"


def test_call_answers_a_legacy_servers_elicitation_request_from_a_file(legacy_url: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"server-request": {"action": "accept", "content": {"name": "Ada"}}}))
    done = mcp_console("call", legacy_url, "ask", "--elicit", str(answers))
    assert done.returncode == 0, done.stderr
    said = json.loads(json.loads(done.stdout)["result"]["content"][0]["text"])
    assert said["result"] == {"action": "accept", "content": {"name": "Ada"}}  # the whole response it got back


def test_call_forced_legacy_over_stdio_initializes_and_calls(tmp_path: Path) -> None:
    done = mcp_console("call", "--stdio", shlex.join(LEGACY_STDIO), "echo", "--arg", "text=over stdio",
                       "--era", "legacy")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "over stdio"


def test_call_in_auto_stays_modern_on_the_demo_server(demo_url: str) -> None:
    done = mcp_console("call", demo_url, "echo", "--arg", "text=modern")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["resultType"] == "complete"


# -- What a hostile server's answers do to `mcp-console call` and `check` in a CI job. Schemas and input
# requests of odd shapes must give a report and an exit code that says what happened, never a traceback; a call
# that never completes must not pass.

CACHE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}

# A 2026-07-28 stdio server that answers each method from a table given on its command line (else a clean,
# empty result), so each test says in one place what the server sends.
SERVER = textwrap.dedent('''
    import json, sys
    TABLE, CACHE = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method, out = msg.get("method"), {"jsonrpc": "2.0", "id": msg["id"]}
        if method in TABLE:
            out["result"] = TABLE[method]
        elif method == "server/discover":
            out["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, **CACHE}
        else:
            out["result"] = dict(CACHE)
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
''')


def _server(tmp_path: Path, table: dict[str, Any]) -> str:
    script = tmp_path / "table_target.py"
    script.write_text(SERVER)
    return shlex.join([sys.executable, str(script), json.dumps(table), json.dumps(CACHE)])




def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"tools": [{"name": "t", "inputSchema": schema, "annotations": {"readOnlyHint": True}}], **CACHE}


def _asking(schema: Any) -> dict[str, Any]:
    """A tools/call answer that asks for a form, every round (the server never completes the call)."""
    return {"resultType": "input_required", "requestState": "again", "inputRequests": {"form": {
        "method": "elicitation/create", "params": {"mode": "form", "message": "more?", "requestedSchema": schema}}}}


def test_a_tool_whose_required_list_holds_an_object_is_still_called_and_reported_by_the_check(
        tmp_path: Path) -> None:
    # `required: [{...}]` crashed `check --call-tools` with a TypeError traceback and exit 1: no report, no JUnit.
    server = _server(tmp_path, {"tools/list": _tool({"type": "object", "required": [{"a": 1}, ["b"], "c"]}),
                                "tools/call": {"content": [], "resultType": "complete"}})
    done = mcp_console("check", "--stdio", server, "--call-tools", "--settle", "0", "--listen-wait", "0.1",
                       "--junit", str(tmp_path / "junit.xml"))
    assert "Traceback" not in done.stderr, done.stderr
    assert "tools/call 't': ok" in done.stdout and "rules checked" in done.stdout, done.stdout
    assert done.returncode == 0, done.stdout
    assert (tmp_path / "junit.xml").read_bytes().startswith(b"<?xml")


def test_a_form_whose_required_list_holds_a_list_is_declined_by_call_not_a_traceback(tmp_path: Path) -> None:
    server = _server(tmp_path, {"tools/list": _tool({"type": "object"}), "tools/call": _asking(
        {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}, "required": [["a"]]})})
    done = mcp_console("call", "--stdio", server, "t")
    assert "Traceback" not in done.stderr, done.stderr
    json.loads(done.stdout)


def test_a_call_the_server_answers_with_input_requests_round_after_round_does_not_pass(tmp_path: Path) -> None:
    # After its last round `call` printed the server's tenth input_required and exited 0, as for a result.
    schema = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    server = _server(tmp_path, {"tools/list": _tool({"type": "object"}), "tools/call": _asking(schema)})
    done = mcp_console("call", "--stdio", server, "t")
    assert json.loads(done.stdout)["result"]["resultType"] == "input_required"
    assert done.returncode == 1, done.stdout
    checked = mcp_console("check", "--stdio", server, "--call-tools", "--settle", "0", "--listen-wait", "0.1")
    assert "tools/call 't': did not complete (resultType 'input_required')" in checked.stdout, checked.stdout


def test_a_result_holding_nan_and_infinity_prints_as_json_with_nulls_and_says_so() -> None:
    # Python's parser takes the bare words NaN and Infinity; `call` printed them back, and its output was no JSON.
    done = mcp_console("call", "--stdio", shlex.join(hostile_argv("text")), "not_a_number")

    def refuse(word: str) -> None:
        raise AssertionError(f"{word} is not JSON: {done.stdout}")

    reply = json.loads(done.stdout, parse_constant=refuse)
    assert reply["result"]["structuredContent"] == {"nan": None, "inf": None}
    assert any("NaN or Infinity" in warning for warning in reply["warnings"]), reply
    assert done.returncode == 0, done.stderr


CHATTY = textwrap.dedent('''
    import json, sys, time
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "server/discover":
            out = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                   "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": out}) + "\\n")
            sys.stdout.flush()
        elif msg.get("method") == "tools/call":
            token = msg["params"]["_meta"]["progressToken"]
            n = 0
            while True:  # progress every 50 ms, and never an answer
                n += 1
                note = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": n}}
                sys.stdout.write(json.dumps(note) + "\\n")
                sys.stdout.flush()
                time.sleep(0.05)
''')


def test_a_call_to_a_server_that_sends_progress_forever_ends_at_its_max_time_and_fails(tmp_path: Path) -> None:
    # Every frame resets the idle deadline, so only the overall maximum ends such a call; it was the console's
    # hour, with no flag to set it, and a CI job waited that long.
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)
    done = mcp_console("call", "--stdio", shlex.join([sys.executable, str(script)]), "t", "--timeout", "1",
                       "--max-time", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "overall maximum of 2 s (--max-time)" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_max_time_that_is_not_a_positive_number_of_seconds_is_refused_with_exit_2() -> None:
    for bad in ("0", "-1", "nan", "soon"):
        done = mcp_console("call", "http://127.0.0.1:9/mcp", "t", "--max-time", bad)
        assert done.returncode == 2 and "--max-time" in done.stderr, (bad, done.stderr)


def test_a_check_whose_tools_list_passes_its_deadline_fails_with_exit_1_and_says_which_request(
        tmp_path: Path) -> None:
    # The README: a request that passes either deadline failed (exit 1). A check recorded the timed-out list as a
    # step and exited 0, so a server whose tools/list never answers passed CI with none of its tools checked.
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)  # answers server/discover, never tools/list
    done = mcp_console("check", "--stdio", shlex.join([sys.executable, str(script)]), "--json", "--timeout", "1",
                       "--max-time", "3", "--settle", "0")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["exit"] == 1
    assert any(step.startswith("tools/list failed:") and "--timeout" in step for step in report["steps"]), report


# A stdio server that answers initialize with a version nobody speaks, refuses server/discover, and does not end
# when its stdin does: only a signal stops it. It writes its pid where the test reads it.
STUBBORN = textwrap.dedent('''
    import json, os, sys, time
    open(sys.argv[1], "w").write(str(os.getpid()))
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg.get("method") == "initialize":
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2099-01-01"}}
        else:
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
        print(json.dumps(out), flush=True)
    while True:
        time.sleep(1)
''')


def test_a_call_whose_connect_fails_stops_the_stdio_server_it_started(tmp_path: Path) -> None:
    script, pid_file = tmp_path / "stubborn.py", tmp_path / "pid"
    script.write_text(STUBBORN)
    done = mcp_console("call", "--stdio", shlex.join([sys.executable, str(script), str(pid_file)]), "echo")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "could not start a session with the server" in done.stderr and "2099-01-01" in done.stderr
    pid = int(pid_file.read_text())
    try:
        # Ended by the CLI before it exited (a server left behind had the init process for a parent, for good).
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), pid
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
