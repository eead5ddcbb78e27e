"""The same features in the 2025-11-25 era: cancel, cURL, replay, HAR, session file and share links.

Against the real legacy test server (`tests/legacy/server.py`) over HTTP and stdio, which records every
`notifications/cancelled` it receives and the session id it came with.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import subprocess
from typing import Any

import pytest

from tests.integration.conftest import JSON, REPO_ROOT, Console, create_link, eventually
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


# --- cURL, replay, HAR, session file, share links on a 2025-11-25 session -----------------------------------------


async def legacy_http(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return str(s["id"])


def sent_headers(detail: dict[str, Any]) -> dict[str, str]:
    [out] = [w for w in detail["wire"] if w["direction"] == "out"]
    return {name.lower(): value for name, value in out["headers"]}


async def test_a_legacy_curl_says_it_needs_a_live_session_id_and_runs_while_the_session_is_open(
        console: Console, legacy_url: str) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the curl binary is not installed")
    sid = await legacy_http(console, legacy_url)
    reply = await console.call_tool(sid, "echo", text="again by curl")
    command = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}/curl")).text
    first, rest = command.split("\n", 1)
    assert first.startswith("# needs a live Mcp-Session-Id"), command
    assert "mcp-session-id: " in rest.lower() and rest.startswith("curl ")
    detail = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}")).text
    assert "the cURL needs a live Mcp-Session-Id" in detail
    done = await asyncio.to_thread(subprocess.run, ["sh", "-c", command], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert "again by curl" in done.stdout, done.stdout


async def test_a_modern_curl_has_no_live_session_note(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    reply = await console.call_tool(s["id"], "add", a="1", b="2")
    command = (await console.http.get(f"/sessions/{s['id']}/entries/{reply['key']}/curl")).text
    assert command.startswith("curl ") and "needs a live" not in command


async def test_replaying_a_legacy_call_resends_it_with_the_current_session_id_and_version(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    original = await console.call_tool(sid, "echo", text="once more")
    response = await console.http.post(f"/sessions/{sid}/replay", data={"key": original["key"], "mode": "as-is"},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["status"] == "complete", replay
    assert replay["final"]["result"]["content"] == [{"type": "text", "text": "once more"}]
    before = sent_headers(await console.entry(sid, original["key"]))
    again = sent_headers(await console.entry(sid, replay["rounds"][0]["key"]))
    assert again["mcp-session-id"] == before["mcp-session-id"]
    assert again["mcp-protocol-version"] == "2025-11-25"


async def test_har_session_file_and_share_link_work_on_a_legacy_session(
        console: Console, legacy_url: str, share_tab: Any) -> None:
    sid = await legacy_http(console, legacy_url)
    await console.call_tool(sid, "echo", text="for the record")
    har = (await console.http.get(f"/sessions/{sid}/export.har")).json()
    methods = [json.loads(e["request"]["postData"]["text"]).get("method") for e in har["log"]["entries"]
               if e["request"].get("postData")]
    assert "initialize" in methods and "tools/call" in methods, methods
    exported = await console.http.get(f"/sessions/{sid}/export.json")
    imported = await console.http.post("/sessions/import", content=exported.content,
                                       headers={**JSON, "Content-Type": "application/json"})
    assert imported.status_code == 200, imported.text
    copy = await console.session(imported.json()["id"])
    assert copy["era"]["era"] == "legacy", copy["era"]
    assert [e.get("method") for e in copy["timeline"] if e.get("kind") == "exchange"] == [
        e.get("method") for e in (await console.session(sid))["timeline"] if e.get("kind") == "exchange"]
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    page = await tab.get(f"/sessions/{sid}")
    assert page.status_code == 200 and "tools/call" in page.text and "viewer" in page.text
    shared = (await tab.get(f"/sessions/{sid}.json")).json()
    assert shared["era"]["era"] == "legacy" and shared["status"] == "connected", shared["era"]


# --- where a feature does not exist in an era, the page says so --------------------------------------------------


async def test_a_legacy_session_page_says_what_this_era_does_not_have_instead_of_empty_controls(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    page = (await console.http.get(f"/sessions/{sid}")).text
    notes = page.split('data-era-notes="legacy"', 1)[1].split("</details>", 1)[0]
    for absent in ("No server/discover", "No MRTR", "requestState", "No subscriptions/listen",
                   "notifications/cancelled"):
        assert absent in notes, absent
    form = page.split('id="subscribe-form"', 1)[1].split("</form>", 1)[0]
    assert 'data-legacy="yes"' in form and "No subscriptions/listen in 2025-11-25" in form
    assert "resources/subscribe" in form
    # This server's capabilities offer neither list changes nor subscriptions: the form says so.
    assert "Nothing to listen for" in form
    assert "Freshness (ttlMs, cacheScope)" in page and "not in 2025-11-25" in page


async def test_a_modern_session_page_has_no_legacy_notes_and_shows_its_freshness(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    assert 'data-era-notes' not in page and 'data-legacy="no"' in page
    assert "subscriptions/listen: list changes and resource updates, live." in page
    facts = page.split('class="server-facts"', 1)[1].split("</details>", 1)[0]
    assert "<dt>Freshness</dt>" in facts and "cacheScope" in facts and "not in" not in facts, facts


async def test_a_legacy_http_stream_past_max_stream_bytes_is_cancelled_with_a_notification_too(
        make_console: Any, legacy_url: str) -> None:
    console: Console = make_console(max_stream_bytes=64 * 1024)
    sid = await legacy_http(console, legacy_url)
    reply = await console.call_tool(sid, "flood")
    assert reply["status"] != "complete", reply
    request_id = reply["operation"]["rounds"][0]["request_id"]

    async def told() -> list[dict[str, Any]] | None:
        seen = await console.call_tool(sid, "cancellations")
        found = [c for c in json.loads(seen["result"]["content"][0]["text"]) if c["requestId"] == request_id]
        return found or None

    [cancelled] = await eventually(told, what="the server to receive notifications/cancelled for the flood")
    assert "max_stream_bytes" in cancelled["reason"] and cancelled["session"], cancelled


async def test_a_legacy_subscription_card_says_it_has_no_subscription_id(console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    response = await console.http.post(f"/sessions/{sid}/subscriptions", headers=JSON,
                                       data={"resourceSubscriptions": "file:///nothing"})
    assert response.status_code == 200, response.text
    sub = response.json()["sub"]

    async def settled() -> str | None:
        page = (await console.http.get(f"/sessions/{sid}")).text
        card = page.split(f'id="sub-{sub}"', 1)[1].split("</div>", 1)[0] if f'id="sub-{sub}"' in page else ""
        return card if 'data-state="opening"' not in card and card else None

    card = await eventually(settled, what="the legacy subscription to settle")
    assert "has no subscriptionId" in card and "subscriptionId <code>None</code>" not in card, card


async def test_replaying_after_a_restart_and_reconnect_uses_the_new_session_id_not_the_recorded_one(
        restarts: Any, legacy_url: str) -> None:
    console: Console = restarts.first()
    sid = await legacy_http(console, legacy_url)
    original = await console.call_tool(sid, "echo", text="from the old session")
    console = await restarts.restart(console)
    assert (await console.http.post(f"/sessions/{sid}/reconnect")).status_code == 303
    s = await console.settled(sid)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    response = await console.http.post(f"/sessions/{sid}/replay", data={"key": original["key"], "mode": "as-is"},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["status"] == "complete", replay  # the recorded id would get "Server not initialized"
    before = sent_headers(await console.entry(sid, original["key"]))
    again = sent_headers(await console.entry(sid, replay["rounds"][0]["key"]))
    assert again["mcp-session-id"] != before["mcp-session-id"]
    assert again["mcp-protocol-version"] == "2025-11-25"
