"""What the console sends stays exactly right: ids never repeat, capabilities are not lost,
unknown result types are not taken as success, and nothing non-JSON goes out."""

from __future__ import annotations

import base64
import html
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.fixtures import HostileUrl, hostile_argv
from tests.integration.conftest import JSON, Console, Seen, TinyHttp, child_env, eventually
from tests.legacy.fixtures import legacy_server, legacy_url


def _tiny_mcp(tiny_http: TinyHttp, call_result: dict[str, Any]) -> Any:
    def handler(seen: Seen) -> tuple[int, str, bytes]:
        body = seen.json()
        if body["method"] == "server/discover":
            return 200, "application/json", TinyHttp.result(body["id"], TinyHttp.discover(capabilities={"tools": {}}))
        if body["method"] == "tools/list":
            tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"type": "number"}}}}
            return 200, "application/json", TinyHttp.result(body["id"], {"resultType": "complete", "tools": [tool]})
        return 200, "application/json", TinyHttp.result(body["id"], call_result)
    return tiny_http.start(handler)


async def test_an_unknown_result_type_ends_the_operation_as_invalid_not_complete(
        console: Console, tiny_http: TinyHttp) -> None:
    server = _tiny_mcp(tiny_http, {"resultType": "incomplete", "inputRequests": {}})
    s = await console.connect(kind="http", url=server.url)
    reply = await console.call_tool(s["id"], "t", x="1")
    assert reply["status"] == "error"
    assert "unknown resultType 'incomplete'" in reply["operation"]["message"]
    assert "pre-release" in reply["operation"]["message"]


async def test_a_number_too_large_for_json_is_refused_and_nothing_is_sent(
        console: Console, tiny_http: TinyHttp) -> None:
    server = _tiny_mcp(tiny_http, {"resultType": "complete", "content": []})
    s = await console.connect(kind="http", url=server.url)
    before = len(server.requests)
    response = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "t", "arg.x": "1e400"},
                                       headers=JSON)
    assert response.json()["sent"] is False
    response = await console.http.post(f"/sessions/{s['id']}/tools/call",
                                       data={"tool": "t", "mode": "json", "json": '{"x": NaN}'}, headers=JSON)
    assert response.json()["sent"] is False
    assert len(server.requests) == before


