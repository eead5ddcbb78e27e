"""Exports that travel: HAR 1.2, session files (import, read-only), cURL, restarts and replay.

Every session here is recorded against the real demo server; the cURL test runs the real `curl`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts

SECRET = "secret123"
MASKED = "Bearer ••••••"


# --- recording a session with every kind of entry -------------------------------------------------------


async def record_everything(console: Console, session_id: str) -> dict[str, Any]:
    """A tool call, a two-round dialog declined, an error, and a listen that got a notification and stopped.

    Returns the keys and ids the tests look for.
    """
    echo = await console.call_tool(session_id, "echo", text="exported")
    assert echo["status"] == "complete", echo

    form = await console.call_tool(session_id, "profile_form")
    assert form["status"] == "awaiting_input", form
    op = form["operation"]["op"]
    answered = await console.http.post(f"/sessions/{session_id}/operations/{op}/answer",
                                       data={"key": "profile", "action": "decline"}, headers=JSON)
    assert answered.status_code == 200 and answered.json()["status"] == "complete", answered.text
    rounds = answered.json()["rounds"]

    error = await console.call_tool(session_id, "no_such_tool")
    assert error["status"] == "error" and error["error"]["code"] == -32602, error

    started = await console.http.post(f"/sessions/{session_id}/subscriptions", data={"toolsListChanged": "1"},
                                      headers=JSON)
    sub = started.json()["sub"]

    async def sub_state() -> dict[str, Any]:
        [snap] = [x for x in (await console.session(session_id))["subscriptions"] if x["sub"] == sub]
        return snap

    async def acknowledged() -> dict[str, Any] | None:
        snap = await sub_state()
        return snap if snap["state"] == "active" else None

    listen = await eventually(acknowledged, what="the listen to be acknowledged")
    await console.call_tool(session_id, "add_tool", name=f"exported_{uuid.uuid4().hex[:8]}")

    async def notified() -> bool:
        return bool((await sub_state())["total"] >= 1)

    await eventually(notified, what="tools/list_changed on the listen")
    stopped = await console.http.post(f"/sessions/{session_id}/subscriptions/{sub}/stop", headers=JSON)
    assert stopped.status_code == 200

    async def settled() -> bool:
        s = await console.session(session_id)
        return not [e for e in s["timeline"] if e.get("status") in ("pending", "running", "awaiting_input")]

    await eventually(settled, what="every entry to finish")
    return {"echo": echo, "op": op, "rounds": rounds, "error": error, "listen_key": listen["exchange"],
            "listen_id": listen["subscription_id"]}


async def http_session(console: Console, demo_url: str, headers: str = "") -> str:
    s = await console.connect(kind="http", url=demo_url, headers=headers)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


def summary(s: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a timeline shows, entry by entry: kind, method or message, status, and each round's status."""
    return [(e["key"], e["kind"], e.get("method") or e.get("message"), e.get("status"),
             tuple((r["n"], r["key"], r["status"]) for r in e.get("rounds") or ())) for e in s["timeline"]]


# --- HAR ---------------------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pairs(items: Any, where: str) -> None:
    assert isinstance(items, list), f"{where} is not a list"
    for item in items:
        assert isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str), \
            f"{where}: {item!r} is not a {{name, value}} pair of strings"


def check_har_1_2(har: dict[str, Any]) -> None:
    """The parts of HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) every reader relies on."""
    log = har["log"]
    assert log["version"] == "1.2"
    assert isinstance(log["creator"]["name"], str) and isinstance(log["creator"]["version"], str)
    assert isinstance(log["entries"], list) and log["entries"]
    for n, entry in enumerate(log["entries"]):
        where = f"entries[{n}]"
        datetime.fromisoformat(entry["startedDateTime"].replace("Z", "+00:00"))  # ISO 8601 or it raises
        assert "T" in entry["startedDateTime"], f"{where}.startedDateTime is not a date-time"
        assert _number(entry["time"]) and entry["time"] >= 0, f"{where}.time"
        request = entry["request"]
        assert isinstance(request["method"], str) and isinstance(request["url"], str), where
        assert request["url"].startswith("http"), f"{where}.request.url"
        assert isinstance(request["httpVersion"], str), where
        assert isinstance(request["cookies"], list), where
        _pairs(request["headers"], f"{where}.request.headers")
        _pairs(request["queryString"], f"{where}.request.queryString")
        assert isinstance(request["headersSize"], int) and isinstance(request["bodySize"], int), where
        if "postData" in request:
            assert isinstance(request["postData"]["mimeType"], str), where
        response = entry["response"]
        assert isinstance(response["status"], int) and not isinstance(response["status"], bool), where
        assert isinstance(response["statusText"], str) and isinstance(response["httpVersion"], str), where
        assert isinstance(response["cookies"], list), where
        _pairs(response["headers"], f"{where}.response.headers")
        content = response["content"]
        assert isinstance(content["size"], int) and isinstance(content["mimeType"], str), where
        assert isinstance(response["redirectURL"], str), where
        assert isinstance(response["headersSize"], int) and isinstance(response["bodySize"], int), where
        assert isinstance(entry["cache"], dict), where
        timings = entry["timings"]
        for phase in ("send", "wait", "receive"):
            assert _number(timings[phase]) and timings[phase] >= -1, f"{where}.timings.{phase}"


