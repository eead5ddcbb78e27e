"""Hostile stdio server processes, driven through the console: what the owner starts must not outlive it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.integration.test_console_stdio import _pid
from tests.processes import gone as _gone
from tests.processes import wait_gone

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console


# Answers discovery properly; ignores SIGTERM, and a closed stdin does not end it: only SIGKILL does.
STUBBORN = textwrap.dedent('''
    import json, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    while True:
        time.sleep(1)
''')


async def test_console_shutdown_ends_stubborn_stdio_servers_together_not_one_grace_period_after_another(
        make_console: Callable[..., Console], tmp_path: Path) -> None:
    grace = 1.0
    console = make_console(stdio_shutdown_grace_s=grace)
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    command = shlex.join([sys.executable, str(script)])
    sessions = 4
    pids = []
    for _ in range(sessions):
        s = await console.connect(kind="stdio", command=command)
        assert s["status"] == "connected", s["status_message"]
        pids.append(_pid(s))
    started = time.monotonic()
    await asyncio.wait_for(console.close(), 30)
    took = time.monotonic() - started
    # Each needs its two grace periods (stdin closed, then SIGTERM) before SIGKILL; one after another that was
    # sessions x 2 x grace (a console's service manager kills the console first, and the servers, in their own
    # process groups, live on).
    assert took < sessions * grace, f"shutdown took {took:.1f} s for {sessions} stubborn servers"
    assert all(_gone(pid) for pid in pids)


# A tool that asks for input, then the server dies before the answer comes back (its last words on stderr).
DIES_AWAITING_INPUT = textwrap.dedent('''
    import json, os, sys
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    TOOLS = [{"name": "ask", "inputSchema": {"type": "object"}}]
    ASK = {"resultType": "input_required", "requestState": "s1",
           "inputRequests": {"who": {"method": "elicitation/create", "params": {"mode": "form", "message": "Who?",
               "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message["method"]
        result = {"server/discover": DISCOVER, "tools/list": {"resultType": "complete", "tools": TOOLS},
                  "tools/call": ASK}.get(method)
        if result is None:
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                              "error": {"code": -32601, "message": "Method not found"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
        if method == "tools/call":
            print("segfault, more or less", file=sys.stderr, flush=True)
            os._exit(139)
''')


async def test_a_stdio_server_that_dies_while_its_operation_awaits_input_fails_the_answer_with_its_exit_code(
        console: Console, tmp_path: Path) -> None:
    script = tmp_path / "dies.py"
    script.write_text(DIES_AWAITING_INPUT)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    op = (await console.call_tool(sid, "ask"))["operation"]
    assert op["status"] == "awaiting_input", op
    key = next(iter(op["pending_requests"]))
    response = await asyncio.wait_for(console.http.post(
        f"/sessions/{sid}/operations/{op['op']}/answer", data={"key": key, "action": "accept", "arg.name": "Ada"},
        headers={"Accept": "application/json"}), 30)
    assert response.status_code == 200, response.text
    after = response.json()
    assert after["status"] != "awaiting_input", after
    from tests.integration.conftest import eventually

    async def told() -> dict[str, Any] | None:  # the exit notice and its last stderr come on their own
        s = await console.session(sid)
        shown = str(s)
        return s if "code 139" in shown and "segfault, more or less" in shown else None

    s = await eventually(told, 20.0, "the exit code and the server's last stderr line on the session")
    [stored] = [o for o in s["operations"] if o["op"] == op["op"]]
    assert stored["rounds"][0]["status"] == "input_required"  # the first round is kept
    assert s["status"] == "unreachable"


# Floods stdout with lines that are no message (a debug print in a loop), then answers properly.
FLOODS_STDOUT = textwrap.dedent('''
    import json, sys
    junk = "debug: " + "x" * 1500
    for i in range(3000):
        sys.stdout.write(f"{junk} {i}\\n")
    sys.stdout.flush()
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        result = {"server/discover": DISCOVER,
                  "tools/list": {"resultType": "complete", "tools": []}}.get(message["method"], {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')


async def test_a_flood_of_non_json_stdout_lines_makes_a_few_notices_not_one_stored_notice_per_line(
        make_console: Callable[..., Console], tmp_path: Path) -> None:
    console = make_console(max_session_store_bytes=1_000_000)
    script = tmp_path / "floods.py"
    script.write_text(FLOODS_STDOUT)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]
    events = console.manager.store.events(s["id"])
    notices = [e for e in events if e.kind == "notice" and "not JSON-RPC" in str(e.data.get("message"))]
    # Each notice is stored apart from the frames' quota (past it, "everything else goes on"): one per line let a
    # server fill the disk with copies of its junk. A few show what it is; a count says how many more there were.
    assert 1 <= len(notices) <= 50, len(notices)
    assert console.manager.store.stored_bytes(s["id"]) < 3 * 1_000_000


# Acknowledges a listen, sends one list change on it, then dies mid-stream.
DIES_WHILE_LISTENED_TO = textwrap.dedent('''
    import json, os, sys
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": True}}, "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, rid = message["method"], message["id"]
        if method == "subscriptions/listen":
            meta = {"io.modelcontextprotocol/subscriptionId": rid}
            for note in ({"method": "notifications/subscriptions/acknowledged",
                          "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}},
                         {"method": "notifications/tools/list_changed", "params": {"_meta": meta}}):
                print(json.dumps({"jsonrpc": "2.0", **note}), flush=True)
            print("listen stream: going down", file=sys.stderr, flush=True)
            os._exit(9)
        result = {"server/discover": DISCOVER, "tools/list": {"resultType": "complete", "tools": []}}.get(method, {})
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
''')


async def test_a_stdio_server_that_dies_mid_listen_stream_keeps_what_came_and_says_the_stream_was_lost(
        console: Console, tmp_path: Path) -> None:
    from tests.integration.conftest import eventually

    script = tmp_path / "dies_listening.py"
    script.write_text(DIES_WHILE_LISTENED_TO)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    started = await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                                      headers={"Accept": "application/json"})
    assert started.status_code == 200, started.text

    async def lost() -> dict[str, Any] | None:
        s = await console.session(sid)
        subs = s["subscriptions"]
        return s if subs and subs[0]["state"] in ("connection_lost", "reconnecting") and subs[0]["problems"] else None

    s = await eventually(lost, 20.0, "the subscription to be lost")
    [sub] = s["subscriptions"]
    assert sub["total"] >= 1 and sub["notifications"]  # what came before the crash is kept
    assert any("code 9" in p for p in sub["problems"]), sub["problems"]
    assert s["status"] == "unreachable" and "code 9" in s["status_message"]
    assert (await console.http.get("/sessions.json")).status_code == 200  # the console still serves



async def test_a_listen_on_a_dead_stdio_server_waits_for_the_reconnect_instead_of_retrying_every_few_seconds(
        console: Console, tmp_path: Path) -> None:
    from tests.integration.conftest import eventually

    script = tmp_path / "dies_listening.py"
    script.write_text(DIES_WHILE_LISTENED_TO)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    sid = s["id"]
    await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                            headers={"Accept": "application/json"})

    async def waiting() -> dict[str, Any] | None:
        s = await console.session(sid)
        [sub] = s["subscriptions"]
        return sub if any("once the session reconnects" in p for p in sub["problems"]) else None

    sub = await eventually(waiting, 20.0, "the subscription to wait for a reconnect")
    assert sub["reconnects"] <= 1, sub
    listens = [e for e in console.manager.store.events(sid)
               if e.kind == "exchange_started" and e.data.get("method") == "subscriptions/listen"]
    assert len(listens) == 1, len(listens)
    # A reconnect starts the server again, and the subscription listens on it by itself.
    assert (await console.http.post(f"/sessions/{sid}/reconnect")).status_code in (200, 303)

    async def listened_again() -> dict[str, Any] | None:
        [sub] = (await console.session(sid))["subscriptions"]
        return sub if sub["total"] >= 2 else None

    await eventually(listened_again, 20.0, "the subscription to listen again after the reconnect")


# The rest of each script below: a stdio server that answers server/discover and an empty tools/list.
ANSWERS_DISCOVER_AND_LISTS = textwrap.dedent('''
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        result = {"server/discover": DISCOVER,
                  "tools/list": {"resultType": "complete", "tools": []}}.get(message["method"], {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')

async def stderr_until_ready(console: Console, script: Path, source: str,
                             timeout_s: float) -> tuple[dict[str, Any], list[str]]:
    """Connect to the stdio server `source` (written to `script`) and wait for "ready" among its stderr lines."""
    from tests.integration.conftest import eventually

    script.write_text(source)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]

    async def ready() -> list[str] | None:
        stderr: list[str] = (await console.session(s["id"]))["stderr"]
        return stderr if "ready" in stderr else None

    return s, await eventually(ready, timeout_s, "the server's stderr lines up to \"ready\"")


# Writes one 50 MB stderr line (no newline in it until the end) before it answers anything, then a short one.
HUGE_STDERR_LINE = textwrap.dedent('''
    import json, sys
    for _ in range(50):
        sys.stderr.buffer.write(b"x" * (1 << 20))
    sys.stderr.buffer.write(b"\\nready\\n")
    sys.stderr.buffer.flush()
''') + ANSWERS_DISCOVER_AND_LISTS


async def test_a_50_mb_stderr_line_shows_its_start_in_the_session_and_says_how_many_bytes_were_not_kept(
        console: Console, tmp_path: Path) -> None:
    _, stderr = await stderr_until_ready(console, tmp_path / "huge_stderr.py", HUGE_STDERR_LINE, 30.0)
    [huge] = [line for line in stderr if line.startswith("x")]
    assert len(huge) < 3000, len(huge)
    assert huge.endswith(" more bytes of this line not kept]"), huge[-80:]
    dropped = int(huge.rsplit("[", 1)[1].split()[0])
    assert dropped == 50 * (1 << 20) - huge.index(" ")


# Writes a Latin-1 stderr line, one with its own U+FFFD, and a long one cut inside a Latin-1 byte's run.
STDERR_NOT_UTF8 = textwrap.dedent('''
    import json, sys
    sys.stderr.buffer.write(b"caf\\xe9 latin\\n")
    sys.stderr.buffer.write(b"\\xef\\xbf\\xbd genuine\\n")
    sys.stderr.buffer.write(b"long " + b"\\xe9" * 5000 + b"\\n")
    sys.stderr.buffer.write(b"ready\\n")
    sys.stderr.buffer.flush()
''') + ANSWERS_DISCOVER_AND_LISTS


async def test_a_stderr_line_that_is_not_utf8_is_said_to_be_shown_with_replacement_characters(
        console: Console, tmp_path: Path) -> None:
    # As on stdout: a stderr byte that is not UTF-8 showed as U+FFFD with nothing said, as if the server had
    # written U+FFFD itself; its own U+FFFD is not said to be a replacement, and a cut line says both.
    _, lines = await stderr_until_ready(console, tmp_path / "latin_stderr.py", STDERR_NOT_UTF8, 20.0)
    [latin] = [line for line in lines if "latin" in line]
    [genuine] = [line for line in lines if "genuine" in line]
    [long] = [line for line in lines if line.startswith("long")]
    assert latin.startswith("caf\ufffd latin [") and "not valid utf-8" in latin and "U+FFFD" in latin, latin
    assert genuine == "\ufffd genuine", genuine
    assert "more bytes of this line not kept" in long and "not valid utf-8" in long, long[-300:]


# Its stderr log holds markup, terminal escapes (colour, a window title, a bell) and a bidi override.
HOSTILE_STDERR_TEXT = textwrap.dedent(r'''
    import json, sys
    sys.stderr.write("<img src=x onerror=alert(1)>\n")
    sys.stderr.write("\x1b[31mred\x1b[0m \x1b]0;owned\x07 bell\x07 c1\x9b2J\n")
    sys.stderr.write("invoice\u202eexe.pdf\n")
    sys.stderr.write("ready\n")
    sys.stderr.flush()
''') + ANSWERS_DISCOVER_AND_LISTS


async def test_markup_terminal_escapes_and_bidi_overrides_on_stderr_are_shown_as_text_never_obeyed_or_hidden(
        console: Console, tmp_path: Path) -> None:
    from app.web.render import make_env

    s, lines = await stderr_until_ready(console, tmp_path / "hostile_stderr.py", HOSTILE_STDERR_TEXT, 20.0)
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    pushed = make_env().get_template("_push_stderr.html").render(lines=lines, dropped=0, seq=1)
    for html in (page, pushed):
        box = html[html.index('id="stderr-lines"'):] if 'id="stderr-lines"' in html else html
        assert "<img" not in box and "&lt;img src=x onerror=alert(1)&gt;" in box
        # No control or format character reaches the browser as itself: ESC, BEL and a C1 CSI are invisible there
        # (the colour codes' text shows, the ESC that made them codes does not), a bidi override reorders the line.
        assert not any(ch in box for ch in "\x1b\x07\x9b\u202e"), repr(box[:400])
        assert "⟨U+001B⟩</span>[31mred" in box and "⟨U+0007⟩" in box and "⟨U+009B⟩" in box
        assert "invoice<span class=\"invisible-char\" title=\"RIGHT-TO-LEFT OVERRIDE\">⟨U+202E⟩</span>exe.pdf" in box


# Its one tool answers with a number of 5,000 digits: JSON, but more digits than the console's parser reads.
ANSWERS_A_HUGE_NUMBER = textwrap.dedent('''
    import json, sys
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    TOOLS = [{"name": "count", "inputSchema": {"type": "object"}}]
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "tools/call":
            head = json.dumps({"jsonrpc": "2.0", "id": message["id"]})[:-1]
            print(head + ', "result": {"resultType": "complete", "content": [], "n": ' + "9" * 5000 + "}}",
                  flush=True)
            continue
        result = {"server/discover": DISCOVER,
                  "tools/list": {"resultType": "complete", "tools": TOOLS}}.get(message["method"], {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')


async def test_a_call_whose_answer_the_parser_refuses_ends_as_an_error_that_says_why_within_seconds(
        make_console: Callable[..., Console], tmp_path: Path) -> None:
    console = make_console(request_idle_timeout_s=30.0)
    script = tmp_path / "huge_number.py"
    script.write_text(ANSWERS_A_HUGE_NUMBER)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]
    started = time.monotonic()
    reply = await asyncio.wait_for(console.call_tool(s["id"], "count"), 20)
    assert time.monotonic() - started < 10, "the call waited for its idle deadline"
    assert not reply["ok"]
    assert "its answer could not be read" in str(reply) and "4300" in str(reply), reply


# Starts a child in its own process group, which starts a grandchild that calls setsid() (a daemon's way out of the
# group and the session), writes its pid to the file named in argv[1] and sleeps. Then it answers as usual.
SPAWNS_A_SETSID_GRANDCHILD = textwrap.dedent('''
    import json, os, subprocess, sys
    GRANDCHILD = (
        "import os, sys, time\\n"
        "os.setsid()\\n"
        "with open(sys.argv[1] + '.tmp', 'w') as f:\\n"
        "    f.write(str(os.getpid()))\\n"
        "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\\n"
        "time.sleep(120)\\n"
    )
    CHILD = ("import subprocess, sys, time\\n"
             "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], stdin=subprocess.DEVNULL)\\n"
             "time.sleep(120)\\n")
    subprocess.Popen([sys.executable, "-c", CHILD, GRANDCHILD, sys.argv[1]], stdin=subprocess.DEVNULL)
''') + ANSWERS_DISCOVER_AND_LISTS


async def _setsid_grandchild(console: Console, tmp_path: Path) -> tuple[dict[str, Any], int]:
    """A session on SPAWNS_A_SETSID_GRANDCHILD, and the grandchild's pid once it has written it."""
    from tests.integration.conftest import eventually

    script, pid_file = tmp_path / "spawns.py", tmp_path / "grandchild.pid"
    script.write_text(SPAWNS_A_SETSID_GRANDCHILD)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script), str(pid_file)]))
    assert s["status"] == "connected", s["status_message"]

    async def written() -> int:
        return int(pid_file.read_text()) if pid_file.exists() else 0

    return s, await eventually(written, 15.0, "the grandchild's pid file")


