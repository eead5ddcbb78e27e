"""Cancel and roots on the real server-everything over stdio and Streamable HTTP (2025-11-25 sessions).

The console sends `notifications/cancelled` in both (on HTTP on the session, with its id, before it closes the
stream); the entry says cancelled and the wire shows what was sent. Changing the roots sends
`notifications/roots/list_changed`, and the server asks for them again.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest

from tests.everything.fixtures import ROOT, everything_argv, everything_url, needs_everything
from tests.integration.conftest import JSON, Console, eventually

__all__ = ["everything_url"]

pytestmark = [needs_everything, pytest.mark.slow]
STARTUP_S = 60.0  # node starting on a busy 2-core machine


@pytest.fixture(params=["stdio", "http"])
async def session(request: pytest.FixtureRequest, console: Console) -> dict[str, Any]:
    if request.param == "stdio":
        form = {"kind": "stdio", "command": shlex.join(everything_argv("stdio")), "cwd": str(ROOT)}
    else:
        form = {"kind": "http", "url": request.getfixturevalue("everything_url"), "headers": ""}
    s = await console.connect(timeout=STARTUP_S, **form)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return s


async def test_cancelling_a_long_server_everything_operation_marks_it_cancelled_and_says_so_on_the_wire(
        console: Console, session: dict[str, Any]) -> None:
    sid = session["id"]
    call = asyncio.create_task(console.call_tool(sid, "trigger-long-running-operation", duration="60", steps="60"))
    try:
        async def running() -> dict[str, Any] | None:
            s = await console.session(sid)
            op = next((o for o in s["operations"] if o["name"] == "trigger-long-running-operation"), None)
            entry = next((e for e in s["timeline"] if op and e.get("key") == op["key"]), None)
            return op if op and op["status"] == "running" and entry and entry.get("progress") else None

        op = await eventually(running, timeout=STARTUP_S, what="the long operation to report progress")
        response = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/cancel", headers=JSON)
        assert response.status_code == 200, response.text
        reply = await asyncio.wait_for(call, 20)
    finally:
        call.cancel()
    assert reply["status"] == "cancelled" and reply["operation"]["status"] == "cancelled", reply
    [rnd] = reply["operation"]["rounds"]
    [entry] = [e for e in (await console.session(sid))["timeline"] if e.get("key") == reply["operation"]["key"]]
    assert entry["status"] == "cancelled", entry  # the timeline entry says it, as the reply does
    detail = await console.entry(sid, rnd["key"])
    sent = [json.loads(w["raw"]) for w in detail["wire"] if w["direction"] == "out"]
    [cancelled] = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancelled["params"]["requestId"] == rnd["request_id"], cancelled
    # The server took it: the session goes on and answers the next call.
    echo = await console.call_tool(sid, "echo", message="still here")
    assert "still here" in str(echo), echo


async def test_changing_the_roots_of_a_legacy_session_tells_server_everything_which_asks_again(
        console: Console, session: dict[str, Any]) -> None:
    sid = session["id"]

    async def roots_text(wanted: str) -> str | None:
        reply = await console.call_tool(sid, "get-roots-list")
        text = str(reply["result"]["content"][0]["text"])
        return text if wanted in text else None

    # First the roots it asked for after initialize: none, as no root is set (it keeps them until told).
    await eventually(lambda: roots_text("no roots are currently configured"), timeout=STARTUP_S,
                     what="server-everything to hold the session's first roots, none")
    response = await console.http.post(f"/sessions/{sid}/roots", headers=JSON,
                                       data={"roots": "file:///tmp/changed-root Changed"})
    assert response.status_code == 200, response.text

    text = await eventually(lambda: roots_text("file:///tmp/changed-root"), timeout=STARTUP_S,
                            what="server-everything to list the changed roots")
    assert "Current MCP Roots (1 total)" in text, text
