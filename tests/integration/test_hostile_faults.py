"""Faults are told truthfully: deadlines are the console's own (idle, restarted by every frame, under an overall
maximum), a response with somebody else's id is not an answer, a dead target shows on the badge and recovers,
an HTTP 500 says what it is, stdout noise on stdio is tied to the waiting request, and commands show pasteable."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable
from typing import Any

from tests.hostile.fixtures import HostileUrl, hostile_argv
from tests.integration.conftest import JSON, Console, eventually

IDLE_MESSAGE = "The console stopped waiting: no frame for 1 s (idle deadline; setting request_idle_timeout_s)"


async def _connect_http(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def _call(console: Console, session_id: str, tool: str, **args: Any) -> dict[str, Any]:
    data = {"tool": tool, "mode": "json", "json": json.dumps(args)}
    response = await console.http.post(f"/sessions/{session_id}/tools/call", data=data, headers=JSON)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


# --- deadlines ---------------------------------------------------------------------------------


async def test_a_slow_call_sending_progress_outlives_an_idle_deadline_shorter_than_the_call(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl]) -> None:
    console = make_console(request_idle_timeout_s=1.0)
    sid = await _connect_http(console, hostile_http("faults"))
    reply = await _call(console, sid, "progress_every", interval=0.3, duration=3)
    assert reply["status"] == "complete", reply
    assert reply["duration_ms"] > 2500  # three times the idle deadline, alive all along


async def test_a_silent_call_is_stopped_by_the_idle_deadline_with_the_consoles_own_message(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl]) -> None:
    console = make_console(request_idle_timeout_s=1.0)
    sid = await _connect_http(console, hostile_http("faults"))
    reply = await _call(console, sid, "silent")
    assert reply["status"] == "error", reply
    assert reply["error"]["type"] == "RequestTimedOut"
    assert reply["error"]["message"] == IDLE_MESSAGE
    assert reply["operation"]["message"] == IDLE_MESSAGE


async def test_the_overall_maximum_set_for_the_session_stops_a_chatty_call(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _connect_http(console, hostile_http("faults"))
    saved = await console.http.post(f"/sessions/{sid}/request-settings", headers=JSON,
                                    data={"log_level": "", "progress": "on", "idle_timeout_s": "1", "max_s": "2"})
    assert saved.status_code == 200, saved.text
    settings = (await console.session(sid))["request_settings"]
    assert (settings["idle_timeout_s"], settings["max_s"]) == (1.0, 2.0)
    reply = await _call(console, sid, "chatty")
    assert reply["status"] == "error", reply
    assert reply["error"]["message"] == ("The console stopped waiting: the request passed the overall maximum "
                                         "of 2 s (setting request_max_s)")
    assert reply["notification_count"] >= 5  # it was talking the whole time: idle never fired


async def test_wait_longer_pushes_the_idle_deadline_of_a_running_call_out(
        make_console: Callable[..., Console], hostile_http: Callable[..., HostileUrl]) -> None:
    console = make_console(request_idle_timeout_s=1.0)
    sid = await _connect_http(console, hostile_http("faults"))
    call = asyncio.create_task(_call(console, sid, "silent"))

    async def running_op() -> str | None:
        ops = [o for o in (await console.session(sid))["operations"] if o["status"] == "running"]
        return ops[0]["key"] if ops else None

    key = await eventually(running_op, what="the call to be running")
    for _ in range(2):
        answer = await console.http.post(f"/sessions/{sid}/wait-longer/{key}", headers=JSON)
        assert answer.status_code == 200, answer.text
    assert answer.json()["extensions"] == 2
    reply = await call
    assert reply["error"]["type"] == "RequestTimedOut"
    assert reply["duration_ms"] > 2500  # one idle second plus two more
    over = await console.http.post(f"/sessions/{sid}/wait-longer/{key}", headers=JSON)
    assert over.status_code == 409


# --- a response for somebody else ------------------------------------------------------------


async def test_a_response_with_the_wrong_id_is_flagged_on_the_frame_and_the_entry_is_not_complete(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _connect_http(console, hostile_http("faults"))
    reply = await _call(console, sid, "wrong_id")
    rid = reply["id"]
    assert reply["status"] == "error" and not reply["ok"], reply
    assert reply["error"]["message"] == f"no answer: the server's response carried id {rid + 1000}, not {rid}"
    [entry] = [e for e in (await console.session(sid))["timeline"] if e.get("key") == reply["operation"]["key"]]
    assert entry["status"] == "error"
    wire = (await console.entry(sid, reply["key"]))["wire"]
    [incoming] = [w for w in wire if w["direction"] == "in"]
    assert f"response id {rid + 1000} matches no request" in (incoming["note"] or ""), incoming


# --- the badge ---------------------------------------------------------------------------------


async def test_a_killed_target_makes_the_badge_unreachable_and_a_new_one_on_the_same_port_brings_it_back(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    url = hostile_http("faults")
    sid = await _connect_http(console, url)
    assert (await _call(console, sid, "fine"))["status"] == "complete"
    url.kill()
    failed = await _call(console, sid, "fine")
    assert failed["error"]["type"] == "ConnectFailed", failed
    s = await console.session(sid)
    assert s["status"] == "unreachable", s["status_message"]
    page = (await console.http.get(f"/sessions/{sid}")).text
    assert 'data-status="unreachable"' in page and "unreachable since " in page
    hostile_http("faults", port=url.port)
    assert (await _call(console, sid, "fine"))["status"] == "complete"
    assert (await console.session(sid))["status"] == "connected"


# --- messages ----------------------------------------------------------------------------------


async def test_an_http_500_after_good_calls_is_told_as_a_server_error_with_its_body(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _connect_http(console, hostile_http("faults"))
    for _ in range(3):
        assert (await _call(console, sid, "fine"))["status"] == "complete"
    reply = await _call(console, sid, "http_500")
    message = reply["error"]["message"]
    assert message.startswith("HTTP 500 Internal Server Error from the server: "), message
    assert "database on fire (trace id 42)" in message
    assert "does not look like an MCP endpoint" not in message


async def test_a_stdio_server_printing_to_stdout_while_a_request_waits_warns_on_that_request(
        console: Console) -> None:
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("faults")))
    assert s["status"] == "connected", s["status_message"]
    reply = await _call(console, s["id"], "stdout_noise")
    assert reply["status"] == "complete", reply
    wanted = "stdout line is not JSON-RPC: 'hello from print()' (stdio servers must log to stderr)"
    assert any(wanted in w for w in reply["warnings"]), reply["warnings"]


async def test_a_stdio_command_with_a_quoted_argument_is_shown_pasteable(console: Console) -> None:
    argv = hostile_argv("faults", name="two words")
    command = shlex.join(argv)
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    assert s["target"] == command and shlex.split(s["target"]) == argv
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    assert "--name &#39;two words&#39;" in page