async def test_deleting_a_stdio_session_stops_a_grandchild_that_left_for_its_own_session_with_setsid(
        console: Console, tmp_path: Path) -> None:
    s, grandchild = await _setsid_grandchild(console, tmp_path)
    try:
        assert not _gone(grandchild)
        response = await console.http.post(f"/sessions/{s['id']}/delete")
        assert response.status_code == 303
        assert await wait_gone(grandchild, 15.0), f"the setsid grandchild {grandchild} outlived its session"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)


async def test_closing_the_console_stops_a_grandchild_that_left_for_its_own_session_with_setsid(
        make_console: Callable[..., Console], tmp_path: Path) -> None:
    console = make_console(stdio_shutdown_grace_s=0.5)
    _, grandchild = await _setsid_grandchild(console, tmp_path)
    try:
        await asyncio.wait_for(console.close(), 30)
        assert await wait_gone(grandchild, 15.0), f"the setsid grandchild {grandchild} outlived the console"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)


# Draws a progress bar on stderr the way tqdm does (\r, no newline), then answers; a tools/call ends the bar.
DRAWS_A_PROGRESS_BAR = textwrap.dedent('''
    import json, sys
    for percent in range(0, 51):
        sys.stderr.write(f"\\rdownloading {percent:3d}%|{'#' * (percent // 10):<10}|")
        sys.stderr.flush()
    DISCOVER = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "ttlMs": 0, "cacheScope": "public"}
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "tools/call":
            sys.stderr.write("\\rdownloading 100%|##########|\\n")
            sys.stderr.flush()
        result = {"server/discover": DISCOVER,
                  "tools/list": {"resultType": "complete", "tools": [{"name": "finish", "inputSchema": {}}]},
                  "tools/call": {"resultType": "complete", "content": []}}.get(message["method"], {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
''')