async def test_json_rpc_ids_go_on_after_a_reconnect(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    first = await console.call_tool(s["id"], "echo", text="before")
    session = console.manager.sessions[s["id"]]
    await session.close()
    response = await console.http.post(f"/sessions/{s['id']}/reconnect")
    assert response.status_code == 303
    again = await console.settled(s["id"])
    assert again["status"] == "connected"
    second = await console.call_tool(s["id"], "echo", text="after")
    assert second["id"] > first["id"]
    ids = [e["id"] for e in (await console.session(s["id"]))["timeline"] if e.get("kind") == "exchange"]
    assert len(ids) == len(set(ids)), "a JSON-RPC id was used twice in one session"


async def test_toggling_capabilities_keeps_what_the_checkboxes_do_not_show(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    caps = '{"sampling": {"tools": {}}, "elicitation": {"form": {}}, "extensions": {"x.example/ext": {}}}'
    response = await console.http.post(f"/sessions/{s['id']}/capabilities", data={"mode": "json", "caps_json": caps},
                                       headers=JSON)
    assert response.json()["problems"] == []
    response = await console.http.post(f"/sessions/{s['id']}/capabilities",
                                       data={"cap": ["sampling", "elicitation.url"]}, headers=JSON)
    assert response.json()["client_capabilities"] == {
        "sampling": {"tools": {}}, "elicitation": {"url": {}}, "extensions": {"x.example/ext": {}}}


# -- Wire fidelity under attack: a hostile target (`tools_fidelity`) sends odd but legal bytes, and what the console
# shows, exports and sends back is held beside what really crossed the wire.

__all__ = ["legacy_server", "legacy_url"]  # fixtures

ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 90.0


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _answer(head: list[str], *body: bytes) -> list[str]:
    """The parts of a whole HTTP answer for the `say` tool: the head, then each piece of body as its own write."""
    first = ("HTTP/1.1 200 OK\r\n" + "\r\n".join([*head, "Connection: close"]) + "\r\n\r\n").encode("latin-1")
    return [_b64(first), *(_b64(piece) for piece in body)]


async def _say(console: Console, sid: str, parts: list[str]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "say", "mode": "json", "json": json.dumps({"parts": parts})})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _received(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in entry["wire"] if w["direction"] == "in"]


def _shown_frames(page: str) -> list[str]:
    """The text of each frame's box on the entry page, as a reader sees it."""
    return [html.unescape(re.sub(r"<[^>]+>", "", box)) for box in re.findall(r'<pre class="raw">(.*?)</pre>', page,
                                                                              re.S)]


ODD_RESULT = (b'{"jsonrpc":"2.0","id":@@ID@@,"result":{"resultType":"complete","content":[],"structuredContent":'
              b'{"a":1,"a":2,"z":-0,"inf":1e400,"f":1.0,"big":123456789012345678901234567890,"e":"caf\\u00e9",'
              b'"lone":"\\ud800","nul":"\\u0000"}}}')


async def test_the_frame_box_shows_the_targets_own_spelling_of_every_key_and_number(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # Shown through a decode and re-encode, this answer read "a": 2 alone, "z": 0, "inf": Infinity (not JSON: the
    # target sent 1e400), "e": "café" and "lone": "�", in the box that stands for the frame as it came.
    sid = await console.connected_http(hostile_http("fidelity"))
    reply = await _say(console, sid, _answer(["Content-Type: application/json"], ODD_RESULT))
    (frame,) = _received(await console.entry(sid, reply["key"]))
    sent_by_target = ODD_RESULT.replace(b"@@ID@@", str(reply["id"]).encode()).decode()
    assert frame["raw"] == sent_by_target
    page = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}")).text
    shown = _shown_frames(page)[-1]
    assert re.sub(r"\s", "", shown) == sent_by_target  # laid out on lines, and nothing else changed
    for spelled in ('"a": 1', '"a": 2', '"z": -0', '"inf": 1e400', '"f": 1.0', r'"e": "caf\u00e9"',
                    r'"lone": "\ud800"', r'"nul": "\u0000"'):
        assert spelled in shown, spelled


async def _state_round(console: Console, sid: str, state: str, **more: int) -> tuple[dict[str, Any], bytes]:
    """Call `state_echo` with the JSON text of a requestState; the reply and the bytes of the retry that carried it."""
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "state_echo", "mode": "json", "json": json.dumps({"state": state, **more})})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    assert reply["ok"], reply
    said = json.loads(reply["result"]["content"][0]["text"])
    return reply, base64.b64decode(said["body"])


