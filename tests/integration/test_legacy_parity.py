"""The same features in the 2025-11-25 era: cancel, cURL, replay, HAR, session file and share links.

Against the real legacy test server (`tests/legacy/server.py`) over HTTP and stdio, which records every
`notifications/cancelled` it receives and the session id it came with.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest

from tests.integration.conftest import JSON, REPO_ROOT, Console, eventually
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url

__all__ = ["legacy_url"]


@pytest.fixture(params=["http", "stdio"])
async def legacy_session(request: pytest.FixtureRequest, console: Console) -> str:
    if request.param == "http":
        form = {"kind": "http", "url": request.getfixturevalue("legacy_url")}
    else:
        form = {"kind": "stdio", "command": shlex.join(LEGACY_STDIO), "cwd": str(REPO_ROOT)}
    s = await console.connect(**form)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return str(s["id"])


async def running_op(console: Console, sid: str, tool: str) -> dict[str, Any]:
    """The operation of a tool call once the server has reported progress on it (it is under way there)."""
    async def running() -> dict[str, Any] | None:
        s = await console.session(sid)
        op = next((o for o in s["operations"] if o["name"] == tool), None)
        entry = next((e for e in s["timeline"] if op and e.get("key") == op["key"]), None)
        return op if op and op["status"] == "running" and entry and entry.get("progress") else None

    found: dict[str, Any] = await eventually(running, what=f"{tool} to be running with progress")
    return found


async def cancel(console: Console, sid: str, call: asyncio.Task[dict[str, Any]], op: dict[str, Any]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/cancel", headers=JSON)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = await asyncio.wait_for(call, 20)
    return reply


async def test_cancelling_a_legacy_call_sends_notifications_cancelled_that_the_server_receives(
        console: Console, legacy_session: str) -> None:
    sid = legacy_session
    call = asyncio.create_task(console.call_tool(sid, "wait"))
    try:
        op = await running_op(console, sid, "wait")
        reply = await cancel(console, sid, call, op)
    finally:
        call.cancel()
    assert reply["status"] == "cancelled", reply
    request_id = reply["operation"]["rounds"][0]["request_id"]
    seen = await console.call_tool(sid, "cancellations")
    cancellations = json.loads(seen["result"]["content"][0]["text"])
    assert [c["requestId"] for c in cancellations] == [request_id], cancellations
    assert cancellations[0]["reason"], cancellations


async def test_a_legacy_http_cancel_goes_on_the_session_with_its_id_before_the_stream_closes(
        console: Console, legacy_url: str) -> None:
    s = await console.connect(kind="http", url=legacy_url)
    sid = s["id"]
    call = asyncio.create_task(console.call_tool(sid, "wait"))
    try:
        op = await running_op(console, sid, "wait")
        reply = await cancel(console, sid, call, op)
    finally:
        call.cancel()
    seen = await console.call_tool(sid, "cancellations")
    [cancelled] = json.loads(seen["result"]["content"][0]["text"])
    assert cancelled["session"], cancelled  # the server knew which session's request to stop
    detail = await console.entry(sid, reply["operation"]["rounds"][0]["key"])
    notes = [w.get("note") or "" for w in detail["wire"]]
    outs = [json.loads(w["raw"]) for w in detail["wire"] if w["direction"] == "out"]
    assert [m.get("method") for m in outs] == ["tools/call", "notifications/cancelled"], outs
    assert any("closed the response stream to cancel" in n for n in notes), notes
