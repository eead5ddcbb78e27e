"""A 2025-11-25 stdio server's questions that no request of ours carried (roots/list after initialized, in a
loop): each of the first ones is a timeline line with its frame cut to a bound, the rest are counted, and every one
is still answered. A server that sends no serverInfo still counts as connected once it did."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.console.server_requests import NOTICE_RAW_CHARS, UNATTACHED_NOTICES
from tests.integration.conftest import JSON, Console, eventually

pytestmark = pytest.mark.slow
ASKS = UNATTACHED_NOTICES + 30

ASKING_SERVER = textwrap.dedent('''
    import json, sys
    ASKS, PAD = int(sys.argv[1]), "x" * 20000
    def send(m): print(json.dumps(m), flush=True)
    asked = answered = 0
    for line in sys.stdin:
        m = json.loads(line)
        if m.get("method") == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
                  "capabilities": {"tools": {}}}})  # no serverInfo
        elif m.get("method") == "notifications/initialized" or ("result" in m and asked < ASKS):
            if "result" in m:
                answered += 1
            if asked < ASKS:
                asked += 1
                send({"jsonrpc": "2.0", "id": f"ask-{asked}", "method": "roots/list", "params": {"pad": PAD}})
        elif "result" in m:
            answered += 1
        elif m.get("method") == "tools/list":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "answered", "inputSchema":
                  {"type": "object"}}]}})
        elif m.get("method") == "tools/call":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": str(answered)}]}})
        elif "id" in m:
            send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}})
''')


async def _session(console: Console, tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "asking.py"
    script.write_text(ASKING_SERVER)
    s = await console.connect(kind="stdio", command=shlex.join([sys.executable, str(script), str(ASKS)]),
                              era="legacy")
    assert s["status"] == "connected", s["status_message"]
    return s


async def test_a_server_asking_in_a_loop_gets_a_line_each_up_to_a_bound_then_a_count(
        console: Console, tmp_path: Path) -> None:
    s = await _session(console, tmp_path)

    async def all_answered() -> str | None:
        reply = await console.call_tool(s["id"], "answered")
        text = str(reply["result"]["content"][0]["text"])
        return text if text == str(ASKS) else None

    await eventually(all_answered, what=f"the server to have all {ASKS} questions answered")
    notices = [e for e in (await console.session(s["id"]))["timeline"] if e.get("signal") == "server_request"]
    listed = [e for e in notices if e["message"].startswith("the server asked roots/list")]
    assert len(listed) <= UNATTACHED_NOTICES
    assert all(len(e["raw"]) <= NOTICE_RAW_CHARS + 10 for e in listed)


async def test_a_session_that_connected_without_server_info_is_not_a_failed_try_to_replace(
        console: Console, tmp_path: Path) -> None:
    s = await _session(console, tmp_path)
    assert s["server"]["info"] in ({}, None)
    session = console.manager.get(s["id"])
    session._set_status("failed", "the server went away")  # as a failed restart leaves it
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    assert "Discard this try" not in page and 'name="replaces"' not in page
    await console.connect(kind="stdio", command=str(tmp_path / "missing"), replaces=s["id"])
    response = await console.http.get(f"/sessions/{s['id']}.json", headers=JSON)
    assert response.status_code == 200