async def test_a_request_state_holding_a_lone_surrogate_escape_goes_back_as_the_same_string(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # The escape \ud800 is legal JSON, and the string it makes has no UTF-8 form: the console's inspector measured
    # it in UTF-8 and the call died with a 500, so the operation could never go on. It goes back as the escape.
    sid = await console.connected_http(hostile_http("fidelity"))
    reply, retry = await _state_round(console, sid, '"\\ud800 sealed \\udfff"')
    assert json.loads(retry)["params"]["requestState"] == "\ud800 sealed \udfff"
    assert b'"requestState":"\\ud800 sealed \\udfff"' in retry
    sent = [w for w in (await console.entry(sid, reply["key"]))["wire"] if w["direction"] == "out"]
    assert sent[-1]["raw"].encode() == retry  # and the record shows what went
    for path in (f"/sessions/{sid}", f"/sessions/{sid}/export.har", f"/sessions/{sid}/entries/{reply['key']}.json"):
        assert (await console.http.get(path)).status_code == 200, path
    exported = await console.http.get(f"/sessions/{sid}/export.json")
    imported = await console.http.post("/sessions/import", content=exported.content, headers=JSON)
    assert imported.status_code == 200, imported.text
    again = [w for w in (await console.entry(imported.json()["id"], reply["key"]))["wire"] if w["direction"] == "out"]
    assert again[-1]["raw"] == sent[-1]["raw"]


async def test_an_odd_or_huge_request_state_goes_back_as_the_same_string(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await console.connected_http(hostile_http("fidelity"))
    for state in ('"caf\\u00e9 \\u0000 \\\\ \\"q\\" \\/ \\u2028\\u2029\\ufeff"', '"{\\"a\\":1e400}"', '"007"'):
        _, retry = await _state_round(console, sid, state)
        assert json.loads(retry)["params"]["requestState"] == json.loads(state)
    _, retry = await _state_round(console, sid, "Zz9+/=\\u00e9", repeat=400_000)  # 4.4 MB of JSON text
    assert json.loads(retry)["params"]["requestState"] == "Zz9+/=\u00e9" * 400_000


SSE_PARTS = (b': keep-alive\r\nevent: message\r\nid: 7\r\ndata: {"jsonrpc":"2.0","method":"notifications/message",',
             b'"params":{"level":"info","data":"x"}}\r\n\r\n',
             b'data: {"jsonrpc":"2.0","id":@@ID@@,\ndata: "result":{"resultType":"complete","content":[]}}\n\n')


def _sse_data(text: str) -> list[str]:
    """The data of each event of an SSE text, read as the SSE spec reads it (a line without a field is dropped)."""
    events, data = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line:
            if data:
                events.append("\n".join(data))
            data = []
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
    return events


async def test_the_har_stream_of_an_event_with_several_data_lines_reads_back_as_the_same_events(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # The HAR wrote each event as "data: " + its data: the second line of a two-line event went without its field
    # name, so whatever reads the HAR (DevTools, a replay) dropped it. And the text is rebuilt from the events (the
    # comment, event, id and CRLFs are not kept), which the HAR entry now says.
    sid = await console.connected_http(hostile_http("fidelity"))
    reply = await _say(console, sid, _answer(["Content-Type: text/event-stream"], *SSE_PARTS))
    assert reply["ok"], reply
    frames = [w["raw"] for w in _received(await console.entry(sid, reply["key"]))]
    assert frames[1] == f'{{"jsonrpc":"2.0","id":{reply["id"]},\n"result":{{"resultType":"complete","content":[]}}}}'
    har = (await console.http.get(f"/sessions/{sid}/export.har")).json()
    (entry,) = [e for e in har["log"]["entries"] if e["_mcp"]["exchange"] == reply["key"]]
    content = entry["response"]["content"]
    assert _sse_data(content["text"]) == frames
    assert "rebuilt" in content["comment"]


def test_the_cli_har_stream_of_an_event_with_several_data_lines_reads_back_as_the_same_events(
        hostile_http: Callable[..., HostileUrl], tmp_path: Path) -> None:
    # `mcp-console call --har` joined a stream's frames with newlines under text/event-stream: no SSE at all.
    url = hostile_http("fidelity")
    har_file = tmp_path / "call.har"
    parts = _answer(["Content-Type: text/event-stream"], *SSE_PARTS)
    done = subprocess.run([sys.executable, "-m", "app", "call", url, "say", "--json", json.dumps({"parts": parts}),
                           "--har", str(har_file)], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    entries = json.loads(har_file.read_text())["log"]["entries"]
    call = next(e for e in entries if e["_mcp"]["method"] == "tools/call")
    content = call["response"]["content"]
    data = _sse_data(content["text"])
    assert len(data) == 2 and json.loads(data[1])["result"]["resultType"] == "complete"
    assert "rebuilt" in content["comment"]


def _notes(entry: dict[str, Any]) -> str:
    return " ".join(str(w.get("note") or "") for w in entry["wire"])


def _text_result(text: bytes) -> bytes:
    return (b'{"jsonrpc":"2.0","id":@@ID@@,"result":{"resultType":"complete","content":[{"type":"text","text":"' + text
            + b'"}]}}')


LATIN1_TEXT = _text_result(b"caf\xe9")
GENUINE_FFFD = _text_result(b"\xef\xbf\xbd")


async def test_bytes_that_are_not_utf8_are_said_to_be_shown_as_replacement_characters(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # Decoded with errors="replace", the byte 0xE9 became U+FFFD in the frame and nothing said the target had sent
    # something else: the record looked like the target's own U+FFFD. In a body and on a stream, split or not.
    sid = await console.connected_http(hostile_http("fidelity"))
    cut = LATIN1_TEXT.index(b"\xe9")
    for ctype, body in (("application/json", [LATIN1_TEXT]),
                        ("text/event-stream", [b"data: " + LATIN1_TEXT[:cut], LATIN1_TEXT[cut:] + b"\n\n"])):
        reply = await _say(console, sid, _answer([f"Content-Type: {ctype}"], *body))
        entry = await console.entry(sid, reply["key"])
        assert "caf\ufffd" in _received(entry)[-1]["raw"]
        assert "not valid utf-8" in _notes(entry) and "U+FFFD" in _notes(entry), (ctype, entry["wire"])
        har = (await console.http.get(f"/sessions/{sid}/export.har")).json()
        (har_entry,) = [e for e in har["log"]["entries"] if e["_mcp"]["exchange"] == reply["key"]]
        assert "U+FFFD" in har_entry["response"]["content"]["comment"]  # the HAR's text says so too
    split = GENUINE_FFFD.index(b"\xbf")  # the target's own U+FFFD, whole and split across two reads, is no replacement
    for ctype, body in (("application/json", [GENUINE_FFFD]),
                        ("text/event-stream", [b"data: " + GENUINE_FFFD[:split], GENUINE_FFFD[split:] + b"\n\n"])):
        reply = await _say(console, sid, _answer([f"Content-Type: {ctype}"], *body))
        entry = await console.entry(sid, reply["key"])
        assert "\ufffd" in _received(entry)[-1]["raw"] and "U+FFFD" not in _notes(entry), ctype


async def test_a_stream_that_ends_inside_a_character_says_its_last_frame_shows_a_replacement_character(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # The bytes of a character the stream ended inside are shown as U+FFFD (the decoder's last word), and that one
    # went unsaid: only the pieces read before it were checked.
    sid = await console.connected_http(hostile_http("fidelity"))
    cut = _text_result("caf\u00e9".encode())
    cut = cut[:cut.index(b"\xa9")]  # the stream ends after the first byte of the é
    reply = await _say(console, sid, _answer(["Content-Type: text/event-stream"], b"data: " + cut))
    entry = await console.entry(sid, reply["key"])
    assert _received(entry)[-1]["raw"].endswith("caf\ufffd"), _received(entry)
    assert "not valid utf-8" in _notes(entry) and "U+FFFD" in _notes(entry), entry["wire"]


def test_the_cli_har_of_an_answer_that_is_not_utf8_says_its_text_shows_replacement_characters(
        hostile_http: Callable[..., HostileUrl], tmp_path: Path) -> None:
    # The console's HAR says so in the content's comment; `mcp-console call --har` wrote the U+FFFD and nothing more.
    url = hostile_http("fidelity")
    for text, said in ((b"\xef\xbf\xbd", False), (b"caf\xe9", True)):
        for ctype, rebuilt in (("application/json", False), ("text/event-stream", True)):
            har_file = tmp_path / "call.har"
            body = _text_result(text) if not rebuilt else b"data: " + _text_result(text) + b"\n\n"
            parts = _answer([f"Content-Type: {ctype}"], body)
            done = subprocess.run([sys.executable, "-m", "app", "call", url, "say", "--json",
                                   json.dumps({"parts": parts}), "--har", str(har_file)], cwd=ROOT, env=child_env(),
                                  capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stderr
            entries = json.loads(har_file.read_text())["log"]["entries"]
            content = next(e for e in entries if e["_mcp"]["method"] == "tools/call")["response"]["content"]
            assert "\ufffd" in content["text"], content
            comment = content.get("comment", "")
            assert ("U+FFFD" in comment and "not valid utf-8" in comment) is said, (text, ctype, comment)
            assert ("rebuilt" in comment) is rebuilt, comment  # the stream's own comment is kept


async def _typed(console: Console, sid: str, form: dict[str, str]) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "typed_echo", **form},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _arrived(reply: dict[str, Any]) -> bytes:
    return base64.b64decode(json.loads(reply["result"]["content"][0]["text"])["body"])


async def test_a_typed_number_a_double_cannot_carry_is_refused_not_rounded(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # 1e-400 went out as 0.0 and 3.14159265358979323846 as 3.141592653589793: another number than the one typed,
    # with nothing said (1e400 was refused already: it would become Infinity).
    sid = await console.connected_http(hostile_http("fidelity"))
    for typed in ("1e-400", "3.14159265358979323846", "0.10000000000000001"):
        for form in ({"arg.n": typed}, {"mode": "json", "json": f'{{"n": {typed}}}'}):
            reply = await _typed(console, sid, form)
            assert reply.get("sent") is False, (form, reply)
            assert "digits" in json.dumps(reply), reply
    for typed in ("0.1", "1e16", "1.10", "-2.5E-3", "123456789012345678901234567890"):
        for form in ({"arg.n": typed}, {"mode": "json", "json": f'{{"n": {typed}}}'}):
            reply = await _typed(console, sid, form)
            assert reply["ok"], (form, reply)
            went = json.loads(_arrived(reply), parse_float=Decimal, parse_int=Decimal)["params"]["arguments"]["n"]
            assert went == Decimal(typed), (form, went)


def test_the_cli_refuses_an_argument_a_double_cannot_carry_instead_of_rounding_it(
        hostile_http: Callable[..., HostileUrl]) -> None:
    # `call --arg n=1e-400` sent 0.0; taken as "not JSON" it would go as the string "1e-400": neither is what was meant.
    url = hostile_http("fidelity")
    for given in (["--arg", "n=1e-400"], ["--json", '{"n": 3.14159265358979323846}']):
        done = subprocess.run([sys.executable, "-m", "app", "call", url, "typed_echo", *given], cwd=ROOT,
                              env=child_env(), capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert done.returncode != 0 and "digits" in done.stderr, (given, done.stdout, done.stderr)
    done = subprocess.run([sys.executable, "-m", "app", "call", url, "typed_echo", "--arg", "n=0.1"], cwd=ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr


async def test_events_after_the_only_sse_id_of_a_2025_11_25_stream_are_not_taken_for_replays(
        console: Console, legacy_url: str) -> None:
    # SSE keeps the last id for every later event: a server that numbers only its priming event gave the log line
    # and the answer that id too, the console took both for replays of the priming event and dropped them, and the
    # call never got its answer. An id is a replay when it comes again, not when an event carries none of its own.
    s = await console.connect(kind="http", url=legacy_url)
    assert s["status"] == "connected", s["status_message"]
    reply = await console.call_tool(s["id"], "id_once")
    assert reply["status"] == "complete", reply
    frames = [json.loads(w["raw"]) for w in _received(await console.entry(s["id"], reply["key"]))]
    assert [f.get("method", "answer") for f in frames] == ["notifications/message", "answer"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
async def test_copy_as_curl_sends_what_the_console_sent_empty_header_values_included(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # curl reads `-H 'name: '` as "do not send this header": an empty header value the console sent (one the owner
    # gave the target, or an x-mcp-header argument that is "") was missing from the command's request.
    sid = await console.connected_http(hostile_http("wire"), headers="X-Empty: \nX-Kept: 1")
    response = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": "wire_echo_header", "mode": "json", "json": json.dumps({"region": ""})})
    reply = response.json()
    assert reply["ok"], reply
    (sent,) = [w for w in (await console.entry(sid, reply["key"]))["wire"] if w["direction"] == "out"]
    assert ["X-Empty", ""] in sent["headers"] and ["Mcp-Param-Region", ""] in sent["headers"]
    command = (await console.http.get(f"/sessions/{sid}/entries/{reply['key']}/curl")).text
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    said = json.loads(json.loads(done.stdout)["result"]["content"][0]["text"])
    lines = base64.b64decode(said["head"]).decode("latin-1").split("\r\n")[1:]
    went = {(name, value.strip()) for name, value in (line.split(":", 1) for line in lines if line)}
    skipped = {"host", "content-length", "accept-encoding", "connection"}  # curl's own, as the command says
    # Names as the console sent them: curl sends them in the case the command spells them.
    assert {(name, value) for name, value in sent["headers"] if name.lower() not in skipped} <= went
    assert base64.b64decode(said["body"]).decode() == sent["raw"]


async def test_a_body_that_begins_with_a_byte_order_mark_is_said_to_for_what_it_is(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # The frame read "malformed JSON: Expecting value: line 1 column 1 (char 0)" over text that looks like JSON:
    # the mark is invisible, so the record said the server's JSON was broken and not why.
    sid = await console.connected_http(hostile_http("fidelity"))
    body = b'\xef\xbb\xbf{"jsonrpc":"2.0","id":@@ID@@,"result":{"resultType":"complete","content":[]}}'
    reply = await _say(console, sid, _answer(["Content-Type: application/json"], body))
    (frame,) = _received(await console.entry(sid, reply["key"]))
    assert frame["raw"].startswith("\ufeff{")  # kept as it came
    assert "byte order mark" in frame["problem"], frame


async def test_a_stdio_line_that_is_not_utf8_is_said_to_be_shown_with_replacement_characters(
        console: Console) -> None:
    s = await console.connect(kind="stdio", command=shlex.join(hostile_argv("fidelity")))
    assert s["status"] == "connected", s["status_message"]
    # As over HTTP: a byte that is not UTF-8 is said to be shown as U+FFFD; the target's own U+FFFD is not.
    for text, said in ((b"caf\xe9", True), (b"\xef\xbf\xbd", False)):
        reply = await console.call_tool(s["id"], "say_line", line=_b64(_text_result(text)))
        entry = await console.entry(s["id"], reply["key"])
        assert "\ufffd" in _received(entry)[-1]["raw"]
        assert ("U+FFFD" in _notes(entry)) is said, entry["wire"]


def _session_wire(console: Console, sid: str) -> list[Any]:
    """The session's wire records as stored, oldest first (frames of no request are on no entry)."""
    session = console.manager.get(sid)
    return [e.record for e in session.store.events(sid, kinds=("wire",))]


def _session_notices(console: Console, sid: str) -> str:
    session = console.manager.get(sid)
    return " ".join(str(getattr(e.record, "message", "")) for e in session.store.events(sid, kinds=("notice",)))


def _log_event(text: bytes) -> bytes:
    return (b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"t",'
            b'"data":"' + text + b'"}}\n\n')


async def _pushed(console: Console, sid: str, data: bytes, mark: str) -> Any:
    """Push `data` onto the server-to-client stream; the wire record of the frame whose text holds `mark`."""
    reply = await console.call_tool(sid, "push", data=_b64(data))
    assert reply["status"] == "complete", reply

    async def arrived() -> Any:
        return next((w for w in _session_wire(console, sid) if w.direction == "in" and mark in w.raw), None)

    return await eventually(arrived, what=f"the pushed frame {mark!r} to be recorded")


async def test_bytes_that_are_not_utf8_on_the_standalone_get_stream_are_said_to_be_shown_as_replacement_characters(
        console: Console, legacy_server: Callable[..., str]) -> None:
    # The GET stream of a 2025-11-25 session was decoded with errors="replace" and nothing said so: a log line
    # the server sent as Latin-1 read as if the server had sent U+FFFD itself. The target's own U+FFFD is no
    # replacement; the frame is still shown and used.
    s = await console.connect(kind="http", url=legacy_server("--standalone"), headers="")
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    sid = s["id"]
    genuine = await _pushed(console, sid, _log_event(b"\xef\xbf\xbd GENUINE-MARK"), "GENUINE-MARK")
    assert genuine.raw.count("\ufffd") == 1 and genuine.frame_kind == "notification"
    assert "U+FFFD" not in _session_notices(console, sid)
    latin = await _pushed(console, sid, _log_event(b"caf\xe9 LATIN-MARK"), "LATIN-MARK")
    assert "caf\ufffd LATIN-MARK" in latin.raw and latin.frame_kind == "notification", latin
    said = [w for w in _session_wire(console, sid) if w.direction == "transport" and "U+FFFD" in (w.note or "")]
    assert len(said) == 1 and "not valid utf-8" in said[0].note, said
    assert "not valid utf-8" in _session_notices(console, sid)  # told on the session, as its frames are


async def test_bytes_that_are_not_utf8_on_a_2024_sse_stream_are_said_to_be_shown_as_replacement_characters(
        console: Console, legacy_server: Callable[..., str]) -> None:
    # The one stream of the 2024-11-05 transport carries every answer: a byte that is not UTF-8 in a call's answer
    # is said on that call's entry, one in a frame of no request on the session; the target's own
    # U+FFFD is not.
    s = await console.connect(kind="http", url=legacy_server("--sse-2024"), headers="", era="sse-2024")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    for text, said in ((b"\xef\xbf\xbd", False), (b"caf\xe9", True)):
        reply = await console.call_tool(sid, "push", data=_b64(b"data: " + _text_result(text) + b"\n\n"))
        assert reply["status"] == "complete", reply
        entry = await console.entry(sid, reply["key"])
        assert "\ufffd" in _received(entry)[-1]["raw"]
        assert ("U+FFFD" in _notes(entry)) is said and ("not valid utf-8" in _notes(entry)) is said, entry["wire"]
    assert "U+FFFD" not in _session_notices(console, sid)
    latin = await _pushed(console, sid, _log_event(b"caf\xe9 LATIN-MARK"), "LATIN-MARK")
    assert "caf\ufffd LATIN-MARK" in latin.raw and "for the session" in (latin.note or ""), latin
    assert "not valid utf-8" in _session_notices(console, sid) and "U+FFFD" in _session_notices(console, sid)


def _refusal(text: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"' + text + b'"}}'


def _exchange_of(wire: list[Any], sent: str) -> list[Any]:
    """The wire records of the exchange that sent `sent` (its method): what its entry shows."""
    (out,) = [w for w in wire if w.direction == "out" and sent in w.raw]
    return [w for w in wire if w.exchange == out.exchange]


def _notes_on(wire: list[Any], sent: str) -> str:
    return " ".join(str(w.note or "") for w in _exchange_of(wire, sent))


async def test_an_answer_to_a_notification_that_is_not_utf8_is_said_to_be_shown_with_replacement_characters(
        console: Console, legacy_server: Callable[..., str]) -> None:
    # A server refusing notifications/initialized with a Latin-1 message: its answer's frame showed U+FFFD with
    # nothing to say the server had sent other bytes (a request's answer said so; a notification's did not).
    for text, said in ((b"\xef\xbf\xbd", False), (b"refus\xe9", True)):
        url = legacy_server("--refuse-initialized", _b64(_refusal(text)))
        s = await console.connect(kind="http", url=url, headers="")
        assert s["status"] == "failed", s["status"]
        wire = _session_wire(console, s["id"])
        (answer,) = [w for w in _exchange_of(wire, "notifications/initialized") if w.direction == "in"]
        assert "\ufffd" in answer.raw and answer.frame_kind == "error", answer
        notes = _notes_on(wire, "notifications/initialized")
        assert ("U+FFFD" in notes and "not valid utf-8" in notes) is said, (text, notes)


async def test_a_refused_post_on_a_2024_sse_server_whose_answer_is_not_utf8_says_so(
        console: Console, legacy_server: Callable[..., str]) -> None:
    # The 2024-11-05 transport puts the start of a refused POST's answer in the error: bytes that are not UTF-8 there
    # showed as U+FFFD with nothing said, and the cut at 200 bytes could split a character into a U+FFFD of its own.
    prefix = len(_refusal(b"")) - len(b'"}}')
    split = b"x" * (199 - prefix) + "\u00e9".encode()  # the cut falls inside the é
    for text, said in ((b"\xef\xbf\xbd", False), (split, False), (b"refus\xe9", True)):
        url = legacy_server("--sse-2024", "--refuse-initialized", _b64(_refusal(text)))
        s = await console.connect(kind="http", url=url, headers="", era="sse-2024")
        assert s["status"] == "failed" and "HTTP 400" in s["status_message"], s["status_message"]
        assert ("\ufffd" in s["status_message"]) is (text != split), s["status_message"]
        notes = _notes_on(_session_wire(console, s["id"]), "notifications/initialized")
        assert ("U+FFFD" in notes and "not valid utf-8" in notes) is said, (text, notes)


async def test_header_values_outside_ascii_say_which_decoding_shows_them(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    # HTTP gives header bytes no charset, and httpx reads all of an answer's headers one way: UTF-8 when they all
    # are, else ISO-8859-1. The same bytes C3 A9 showed as "é" beside ASCII headers and "Ã©" beside a Latin-1 one,
    # and nothing said which reading the page showed.
    sid = await console.connected_http(hostile_http("fidelity"))
    for extra, codec, shown in ((["X-Utf8: caf\u00c3\u00a9"], "utf-8", "caf\u00e9"),
                                (["X-Utf8: caf\u00c3\u00a9", "X-Latin: caf\u00e9"], "iso-8859-1", "caf\u00c3\u00a9")):
        reply = await _say(console, sid, _answer(["Content-Type: application/json", *extra], ODD_RESULT))
        entry = await console.entry(sid, reply["key"])
        (head,) = [w for w in entry["wire"] if w["direction"] == "transport" and w.get("headers")]
        assert ["X-Utf8", shown] in head["headers"] and head["note"] == "HTTP 200 OK"
        assert f"decoded as {codec}" in _notes(entry), entry["wire"]
    reply = await _say(console, sid, _answer(["Content-Type: application/json"], ODD_RESULT))
    assert "decoded as" not in _notes(await console.entry(sid, reply["key"]))
