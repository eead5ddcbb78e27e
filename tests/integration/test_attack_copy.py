"""Attack: what leaves the console to be run somewhere else. A copied cURL, pasted into a shell, must send what
the console sent and run nothing else, whatever the target put in its tool names (`tools_copy`)."""

from __future__ import annotations

import base64
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.fixtures import HostileUrl
from tests.hostile.tools_copy import PASTE_NAME, RAN, SHELL_NAME
from tests.integration.conftest import JSON, Console, child_env

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
        assert urls == {url + ("?s=a%20b" if query else "?s=\u2022\u2022\u2022\u2022\u2022\u2022")}, urls
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
