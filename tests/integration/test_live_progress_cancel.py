"""Live feedback on one request: coalesced progress, cancellation and per-request logs, on the real demo."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console, Seen, TinyHttp

LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
JOB_SECONDS = 30.0
PROMPT_CANCEL_S = 5.0  # "promptly": far below the job's 30 s


@pytest.fixture(params=["http", "stdio"])
async def session_id(request: pytest.FixtureRequest, console: Console, demo_url: str) -> str:
    form = {"kind": "http", "url": demo_url, "headers": ""} if request.param == "http" else {"kind": "demo-stdio"}
    s = await console.connect(**form)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def http_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def timeline_entry(console: Console, session_id: str, key: str) -> dict[str, Any]:
    [entry] = [e for e in (await console.session(session_id))["timeline"] if e["key"] == key]
    return entry


async def operation(console: Console, session_id: str, name: str) -> dict[str, Any] | None:
    ops = (await console.session(session_id))["operations"]
    return next((op for op in ops if op["name"] == name), None)


# --- progress ----------------------------------------------------------------------------------------


async def test_a_burst_of_500_progress_notifications_ends_at_500_of_500_in_far_fewer_events(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    reply = await console.call_tool(sid, "progress_fast", count="500")
    assert reply["status"] == "complete" and reply["result"]["content"][0]["text"] == "sent 500"
    op_key = reply["operation"]["key"]

    progress = (await timeline_entry(console, sid, op_key))["progress"]
    assert (progress["progress"], progress["total"]) == (500, 500), "the final value always arrives"
    assert progress["count"] == 500, "every notification was received, even if few were shown"
    assert progress["message"] == "fast 500/500"

    recorded = [e.data for e in console.manager.store.events(sid, kinds=("progress",)) if e.data["target"] == op_key]
    assert recorded, "no progress event was recorded"
    assert len(recorded) <= 50, f"{len(recorded)} progress events for 500 notifications: not coalesced"
    assert recorded[-1]["progress"] == 500
    shown = [e["progress"] for e in recorded]
    assert shown == sorted(shown), "coalesced progress went backwards"


# --- cancellation --------------------------------------------------------------------------------------


async def test_cancelling_long_job_ends_it_promptly_and_the_server_saw_the_cancellation(
        console: Console, session_id: str) -> None:
    # An odd length tells this job apart in the shared server's record of cancellations.
    seconds = JOB_SECONDS + random.randint(1, 999) / 1000
    call = asyncio.create_task(console.call_tool(session_id, "long_job", seconds=str(seconds)))
    try:
        async def working() -> dict[str, Any] | None:
            op = await operation(console, session_id, "long_job")
            entry = await timeline_entry(console, session_id, op["key"]) if op else None
            # The first progress report proves the job runs on the server (the request is in flight).
            return op if op and op["status"] == "running" and entry and entry.get("progress") else None

        op = await eventually(working, what="long_job to be running with progress")
        started = time.monotonic()
        response = await console.http.post(f"/sessions/{session_id}/operations/{op['op']}/cancel", headers=JSON)
        assert response.status_code == 200, response.text
        reply = await asyncio.wait_for(call, PROMPT_CANCEL_S)
        elapsed = time.monotonic() - started
    finally:
        call.cancel()
    assert reply["status"] == "cancelled", reply
    assert reply["operation"]["status"] == "cancelled"
    assert elapsed < PROMPT_CANCEL_S
    request_id = reply["operation"]["rounds"][0]["request_id"]

    async def seen_by_server() -> list[dict[str, Any]] | None:
        seen = await console.call_tool(session_id, "cancellations")
        jobs = json.loads(seen["result"]["content"][0]["text"])
        mine = [job for job in jobs if job["request_id"] == str(request_id) and job["planned_s"] == seconds]
        return mine or None

    [job] = await eventually(seen_by_server, what="the demo server to record the cancellation")
    assert job["elapsed_s"] < PROMPT_CANCEL_S + 1


def _slow_json_server(tiny_http: TinyHttp, release: threading.Event) -> Any:
    """Answers tools/call with plain JSON only when released: no response headers until then."""

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        message = seen.json()
        if message["method"] == "server/discover":
            return 200, "application/json", tiny_http.result(message["id"], tiny_http.discover(
                capabilities={"tools": {}}))
        if message["method"] == "tools/list":
            return 200, "application/json", tiny_http.result(message["id"], {"resultType": "complete", "tools": []})
        release.wait(timeout=20)
        return 200, "application/json", tiny_http.result(message["id"], {
            "resultType": "complete", "content": [{"type": "text", "text": "finished anyway"}]})

    return tiny_http.start(handler)


async def test_cancelling_a_call_to_a_server_that_has_not_answered_yet_ends_it_promptly(
        console: Console, tiny_http: TinyHttp) -> None:
    """A server answering with plain JSON sends no headers until it has the answer: Cancel must not wait."""
    release = threading.Event()
    server = _slow_json_server(tiny_http, release)
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    call = asyncio.create_task(console.call_tool(sid, "slow"))
    try:
        async def sent() -> dict[str, Any] | None:
            op = await operation(console, sid, "slow")
            return op if op and op["status"] == "running" and any(r.method == "POST" and r.json()["method"] ==
                                                                  "tools/call" for r in server.requests) else None

        op = await eventually(sent, what="the tools/call to reach the server")
        cancel = asyncio.create_task(console.http.post(f"/sessions/{sid}/operations/{op['op']}/cancel",
                                                       headers=JSON))
        done, _ = await asyncio.wait({call}, timeout=2.0)
        release.set()  # let the server answer now either way, so nothing waits on it past the test
        await cancel
        assert call in done, "the call still ran after Cancel"
        assert call.result()["status"] == "cancelled"
    finally:
        release.set()
        call.cancel()


# --- logs -----------------------------------------------------------------------------------------------


async def test_with_log_level_debug_log_demo_messages_appear_under_the_operation(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    settings = await console.http.post(f"/sessions/{sid}/request-settings", headers=JSON,
                                       data={"log_level": "debug", "progress": "on", "auto_refresh": "on"})
    assert settings.status_code == 200 and settings.json()["log_level"] == "debug"
    reply = await console.call_tool(sid, "log_demo", count="5")
    assert reply["status"] == "complete", reply
    assert "requested level 'debug'" in reply["result"]["content"][0]["text"]

    logs = (await timeline_entry(console, sid, reply["operation"]["key"]))["logs"]
    assert [line["data"]["line"] for line in logs] == [1, 2, 3, 4, 5]
    assert all(line["logger"] == "demo.log_demo" and line["level"] == line["data"]["level"] for line in logs)
    [out] = [w for w in (await console.entry(sid, reply["key"]))["wire"] if w["direction"] == "out"]
    assert json.loads(out["raw"])["params"]["_meta"][LOG_LEVEL_KEY] == "debug"


async def test_with_no_log_level_the_request_does_not_ask_and_no_log_message_is_sent(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    assert (await console.session(sid))["request_settings"]["log_level"] == ""
    reply = await console.call_tool(sid, "log_demo", count="5")
    assert reply["status"] == "complete", reply
    assert "no logLevel in _meta" in reply["result"]["content"][0]["text"]

    wire = (await console.entry(sid, reply["key"]))["wire"]
    [out] = [w for w in wire if w["direction"] == "out"]
    assert LOG_LEVEL_KEY not in json.loads(out["raw"])["params"]["_meta"]
    incoming = [json.loads(w["raw"]) for w in wire if w["direction"] == "in"]
    assert incoming and not [m for m in incoming if m.get("method") == "notifications/message"]
    assert not (await timeline_entry(console, sid, reply["operation"]["key"])).get("logs")


async def test_over_stdio_log_demo_messages_appear_under_the_operation_that_asked_for_them(
        console: Console) -> None:
    s = await console.connect(kind="demo-stdio")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    await console.http.post(f"/sessions/{sid}/request-settings", headers=JSON,
                            data={"log_level": "debug", "progress": "on", "auto_refresh": "on"})
    reply = await console.call_tool(sid, "log_demo", count="3")
    assert reply["status"] == "complete", reply
    after = await console.session(sid)
    strays = [e["message"] for e in after["timeline"] if e["kind"] == "notice" and "no request" in e["message"]]
    assert strays == []
    logs = (await timeline_entry(console, sid, reply["operation"]["key"])).get("logs") or []
    assert [line["data"]["line"] for line in logs] == [1, 2, 3]
