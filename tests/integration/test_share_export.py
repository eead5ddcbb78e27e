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
import base64
import os
import pty
import select
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from tests.hostile.fixtures import HostileUrl
from tests.hostile.tools_copy import PASTE_NAME, RAN, SHELL_NAME
from tests.integration.conftest import Console, child_env

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
    # The frames were recorded with the header's mask (the log never holds the value): the file's target has it.
    sent = [e["data"] for e in full_file.json()["events"] if e["kind"] == "wire" and e["data"]["direction"] == "out"]
    assert sent and all(["Authorization", MASKED] in [[k.title(), v] for k, v in w["headers"]] for w in sent)


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


# -- What leaves the console to be run somewhere else. A copied cURL, pasted into a shell, must send what
# the console sent and run nothing else, whatever the target put in its tool names (`tools_copy`).

pytestmark = pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                                reason="needs curl and bash")
ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 60.0
CURL_OWN = {"host", "content-length", "accept-encoding", "connection"}  # headers the command leaves to curl


async def _copied(console: Console, sid: str, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Call `tool`; its cURL command and what the console recorded as sent."""
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": tool, "mode": "json", "json": json.dumps(arguments)})
    reply = response.json()
    assert reply["ok"], reply
    (sent,) = [w for w in (await console.entry(sid, reply["key"]))["wire"] if w["direction"] == "out"]
    command = await console.http.get(f"/sessions/{sid}/entries/{reply['key']}/curl")
    assert command.status_code == 200, command.text
    return command.text, sent


def _bash(command: str) -> subprocess.CompletedProcess[str]:
    """Run a copied command as a script bash reads from its stdin (a -c argument is bounded as any exec's is)."""
    return subprocess.run(["bash"], input=command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def _arrived(curl_stdout: str) -> tuple[str, list[str], bytes]:
    """The request line, header lines and body that reached the target (as `wire_echo` says them back)."""
    said = json.loads(json.loads(curl_stdout)["result"]["content"][0]["text"])
    request_line, *headers = base64.b64decode(said["head"]).decode("latin-1").split("\r\n")
    return request_line, [h for h in headers if h], base64.b64decode(said["body"])


def _typed_into_bash(command: str) -> str:
    """What an interactive bash prints when `command` reaches it as typed keys (a paste with no bracketed paste:
    an older bash, or a terminal that does not wrap it), then a line whose answer says the shell is done."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: an interactive bash with no startup files
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], {**child_env(), "PS1": "$ ", "TERM": "dumb"})
    seen = b""
    try:
        os.write(fd, command.encode() + b"\necho DONE-$((1+1))\n")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while b"DONE-2" not in seen.replace(b"DONE-$((1+1))", b""):
            left = deadline - time.monotonic()
            assert left > 0, f"the shell never got to the line after the command: {seen!r}"
            if select.select([fd], [], [], left)[0]:
                seen += os.read(fd, 65536)
    finally:
        os.close(fd)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return seen.decode("utf-8", "replace")


def _unprintable(command: str) -> list[str]:
    return [c for c in command if c not in "\n " and unicodedata.category(c)[0] in "CZ"]


async def test_a_copied_curl_typed_into_a_shell_does_not_run_the_command_in_a_tool_name(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # The name is `paste'` DEL `; echo $((6*7))…  #`. shlex.quote kept DEL as it is; typed, DEL rubbed out the `'`
    # that reopens the quoted word after the escaped quote, and the shell ran the echo (the `#` hid the rest).
    sid = await console.connected_http(hostile_http("copy"))
    command, _sent = await _copied(console, sid, PASTE_NAME, {})
    assert _unprintable(command) == []
    assert f"42{RAN}" not in _typed_into_bash(command)


@pytest.mark.parametrize("tool", [PASTE_NAME, SHELL_NAME])
async def test_a_copied_curl_sends_the_bytes_the_console_sent_for_a_hostile_tool_name_and_arguments(
        console: Console, hostile_http: Callable[..., HostileUrl], tool: str) -> None:
    sid = await console.connected_http(hostile_http("copy"))
    value = "a'b\"c $(x) `y` \\ \x7f \u0085 \u2028 \u200b \u00a0 \u202e caf\u00e9"
    command, sent = await _copied(console, sid, tool, {"v": value})
    assert _unprintable(command) == []
    done = _bash(command)
    assert done.returncode == 0, done.stderr
    _line, headers, body = _arrived(done.stdout)
    assert body == sent["raw"].encode()
    went = {(name.lower(), value.strip()) for name, value in (h.split(":", 1) for h in headers)}
    assert {(name.lower(), value) for name, value in sent["headers"] if name.lower() not in CURL_OWN} <= went


async def test_a_copied_curl_sends_one_request_to_the_url_the_console_sent_it_to(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # curl reads {a,b} and [1-2] in a URL as patterns: the command sent the call four times, to four other URLs.
    # And a space (the console sends it as %20) made curl refuse the URL.
    sid = await console.connected_http(hostile_http("copy") + "?q={a,b}&r=[1-2]&s=a b")
    console_said = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": SHELL_NAME, "mode": "json", "json": "{}"})
    reply = console_said.json()
    command = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}/curl")).text
    done = _bash(command)
    assert done.returncode == 0, done.stderr
    curl_line, _headers, _body = _arrived(done.stdout)  # one answer: json.loads refuses a second one after it
    console_line, _headers, _body = _arrived(json.dumps({"result": reply["result"]}))
    assert curl_line == console_line == "POST /mcp?q={a,b}&r=[1-2]&s=a%20b HTTP/1.1"


async def test_a_copied_curl_of_a_body_longer_than_one_exec_argument_runs_and_sends_it_whole(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # Linux execs no argument over 128 KiB: as --data-raw's argument, a 200 KB body made bash say "Argument list
    # too long" and send nothing.
    sid = await console.connected_http(hostile_http("copy"))
    command, sent = await _copied(console, sid, SHELL_NAME, {"v": "\u202e" + "x" * 200_000})
    done = _bash(command)
    assert done.returncode == 0, done.stderr[-500:]
    _line, headers, body = _arrived(done.stdout)
    assert body == sent["raw"].encode() and len(body) > 200_000
    assert f"content-length: {len(body)}" in [h.lower() for h in headers]


@pytest.mark.parametrize("headers", [[["x-a"]], [["x-a", "1", "2"]], [[]]])
async def test_a_session_file_whose_request_headers_are_not_name_value_pairs_is_refused_with_400(
        console: Console, hostile_http: Callable[..., HostileUrl], headers: list[list[str]]) -> None:
    # Lists of strings, as the record types them, but not pairs: the file imported, and the entry's cURL, its page's
    # HAR and the session's HAR export answered 500 from then on.
    sid = await console.connected_http(hostile_http("copy"))
    _command, _sent = await _copied(console, sid, SHELL_NAME, {})
    exported = json.loads((await console.http.get(f"/sessions/{sid}/export.json")).text)
    for event in exported["events"]:
        if event["kind"] == "wire" and event["data"]["direction"] == "out":
            event["data"]["headers"] = headers
    response = await console.http.post("/sessions/import", content=json.dumps(exported).encode(),
                                       headers={**JSON, "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert "'headers' is not of its type" in response.text


async def test_the_har_exports_name_the_url_the_request_went_to_without_its_fragment(
        console: Console, hostile_http: Callable[..., HostileUrl], tmp_path: Path) -> None:
    # HAR 1.2: "Absolute URL of the request (fragments are not included)". The session's HAR named the URL as
    # typed (a space in it, and the fragment, masked or not), and `call --har` too: neither went on the wire.
    url = hostile_http("copy")
    typed = url + "?s=a b#part"
    sid = await console.connected_http(typed)
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": SHELL_NAME, "mode": "json", "json": "{}"})
    line, _headers, _body = _arrived(json.dumps({"result": response.json()["result"]}))
    assert line == "POST /mcp?s=a%20b HTTP/1.1"
    for query in ("", "?secrets=1"):
        har = json.loads((await console.http.get(f"/sessions/{sid}/export.har{query}")).text)
        urls = {entry["request"]["url"] for entry in har["log"]["entries"]}
        assert urls == {url + "?s=a%20b"}, urls  # `s` is no credential's name: not secret unless marked
    har_file = str(tmp_path / "call.har")
    done = subprocess.run([sys.executable, "-m", "app", "call", typed, SHELL_NAME, "--har", har_file], cwd=ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    entries = json.loads(Path(har_file).read_text(encoding="utf-8"))["log"]["entries"]
    assert {entry["request"]["url"] for entry in entries} == {url + "?s=a%20b"}
    assert {entry["response"]["statusText"] for entry in entries} == {"OK"}  # not "HTTP 200 OK": the web HAR's too
    assert {entry["response"]["statusText"] for entry in har["log"]["entries"]} == {"OK"}


def test_call_har_says_where_the_servers_bytes_were_not_text(hostile_http: Callable[..., HostileUrl],
                                                              tmp_path: Path) -> None:
    # The session's HAR says so in content.comment; `call --har` held the U+FFFD and said nothing, as if the server
    # had sent that character.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    body = (b'{"jsonrpc":"2.0","id":@@ID@@,"result":{"resultType":"complete",'
            b'"content":[{"type":"text","text":"caf\xe9"}]}}')
    parts = [base64.b64encode(piece).decode() for piece in (head, body)]
    har_file = tmp_path / "call.har"
    done = subprocess.run([sys.executable, "-m", "app", "call", hostile_http("fidelity"), "say", "--json",
                           json.dumps({"parts": parts}), "--har", str(har_file)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert "caf\ufffd" in done.stdout, done.stdout + done.stderr
    (entry,) = [e for e in json.loads(har_file.read_text(encoding="utf-8"))["log"]["entries"]
                if e["_mcp"]["method"] == "tools/call"]
    assert "\ufffd" in entry["response"]["content"]["text"]
    assert "not valid" in entry["response"]["content"].get("comment", ""), entry["response"]["content"]


@pytest.mark.parametrize("wall", [1e12, -1e12, 1e308, 10**400, -10**400],
                         ids=["1e12", "-1e12", "1e308", "10**400", "-10**400"])
async def test_a_session_file_whose_frame_says_a_time_no_clock_shows_exports_a_whole_har(
        console: Console, demo_url: str, wall: float | int) -> None:
    # A frame's wall time is a float, checked as one; its event's own time must be one a clock shows. The file
    # imported, and the session's HAR was cut off mid-stream (the date of 1e12 s raised inside the streamed body; an
    # integer past a float's range raised in the check meant to catch it).
    sid = await console.connected_http(demo_url)
    await console.call_tool(sid, "echo", text="hi")
    exported = json.loads((await console.http.get(f"/sessions/{sid}/export.json")).text)
    frames = [e for e in exported["events"] if e["kind"] == "wire"]
    assert frames
    for frame in frames[-3:]:  # the call's request, its answer's head and its answer
        frame["data"]["wall"] = wall
    imported = await console.http.post("/sessions/import", content=json.dumps(exported).encode(),
                                       headers={**JSON, "content-type": "application/json"})
    assert imported.status_code == 200, imported.text
    new_sid = imported.json()["id"]
    har = await console.http.get(f"/sessions/{new_sid}/export.har")
    assert har.status_code == 200
    entries = json.loads(har.text)["log"]["entries"]  # whole, and JSON (no Infinity in a duration)
    assert entries and all(e["startedDateTime"].endswith("Z") for e in entries)
    assert all(isinstance(e["time"], float | int) and abs(e["time"]) < 1e20 for e in entries)
