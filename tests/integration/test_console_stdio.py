"""The console driving stdio servers: the bundled demo (`python -m app.demo --stdio`) and small scripts."""

from __future__ import annotations

import re
import shlex
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import eventually
from tests.processes import gone as _gone
from tests.processes import wait_gone

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = "2026-07-28"
STARTED = re.compile(r"started pid (\d+)")
EXIT_DEADLINE_S = 15.0

# A stdio server that writes garbage to stdout first, logs to stderr, then answers properly.
NOISY_SERVER = textwrap.dedent('''
    import json, sys

    print("not json", flush=True)
    print("noisy server starting", file=sys.stderr, flush=True)
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "server/discover":
            result = DISCOVER
        elif message["method"] == "tools/list":
            result = {"resultType": "complete", "tools": []}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                              "error": {"code": -32601, "message": "Method not found"}}), flush=True)
            continue
        print(f"answering {message['method']}", file=sys.stderr, flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')


def _pid(session: dict[str, Any]) -> int:
    for entry in session["timeline"]:
        match = STARTED.search(str(entry.get("message") or ""))
        if entry["kind"] == "notice" and match:
            return int(match.group(1))
    pytest.fail(f"no 'started pid N' notice on the timeline: {session['timeline']!r}")


async def _wait_gone(pid: int) -> None:
    if not await wait_gone(pid, EXIT_DEADLINE_S):
        pytest.fail(f"process {pid} still runs {EXIT_DEADLINE_S:g} s after the session was deleted")


async def _connect_list_and_echo(console: Console, form: dict[str, str]) -> dict[str, Any]:
    s = await console.connect(**form)
    assert s["status"] == "connected", s["status_message"]
    assert s["transport"] == "stdio"
    assert s["server"]["info"]["name"] == "mcp-console-demo"
    assert PROTOCOL in s["server"]["supportedVersions"]
    assert "echo" in {t["name"] for t in s["lists"]["tools"]}
    reply = await console.call_tool(s["id"], "echo", text="over <stdio>")
    assert reply["ok"] is True, reply["error"]
    assert reply["result"]["content"] == [{"type": "text", "text": "over <stdio>"}]
    detail = await console.entry(s["id"], reply["key"])
    assert [w["direction"] for w in detail["wire"]] == ["out", "in"]
    assert all(w["headers"] is None and w["http_status"] is None for w in detail["wire"])
    assert set(await console.shown_statuses(s["id"], reply["key"])) <= {"ok", "complete"}
    return await console.session(s["id"])


async def test_demo_stdio_session_connects_lists_tools_and_echoes(console: Console) -> None:
    s = await _connect_list_and_echo(console, {"kind": "demo-stdio"})
    assert isinstance(s["stderr"], list)
    assert all(isinstance(line, str) for line in s["stderr"])


async def test_stdio_command_session_connects_lists_tools_and_echoes(console: Console) -> None:
    command = shlex.join([sys.executable, "-m", "app.demo", "--stdio"])
    s = await _connect_list_and_echo(console, {"kind": "stdio", "command": command, "cwd": str(REPO_ROOT)})
    assert s["target"] == f"{sys.executable} -m app.demo --stdio (in {REPO_ROOT})"  # nothing secret: all shown


async def test_deleting_a_stdio_session_stops_its_process(console: Console) -> None:
    s = await console.connect(kind="demo-stdio")
    assert s["status"] == "connected", s["status_message"]
    pid = _pid(s)
    assert not _gone(pid)

    response = await console.http.post(f"/sessions/{s['id']}/delete")
    assert response.status_code == 303
    await _wait_gone(pid)
    assert (await console.http.get(f"/sessions/{s['id']}.json")).status_code == 404
    listing = (await console.http.get("/sessions.json")).json()["sessions"]
    assert s["id"] not in {item["id"] for item in listing}


async def test_server_stderr_lines_appear_in_the_session_json(console: Console, tmp_path: Path) -> None:
    script = tmp_path / "noisy_server.py"
    script.write_text(NOISY_SERVER)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]

    async def both_lines() -> bool:  # stderr travels in batches (at most 100 ms apart)
        stderr = (await console.session(s["id"]))["stderr"]
        return "noisy server starting" in stderr and "answering server/discover" in stderr

    await eventually(both_lines, what="the stderr lines in the session JSON")


async def test_garbage_on_stdout_is_a_warning_and_the_session_still_connects(
        console: Console, tmp_path: Path) -> None:
    script = tmp_path / "noisy_server.py"
    script.write_text(NOISY_SERVER)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]
    assert s["server"]["capabilities"] == {"tools": {}}
    assert s["lists"]["tools"] == []
    warnings = [e for e in s["timeline"] if e["kind"] == "notice" and e.get("level") == "warning"]
    assert any("malformed" in w["message"] and w.get("raw") == "not json" for w in warnings), warnings
    statuses = {e["method"]: e["status"] for e in s["timeline"] if e["kind"] == "exchange"}
    assert statuses == {"server/discover": "ok", "tools/list": "ok"}


# Answers every request, but first writes one stdout line far longer than the console accepts.
OVERSIZED_LINE_SERVER = textwrap.dedent('''
    import json, sys

    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message:
            sys.stdout.write("x" * 150_000 + "\\n")
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": DISCOVER}) + "\\n")
            sys.stdout.flush()
''')


async def test_an_over_long_stdout_line_is_dropped_with_a_warning_and_the_next_message_still_counts(
        make_console: Any, tmp_path: Path) -> None:
    console: Console = make_console(max_message_bytes=100_000, request_idle_timeout_s=3.0)
    script = tmp_path / "oversized_line_server.py"
    script.write_text(OVERSIZED_LINE_SERVER)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    notices = [e["message"] for e in s["timeline"] if e["kind"] == "notice"]
    assert any("over the 100000-byte limit" in m for m in notices), notices
    assert s["status"] == "connected", s["status_message"]
    assert not any(m.startswith("malformed frame") for m in notices), "a fragment of the long line was parsed"


# Answers discovery, and says its last words on stderr (no newline) only once its stdin closes: what a server
# says while the console shuts it down is often why it stopped.
SAYS_GOODBYE_ON_CLOSE = textwrap.dedent('''
    import json, sys

    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message:
            result = DISCOVER if message["method"] == "server/discover" else {"resultType": "complete"}
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    sys.stderr.write("goodbye: stdin closed")
    sys.stderr.flush()
''')


async def test_what_a_stdio_server_says_on_stderr_while_the_console_closes_it_is_in_the_session_after_a_restart(
        restarts: ConsoleRestarts, tmp_path: Path) -> None:
    script = tmp_path / "goodbye_server.py"
    script.write_text(SAYS_GOODBYE_ON_CLOSE)
    console = restarts.first()
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]

    again = await restarts.restart(console)
    assert "goodbye: stdin closed" in (await again.session(s["id"]))["stderr"]