async def test_the_har_of_a_session_with_calls_dialogs_a_listen_and_an_error_is_valid_har_1_2(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    recorded = await record_everything(console, sid)
    response = await console.http.get(f"/sessions/{sid}/export.har")
    assert response.status_code == 200
    assert "attachment" in response.headers["content-disposition"]
    har = response.json()
    check_har_1_2(har)

    by_key = {e["_mcp"]["exchange"]: e for e in har["log"]["entries"]}
    assert {e["_mcp"]["method"] for e in by_key.values()} >= {"server/discover", "tools/list", "tools/call",
                                                                "subscriptions/listen"}
    for entry in by_key.values():
        body = json.loads(entry["request"]["postData"]["text"])
        assert entry["_mcp"]["jsonrpcId"] == body["id"] and entry["_mcp"]["method"] == body["method"]
        assert entry["request"]["method"] == "POST"
        if entry["_mcp"]["exchange"] != recorded["error"]["key"]:
            assert entry["response"]["status"] == 200, entry["_mcp"]

    for rnd in recorded["rounds"]:  # the two rounds of the declined dialog, linked by the console's operation id
        mcp = by_key[rnd["key"]]["_mcp"]
        assert (mcp["operationId"], mcp["round"], mcp["jsonrpcId"]) == (recorded["op"], rnd["n"], rnd["request_id"])
    assert [by_key[r["key"]]["_mcp"]["resultType"] for r in recorded["rounds"]] == ["input_required", "complete"]

    listen = by_key[recorded["listen_key"]]
    assert listen["_mcp"]["subscriptionId"] == recorded["listen_id"]
    assert "notifications/subscriptions/acknowledged" in listen["response"]["content"]["text"]
    assert "notifications/tools/list_changed" in listen["response"]["content"]["text"]

    error = by_key[recorded["error"]["key"]]
    assert error["_mcp"]["status"] == "error" and "-32602" in error["response"]["content"]["text"]
    assert error["response"]["status"] == recorded["error"]["error"]["http_status"]
    assert by_key[recorded["echo"]["key"]]["_mcp"]["subscriptionId"] is None


# --- secrets ------------------------------------------------------------------------------------------------


def authorization_values(har: dict[str, Any]) -> set[str]:
    return {h["value"] for e in har["log"]["entries"] for h in e["request"]["headers"]
            if h["name"].lower() == "authorization"}


async def test_secrets_are_masked_in_the_har_and_session_file_unless_the_owner_asks_for_them(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url, headers=f"Authorization: Bearer {SECRET}")
    await console.call_tool(sid, "echo", text="with a token")

    masked_har = await console.http.get(f"/sessions/{sid}/export.har")
    assert SECRET not in masked_har.text
    assert authorization_values(masked_har.json()) == {MASKED}
    masked_file = await console.http.get(f"/sessions/{sid}/export.json")
    assert SECRET not in masked_file.text
    assert masked_file.json()["secrets"] == "masked"
    assert masked_file.json()["session"]["meta"]["target"]["headers"] == {"Authorization": MASKED}

    full_har = await console.http.get(f"/sessions/{sid}/export.har", params={"secrets": "1"})
    assert authorization_values(full_har.json()) == {f"Bearer {SECRET}"}
    full_file = await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})
    assert full_file.json()["secrets"] == "included"
    assert full_file.json()["session"]["meta"]["target"]["headers"] == {"Authorization": f"Bearer {SECRET}"}
    sent = [e["data"] for e in full_file.json()["events"] if e["kind"] == "wire" and e["data"]["direction"] == "out"]
    assert sent and all(["Authorization", f"Bearer {SECRET}"] in [[k.title(), v] for k, v in w["headers"]]
                        for w in sent)