async def test_a_progress_bar_redrawn_with_carriage_returns_on_stderr_shows_its_latest_state_before_the_line_ends(
        console: Console, tmp_path: Path) -> None:
    from tests.integration.conftest import eventually

    script = tmp_path / "bar.py"
    script.write_text(DRAWS_A_PROGRESS_BAR)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script)]))
    assert s["status"] == "connected", s["status_message"]

    async def drawn() -> dict[str, Any] | None:
        now = await console.session(s["id"])
        return now if now["stderr_current"] == "downloading  50%|#####     |" else None

    now = await eventually(drawn, 15.0, "the bar's latest state as the unfinished stderr line")
    assert now["stderr"] == []  # no line per redraw
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    assert "downloading  50%|#####     |" in page
    reply = await console.call_tool(s["id"], "finish")
    assert reply["ok"] is True, reply["error"]

    async def ended() -> dict[str, Any] | None:
        now = await console.session(s["id"])
        return now if now["stderr"] else None

    now = await eventually(ended, 15.0, "the bar's line once it ended")
    drawn_over = 51 * len("\rdownloading  50%|#####     |") + 1  # the 51 redraws before it, and its own \r
    assert now["stderr"] == [f"downloading 100%|##########| … [{drawn_over} bytes drawn over before this]"]
    assert now["stderr_current"] == ""