async def test_a_credential_in_the_target_url_is_masked_in_the_har_as_in_the_session_file(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, f"{demo_url}?api_key={SECRET}")
    await console.call_tool(sid, "echo", text="token in the URL")
    session_file = await console.http.get(f"/sessions/{sid}/export.json")
    assert SECRET not in session_file.text
    har = await console.http.get(f"/sessions/{sid}/export.har")
    assert SECRET not in har.text


# --- cURL ------------------------------------------------------------------------------------------------------


def _final_response(output: str) -> dict[str, Any]:
    """The JSON-RPC response in a curl body: plain JSON, or the last data: line of an SSE stream."""
    text = output.strip()
    if text.startswith("{"):
        value: dict[str, Any] = json.loads(text)
        return value
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    messages = [json.loads(d) for d in data]
    return next(m for m in reversed(messages) if "result" in m or "error" in m)


async def test_a_copied_curl_command_run_with_curl_gets_the_same_result_from_the_server(
        console: Console, demo_url: str) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the curl binary is not installed")
    sid = await http_session(console, demo_url)
    reply = await console.call_tool(sid, "add", a="2", b="40")
    assert reply["status"] == "complete"
    command = await console.http.get(f"/sessions/{sid}/entries/{reply['key']}/curl")
    assert command.status_code == 200 and command.text.startswith("curl ")

    done = await asyncio.to_thread(subprocess.run, ["sh", "-c", command.text], capture_output=True, text=True,
                                   timeout=20)
    assert done.returncode == 0, done.stderr
    answer = _final_response(done.stdout)
    assert answer["id"] == reply["id"]
    assert answer["result"]["content"] == reply["result"]["content"]
    assert answer["result"]["structuredContent"] == {"sum": 42}


# --- session files: export, import -------------------------------------------------------------------------------


async def test_export_then_import_round_trips_every_kind_of_entry_into_a_read_only_session(
        console: Console) -> None:
    s = await console.connect(kind="demo-stdio")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    await record_everything(console, sid)
    original = await console.session(sid)
    kinds = {e["kind"] for e in original["timeline"]}
    assert kinds == {"exchange", "operation", "notice"}, kinds

    # With secrets: a masked file masks every typed value (the demo's command and cwd too), so only the
    # owner's full export can look exactly as the original did.
    exported = await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})
    assert exported.status_code == 200
    imported = await console.http.post("/sessions/import", content=exported.content,
                                       headers={**JSON, "Content-Type": "application/json"})
    assert imported.status_code == 200, imported.text
    copy_id = imported.json()["id"]
    assert copy_id != sid

    copy = await console.session(copy_id)
    assert summary(copy) == summary(original)
    assert copy["seq"] == original["seq"]
    assert copy["status"] == "closed" and "read-only" in copy["status_message"]
    refused = await console.http.post(f"/sessions/{copy_id}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                      headers=JSON)
    assert refused.status_code == 409
    assert (await console.http.post(f"/sessions/{copy_id}/reconnect", headers=JSON)).status_code == 409
    assert summary(await console.session(copy_id)) == summary(original), "a refused call must record nothing"


async def test_importing_something_that_is_not_a_session_file_is_refused_with_400(console: Console) -> None:
    for body in (b"not json", b"{}", json.dumps({"format": "mcp-console-session", "version": 99}).encode()):
        response = await console.http.post("/sessions/import", content=body, headers=JSON)
        assert response.status_code == 400, body
        assert response.json()["error"].startswith("Cannot import")
    assert console.manager.sessions == {}


# --- restart ------------------------------------------------------------------------------------------------------


async def test_a_restarted_console_brings_the_session_back_closed_and_reconnect_connects_it_again(
        restarts: ConsoleRestarts, demo_url: str) -> None:
    console = restarts.first()
    sid = await http_session(console, demo_url)
    await console.call_tool(sid, "echo", text="before the restart")
    before = await console.session(sid)

    console = await restarts.restart(console)
    back = await console.session(sid)
    assert back["status"] == "closed"
    assert summary(back) == summary(before)
    assert back["seq"] >= before["seq"]
    kept = [(e.seq, e.kind, e.data) for e in console.manager.store.events(sid) if e.seq <= before["seq"]]

    reconnect = await console.http.post(f"/sessions/{sid}/reconnect")
    assert reconnect.status_code == 303
    again = await console.settled(sid)
    assert again["status"] == "connected", again["status_message"]
    reply = await console.call_tool(sid, "echo", text="after the restart")
    assert reply["status"] == "complete" and reply["key"].startswith("c2"), reply["key"]
    after = await console.session(sid)
    assert summary(after)[-len(before["timeline"]):] == summary(before), "the old entries are still there"
    assert [(e.seq, e.kind, e.data) for e in console.manager.store.events(sid) if e.seq <= before["seq"]] == kept, \
        "reconnecting rewrote recorded history"


async def test_after_a_crash_the_restored_session_goes_on_from_its_last_seq_without_rewriting_history(
        restarts: ConsoleRestarts, demo_url: str) -> None:
    console = restarts.first()
    sid = await http_session(console, demo_url)
    # An acknowledged listen appends subscription snapshots and saves no session metadata until it ends:
    # the store then holds events past the seq in the last saved metadata, as a crash would leave them.
    started = await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                                      headers=JSON)
    sub = started.json()["sub"]

    async def acknowledged() -> bool:
        subs = (await console.session(sid))["subscriptions"]
        return any(x["sub"] == sub and x["state"] == "active" for x in subs)

    await eventually(acknowledged, what="the listen to be acknowledged")
    recorded = [(e.seq, e.kind, e.data) for e in console.manager.store.events(sid)]
    last = recorded[-1][0]

    console = restarts.after_crash(console)
    back = await console.session(sid)
    assert back["status"] == "closed"
    reconnect = await console.http.post(f"/sessions/{sid}/reconnect")
    assert reconnect.status_code == 303
    assert (await console.settled(sid))["status"] == "connected"
    assert [(e.seq, e.kind, e.data) for e in console.manager.store.events(sid) if e.seq <= last] == recorded, \
        "reconnecting rewrote recorded history"
    assert back["seq"] >= last, "a tab that saw the last seq would miss what comes next"


# --- replay -------------------------------------------------------------------------------------------------------


def sent_params(detail: dict[str, Any]) -> dict[str, Any]:
    [out] = [w for w in detail["wire"] if w["direction"] == "out"]
    params: dict[str, Any] = json.loads(out["raw"])["params"]
    return {k: v for k, v in params.items() if k != "_meta"}


async def test_replaying_a_tools_call_as_is_sends_the_same_params_as_a_new_linked_operation(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    original = await console.call_tool(sid, "add", a="20", b="22")
    response = await console.http.post(f"/sessions/{sid}/replay", data={"key": original["key"], "mode": "as-is"},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["replay_of"] == original["key"]
    assert replay["op"] != original["operation"]["op"] and replay["status"] == "complete"
    assert replay["final"]["result"]["structuredContent"] == {"sum": 42}
    [rnd] = replay["rounds"]
    assert rnd["key"] != original["key"]
    again = sent_params(await console.entry(sid, rnd["key"]))
    assert again == sent_params(await console.entry(sid, original["key"])) == {
        "name": "add", "arguments": {"a": 20, "b": 22}}
    [entry] = [e for e in (await console.session(sid))["timeline"] if e["key"] == replay["key"]]
    assert entry["replay_of"] == original["key"]


async def test_replaying_a_tools_call_edited_sends_the_edited_arguments(console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    original = await console.call_tool(sid, "echo", text="as recorded")
    edited = {"name": "echo", "arguments": {"text": "as edited"}}
    response = await console.http.post(f"/sessions/{sid}/replay", headers=JSON, data={
        "key": original["key"], "mode": "edited", "method": "tools/call", "params": json.dumps(edited)})
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["replay_of"] == original["key"] and replay["status"] == "complete"
    assert replay["final"]["result"]["content"] == [{"type": "text", "text": "as edited"}]
    [rnd] = replay["rounds"]
    assert sent_params(await console.entry(sid, rnd["key"])) == edited


async def test_replaying_the_answered_round_of_a_dialog_as_is_sends_its_answers_and_state_again(
        console: Console, demo_url: str) -> None:
    sid = await http_session(console, demo_url)
    form = await console.call_tool(sid, "profile_form")
    op = form["operation"]["op"]
    answered = await console.http.post(f"/sessions/{sid}/operations/{op}/answer",
                                       data={"key": "profile", "action": "decline"}, headers=JSON)
    second = answered.json()["rounds"][1]
    original = sent_params(await console.entry(sid, second["key"]))
    assert original["inputResponses"] == {"profile": {"action": "decline"}} and original["requestState"]

    response = await console.http.post(f"/sessions/{sid}/replay", data={"key": second["key"], "mode": "as-is"},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["replay_of"] == second["key"] and replay["status"] == "complete"
    assert replay["final"]["result"]["structuredContent"] == {"action": "decline"}
    [rnd] = replay["rounds"]
    assert sent_params(await console.entry(sid, rnd["key"])) == original
