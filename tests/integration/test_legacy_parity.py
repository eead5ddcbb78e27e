"""The same features in the 2025-11-25 era: cancel, cURL, replay, HAR, session file and share links.

Against the real legacy test server (`tests/legacy/server.py`) over HTTP and stdio, which records every
`notifications/cancelled` it receives and the session id it came with.
"""

from __future__ import annotations

import asyncio
import json
import queue
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.mcp import http as http_module
from tests.integration.conftest import JSON, REPO_ROOT, Console, Seen, TinyHttp, create_link, eventually
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


# -- A hostile 2025-11-25 target: what it does with initialize, its session id, its standalone GET stream and
# the requests it sends, and what the console must still do (say so clearly, keep running, keep what it has).
#
# Each target is a tiny real HTTP server on 127.0.0.1 (on a thread), stopped by the
# fixture; `legacy_target` gives it the shape of a legacy server and lets a test replace any answer.

Answer = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]  # status, type, body[, headers]
Handler = Callable[[Seen], Answer]
LIST_CHANGED = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "hostile-legacy", "version": "0"}}


class Target:
    """A real HTTP server on 127.0.0.1 (a thread) answering with `handler`; headers are written as given, raw."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[Seen] = []
        self.stopping = threading.Event()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                            self.rfile.read(length) if length else b"")
                outer.requests.append(seen)
                status, content_type, body, *more = handler(seen)
                extra = dict(more[0]) if more else {}
                # A Content-Length the handler gives may promise more than the body: the connection then closes.
                length = extra.pop("Content-Length", str(len(body)))
                hold = extra.pop("X-Hold", "") == "1"
                self.close_connection = self.close_connection or length != str(len(body))
                head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n"
                for name, value in extra.items():
                    head += f"{name}: {value}\r\n"
                self.wfile.write(head.encode("latin-1") + b"\r\n" + body)
                if hold:  # the answer never ends: the connection stays open until the target stops
                    self.wfile.flush()
                    outer.stopping.wait()

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="hostile-legacy", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


Start = Callable[..., Target]


@pytest.fixture
def legacy_target() -> Iterator[Start]:
    """Start hostile legacy targets (each stopped after the test). A target refuses server/discover,
    initializes with `init` (handing out `session`), lists one tool; its GETs are answered by `gets` (405 when
    None) and any POST `posts` answers (None from it: the usual answer)."""
    started: list[Target] = []

    def start(*, init: dict[str, Any] | None = None, session: str | None = "s-1", gets: Handler | None = None,
              posts: Callable[[Seen, dict[str, Any]], Answer | None] | None = None) -> Target:
        def handler(seen: Seen) -> Answer:
            if seen.method == "GET":
                return gets(seen) if gets is not None else (405, "text/plain", b"")
            if seen.method == "DELETE":
                return 200, "text/plain", b""
            message = seen.json()
            if posts is not None and (mine := posts(seen, message)) is not None:
                return mine
            method, rid = message.get("method"), message.get("id")
            if method == "server/discover":
                return 400, "application/json", TinyHttp.error(None, -32000, "Bad Request: Server not initialized")
            if method == "initialize":
                return (200, "application/json", TinyHttp.result(rid, INIT if init is None else init),
                        {"Mcp-Session-Id": session} if session is not None else {})
            if method == "tools/list":
                return 200, "application/json", TinyHttp.result(rid, {"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}}]})
            if method == "tools/call":
                return 200, "application/json", TinyHttp.result(rid, {"content": [{"type": "text", "text": "ok"}]})
            return 202, "application/json", b""  # notifications and answers to the server's requests

        target = Target(handler)
        started.append(target)
        return target

    yield start
    for target in started:
        target.stop()


def sse(*events: tuple[str | None, str]) -> Answer:
    """An SSE body of (id, data) events; a data of "retry: N" is that field alone."""
    body = "".join(f"{data}\n\n" if data.startswith("retry:") else
                   (f"id: {eid}\n" if eid is not None else "") + f"data: {data}\n\n" for eid, data in events)
    return 200, "text/event-stream", body.encode()


def gets_of(server: Target) -> list[Seen]:
    return [r for r in server.requests if r.method == "GET"]


def posted(server: Target) -> list[dict[str, Any]]:
    return [r.json() for r in list(server.requests) if r.method == "POST"]


async def notes(console: Console, sid: str) -> str:
    return json.dumps((await console.session(sid))["timeline"])


async def connected(console: Console, server: Target) -> str:
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return str(s["id"])


# --- the standalone GET stream -------------------------------------------------------------------------------


async def test_a_standalone_stream_that_replays_the_same_event_on_every_reopen_is_given_up_not_reopened_forever(
        console: Console, legacy_target: Start) -> None:
    server = legacy_target(gets=lambda _seen: sse(("e1", LIST_CHANGED)))
    sid = await connected(console, server)

    async def gave_up() -> bool:
        return "gave up" in await notes(console, sid)

    await eventually(gave_up, what="the replaying GET stream to be given up")
    replays = len(gets_of(server))
    assert replays <= 8, f"{replays} GETs for one event replayed"
    assert "already delivered" in await notes(console, sid)
    listed = [m for m in posted(server) if m.get("method") == "tools/list"]
    assert len(listed) == 2, "one list_changed refreshes once, however often it is replayed"


def ask(rid: Any, message: str = "Your name?") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {
        "message": message, "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})


async def test_a_resumed_response_stream_that_replays_its_server_request_does_not_ask_twice(
        console: Console, legacy_target: Start) -> None:
    def gets(seen: Seen) -> Answer:
        if seen.headers.get("last-event-id") != "p1":
            return 405, "text/plain", b""  # the standalone stream: none
        answer = json.dumps({"jsonrpc": "2.0", "id": call_id[0], "result": {"content": []}})
        return sse(("p1", ask("q1")), ("p2", answer))  # the resumption replays p1 before going on

    call_id: list[Any] = []

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        call_id.append(message["id"])
        body = f"retry: 0\nid: p1\ndata: {ask('q1')}\n\n"  # then the stream closes before the answer
        return 200, "text/event-stream", body.encode()

    server = legacy_target(gets=gets, posts=posts)
    sid = await connected(console, server)
    reply = await console.call_tool(sid, "echo")
    assert reply["status"] == "complete", reply
    asked = (await console.session(sid))["server_requests"]
    assert len(asked) == 1, asked
    entry = await console.entry(sid, reply.get("key") or reply["operation"]["rounds"][0]["key"])
    assert "already delivered" in json.dumps(entry), "the replay is on the request's record"


def first_get_then_405(*events: tuple[str | None, str]) -> Handler:
    """The standalone stream: `events` on the first GET (then it ends, a drop), 405 on the reopen."""
    served: list[int] = []

    def gets(_seen: Seen) -> Answer:
        served.append(1)
        return sse(*events) if len(served) == 1 else (405, "text/plain", b"")

    return gets


def cancelled(rid: Any, reason: str = "changed my mind") -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": rid, "reason": reason}})


async def test_a_server_request_the_server_cancels_closes_its_dialog_and_gets_no_answer(
        make_console: Callable[..., Console], legacy_target: Start) -> None:
    console = make_console(server_request_timeout_s=1.0)  # a dialog left open would time out and answer
    server = legacy_target(gets=first_get_then_405((None, ask("q1")), (None, cancelled("q1")),
                                                   (None, ask("q1", "asked again"))))  # an id free once withdrawn
    sid = await connected(console, server)

    async def closed() -> list[dict[str, Any]] | None:
        asked = (await console.session(sid))["server_requests"]
        return asked if len(asked) == 2 and asked[0]["status"] != "awaiting" else None

    asked = await eventually(closed, what="the withdrawn request's dialog to close")
    assert asked[0]["status"] == "withdrawn", asked
    assert asked[1]["params"]["message"] == "asked again", asked
    assert "cancelled its request 'q1'" in await notes(console, sid)

    def sent_for_q1() -> list[dict[str, Any]]:  # only the second may be answered (its timeout's error)
        return [m for m in posted(server) if m.get("id") == "q1" and m.get("error", {}).get("code") != -32001]

    assert not sent_for_q1(), "a cancelled request gets no response"
    late = await console.http.post(f"/sessions/{sid}/server-requests/{asked[0]['id']}/answer",
                                   data={"action": "accept", "name": "Ada"})  # a tab that still shows the form
    assert late.status_code == 200 and "Withdrawn: the server cancelled this request" in late.text, late.text[:500]
    assert not sent_for_q1(), "nor does a late answer go back"


async def test_a_cancel_for_a_request_the_server_never_made_is_said_and_ignored(
        console: Console, legacy_target: Start) -> None:
    server = legacy_target(gets=first_get_then_405((None, cancelled("never-asked"))))
    sid = await connected(console, server)

    async def said() -> bool:
        return "'never-asked', which is no open request from the server" in await notes(console, sid)

    await eventually(said, what="the stray cancel to be noted")
    assert (await console.session(sid))["status"] == "connected"
    assert (await console.call_tool(sid, "echo"))["status"] == "complete"


async def test_a_server_request_that_repeats_an_open_id_opens_no_second_dialog_and_is_not_answered(
        console: Console, legacy_target: Start) -> None:
    server = legacy_target(gets=first_get_then_405((None, ask("d", "first")), (None, ask("d", "second"))))
    sid = await connected(console, server)

    async def said() -> bool:
        return "repeats the id of one still open" in await notes(console, sid)

    async def dialog() -> bool:  # its dialog opens in a task of its own: it may come after the note of the repeat
        return bool((await console.session(sid))["server_requests"])

    await eventually(said, what="the repeated id to be noted")
    await eventually(dialog, what="the first request's dialog")
    asked = (await console.session(sid))["server_requests"]
    assert len(asked) == 1 and asked[0]["params"]["message"] == "first", asked
    assert not [m for m in posted(server) if m.get("id") == "d"], "the open one is still to be answered, once"


async def test_a_flood_of_server_requests_opens_a_bounded_number_of_dialogs_and_refuses_the_rest(
        console: Console, legacy_target: Start) -> None:
    flood = 300
    server = legacy_target(gets=first_get_then_405(*[(None, ask(f"n{i}")) for i in range(flood)]))
    sid = await connected(console, server)

    async def refused() -> list[dict[str, Any]] | None:
        errors = [m for m in posted(server) if "error" in m and str(m.get("id", "")).startswith("n")]
        asked = (await console.session(sid))["server_requests"]
        return errors if len(errors) + len(asked) >= flood else None

    errors = await eventually(refused, what="the requests past the bound to be refused")
    asked = (await console.session(sid))["server_requests"]
    assert 0 < len(asked) <= 64, len(asked)
    assert len(errors) == flood - len(asked) and all("too many" in m["error"]["message"] for m in errors)
    assert (await notes(console, sid)).count("too many open requests") == 1, "said once, not per refusal"


# --- initialize and the session id ---------------------------------------------------------------------------


async def test_an_initialize_answer_with_a_megabyte_protocol_version_fails_with_a_short_clear_message(
        console: Console, legacy_target: Start) -> None:
    server = legacy_target(init={**INIT, "protocolVersion": "2099-" + "9" * 1_000_000})
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "failed"
    assert "does not speak" in s["status_message"] and len(s["status_message"]) < 1000, len(s["status_message"])


async def test_an_initialize_answer_with_capabilities_of_the_wrong_types_and_html_in_server_info_still_connects(
        console: Console, legacy_target: Start) -> None:
    html = "<img src=x onerror=alert(1)>"
    server = legacy_target(init={"protocolVersion": "2025-11-25", "instructions": 42,
                                 "capabilities": {"tools": "yes", "logging": 5, "resources": [], "prompts": None},
                                 "serverInfo": {"name": html, "version": {"v": html}, "title": ["x"]}})
    sid = await connected(console, server)
    page = await console.http.get(f"/sessions/{sid}")
    assert page.status_code == 200 and html not in page.text
    assert (await console.call_tool(sid, "echo"))["status"] == "complete"


async def test_a_session_id_that_is_not_visible_ascii_fails_the_connect_saying_why(
        console: Console, legacy_target: Start) -> None:
    # Valid in an HTTP header (a space, a Latin-1 letter), not in a session id: visible ASCII only (0x21-0x7E).
    server = legacy_target(session="abc def\xe9")
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "failed", s["status"]
    assert "Mcp-Session-Id" in s["status_message"] and "visible ASCII" in s["status_message"], s["status_message"]


async def test_a_ten_kilobyte_session_id_is_sent_back_and_the_session_works(
        console: Console, legacy_target: Start) -> None:
    long_id = "s" * 10_240
    server = legacy_target(session=long_id)
    sid = await connected(console, server)
    assert (await console.call_tool(sid, "echo"))["status"] == "complete"
    calls = [r for r in server.requests if r.method == "POST" and b'"tools/call"' in r.body]
    assert calls and calls[-1].headers.get("mcp-session-id") == long_id


async def test_a_session_the_server_forgets_mid_operation_says_the_session_expired_and_how_to_go_on(
        console: Console, legacy_target: Start) -> None:
    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") == "tools/call":
            return 404, "text/plain", b"session not found"
        return None

    server = legacy_target(posts=posts)
    sid = await connected(console, server)
    reply = await console.call_tool(sid, "echo")
    shown = json.dumps(reply)
    assert "session" in shown and "expired" in shown and "reconnect" in shown, shown[:2000]
    s = await console.session(sid)
    assert s["status"] == "unreachable" and "reconnect" in s["status_message"], (s["status"], s["status_message"])


async def test_the_handshake_of_a_legacy_session_is_not_held_to_the_2026_rules(
        console: Console, legacy_target: Start) -> None:
    sid = await connected(console, legacy_target())
    timeline = (await console.session(sid))["timeline"]
    init = [e for e in timeline if e.get("method") == "initialize"]
    assert init and not init[0].get("findings"), init[0].get("findings")
    assert not [e for e in timeline if e.get("kind") == "finding"]


# --- retry and never-ending streams --------------------------------------------------------------------------


async def test_a_retry_field_of_five_thousand_digits_on_a_response_stream_does_not_break_the_call(
        console: Console, legacy_target: Start) -> None:
    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}})
        return 200, "text/event-stream", f"retry: {'9' * 5000}\nid: r1\ndata: {answer}\n\n".encode()

    sid = await connected(console, legacy_target(posts=posts))
    reply = await console.call_tool(sid, "echo")
    assert reply["status"] == "complete", reply.get("error")


async def test_a_flood_of_pings_on_the_standalone_stream_queues_a_bounded_number_of_answers(
        console: Console, legacy_target: Start) -> None:
    flood = 3000
    ping = '{{"jsonrpc": "2.0", "id": "p{}", "method": "ping"}}'
    server = legacy_target(gets=first_get_then_405(*[(None, ping.format(i)) for i in range(flood)]))
    sid = await connected(console, server)

    async def said() -> bool:
        return "answers wait to be sent" in await notes(console, sid)

    await eventually(said, what="the unanswered pings to be noted")
    client = console.manager.get(sid).client
    assert len(client.asks.waiting) <= 1100, len(client.asks.waiting)
    assert (await console.call_tool(sid, "echo"))["status"] == "complete"


async def test_a_session_the_server_forgets_while_a_call_is_resumed_says_the_session_expired(
        console: Console, legacy_target: Start) -> None:
    def gets(seen: Seen) -> Answer:
        return (404, "text/plain", b"no such session") if seen.headers.get("last-event-id") else \
            (405, "text/plain", b"")

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        return 200, "text/event-stream", b"retry: 0\nid: r1\ndata: \n\n"  # primed, then closed before the answer

    sid = await connected(console, legacy_target(gets=gets, posts=posts))
    reply = await console.call_tool(sid, "echo")
    assert "expired" in json.dumps(reply.get("error")) and "reconnect" in json.dumps(reply.get("error")), reply
    assert (await console.session(sid))["status"] == "unreachable"


async def test_a_standalone_stream_refused_with_404_says_the_session_expired(
        console: Console, legacy_target: Start) -> None:
    sid = await connected(console, legacy_target(gets=lambda _seen: (404, "text/plain", b"")))

    async def said() -> list[dict[str, Any]] | None:
        found = [e for e in (await console.session(sid))["timeline"]
                 if e.get("kind") == "notice" and "no longer knows session" in str(e.get("message"))]
        return found or None

    notice = (await eventually(said, what="the 404 on the GET stream to be explained"))[0]
    assert notice["level"] == "warning" and "reconnect" in notice["message"]


async def test_a_session_id_changed_or_dropped_on_later_answers_is_not_taken_the_handshake_one_is_kept(
        console: Console, legacy_target: Start) -> None:
    shifts = iter(["other-1", "", "other-2\x7f"])

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        body = TinyHttp.result(message["id"], {"content": []})
        shifted = next(shifts, "")
        return 200, "application/json", body, ({"Mcp-Session-Id": shifted} if shifted else {})

    server = legacy_target(posts=posts)
    sid = await connected(console, server)
    replies = [await console.call_tool(sid, "echo") for _ in range(4)]
    assert [r["status"] for r in replies] == ["complete"] * 4, replies
    wire = (await console.http.get(f"/sessions/{sid}/entries/{replies[2]['key']}.json", headers=JSON)).json()["wire"]
    assert any("not valid HTTP" in (w.get("note") or "") for w in wire), "a DEL in a header value is no HTTP: said so"
    calls = [r for r in server.requests if r.method == "POST" and b'"tools/call"' in r.body]
    assert [c.headers.get("mcp-session-id") for c in calls] == ["s-1"] * 4
    assert (await console.session(sid))["status"] == "connected", "the next answer that got through recovers it"


async def test_a_server_that_refuses_notifications_initialized_does_not_leave_the_session_shown_connected(
        console: Console, legacy_target: Start) -> None:
    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") == "notifications/initialized":
            return 400, "application/json", TinyHttp.error(None, -32600, "Bad Request: no such session")
        return None

    s = await console.connect(kind="http", url=legacy_target(posts=posts).url, headers="")
    assert s["status"] == "failed", s["status"]
    assert "notifications/initialized" in s["status_message"] and "HTTP 400" in s["status_message"], \
        s["status_message"]


async def test_a_standalone_stream_that_breaks_off_inside_an_event_keeps_what_arrived_of_it(
        console: Console, legacy_target: Start) -> None:
    part = b'id: a1\ndata: {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "PARTIAL-MARK'
    served: list[int] = []

    def gets(_seen: Seen) -> Answer:
        served.append(1)
        if len(served) > 1:
            return 405, "text/plain", b""
        return 200, "text/event-stream", part, {"Content-Length": str(len(part) + 100)}  # then it closes

    sid = await connected(console, legacy_target(gets=gets))

    async def kept() -> bool:
        return "PARTIAL-MARK" in await notes(console, sid) and "no standalone GET stream" in await notes(console, sid)

    await eventually(kept, what="the broken-off event to be on the timeline")
    kept_as = [e for e in (await console.session(sid))["timeline"] if "PARTIAL-MARK" in str(e.get("raw"))]
    assert kept_as and kept_as[0]["level"] == "warning", kept_as  # a frame cut short: malformed, and shown


# --- the 2024-11-05 HTTP+SSE transport -----------------------------------------------------------------------


class OldSse:
    """A 2024-11-05 HTTP+SSE server on 127.0.0.1: one long GET carries every answer; POSTs get 202. Its tools/call
    floods the stream with `flood` progress notifications of about 1 KB and never answers."""

    def __init__(self, flood: int) -> None:
        self.events: queue.Queue[bytes | None] = queue.Queue()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.close_connection = True
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                                 b"event: endpoint\ndata: /messages\n\n")
                self.wfile.flush()
                while (chunk := outer.events.get()) is not None:
                    try:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    except OSError:
                        return

            def do_POST(self) -> None:
                message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.wfile.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                self.wfile.flush()
                method, rid = message.get("method"), message.get("id")
                if method == "initialize":
                    outer.send({"jsonrpc": "2.0", "id": rid, "result": INIT})
                elif method == "tools/list":
                    outer.send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                        {"name": "flood", "inputSchema": {"type": "object"}}]}})
                elif method == "tools/call":
                    token = message["params"]["_meta"]["progressToken"]
                    for n in range(flood):
                        outer.send({"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": token, "progress": n, "message": "x" * 1000}})

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sse"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="old-sse", daemon=True)
        self.thread.start()

    def send(self, message: dict[str, Any]) -> None:
        self.events.put(f"data: {json.dumps(message)}\n\n".encode())

    def stop(self) -> None:
        self.events.put(None)
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def old_sse() -> Iterator[Callable[[int], OldSse]]:
    started: list[OldSse] = []

    def start(flood: int) -> OldSse:
        started.append(OldSse(flood))
        return started[-1]

    yield start
    for server in started:
        server.stop()


async def test_a_2024_sse_server_flooding_one_call_is_stopped_at_max_stream_bytes_not_read_for_an_hour(
        make_console: Callable[..., Console], old_sse: Callable[[int], OldSse]) -> None:
    console = make_console(max_stream_bytes=256 * 1024)
    server = old_sse(2000)  # about 2 MB for one call
    s = await console.connect(kind="http", url=server.url, headers="", era="sse-2024")
    assert s["status"] == "connected", s["status_message"]
    started = time.monotonic()
    reply = await console.call_tool(s["id"], "flood")
    assert "max_stream_bytes" in json.dumps(reply.get("error")), reply.get("error")
    assert time.monotonic() - started < 15, "stopped at the bound, not at the idle deadline"
    assert (await console.session(s["id"]))["status"] == "connected"


async def test_a_response_stream_that_never_ends_nor_answers_is_given_up_at_the_idle_deadline_keeping_its_frames(
        make_console: Callable[..., Console], legacy_target: Start) -> None:
    console = make_console(request_idle_timeout_s=1.0)

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "KEPT-MARK"}})
        # A length it never reaches, so the body never ends; and the connection is held open.
        return 200, "text/event-stream", f"id: k1\ndata: {log}\n\n: keep-alive\n\n".encode(), \
            {"Content-Length": "100000000", "X-Hold": "1"}

    sid = await connected(console, legacy_target(posts=posts))
    reply = await console.call_tool(sid, "echo")
    assert "idle deadline" in json.dumps(reply.get("error")), reply.get("error")
    entry = await console.entry(sid, reply.get("key") or reply["operation"]["rounds"][0]["key"])
    assert "KEPT-MARK" in json.dumps(entry)
    assert (await console.session(sid))["status"] == "connected"


async def test_a_retry_of_a_trillion_milliseconds_does_not_park_a_call_past_its_deadline(
        make_console: Callable[..., Console], legacy_target: Start) -> None:
    console = make_console(request_idle_timeout_s=1.0)

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        return 200, "text/event-stream", b"retry: 1000000000000\nid: r1\ndata: \n\n"  # closed before the answer

    sid = await connected(console, legacy_target(posts=posts))
    started = time.monotonic()
    reply = await console.call_tool(sid, "echo")
    assert reply["status"] != "complete" and time.monotonic() - started < 10, reply.get("error")
    assert "resuming it in 30 s" in json.dumps(await console.entry(sid, reply.get("key") or
                                                                 reply["operation"]["rounds"][0]["key"]))


async def test_a_standalone_stream_is_reopened_after_the_servers_retry_delay_not_at_once(
        console: Console, legacy_target: Start) -> None:
    server = legacy_target(gets=first_get_then_405((None, "retry: 1500"), ("e1", LIST_CHANGED)))
    sid = await connected(console, server)

    async def reopened() -> bool:
        return len(gets_of(server)) >= 2

    await eventually(reopened, what="the GET stream to be reopened")
    assert "reopening in 1.5 s" in await notes(console, sid)


async def test_an_event_id_that_cannot_be_sent_back_as_a_header_does_not_cost_the_standalone_stream(
        console: Console, legacy_target: Start) -> None:
    served: list[int] = []

    def gets(_seen: Seen) -> Answer:
        served.append(1)
        return sse(("\u00e9v\u00e9nement-1", LIST_CHANGED)) if len(served) == 1 else (405, "text/plain", b"")

    server = legacy_target(gets=gets)
    sid = await connected(console, server)

    async def reopened() -> list[Seen] | None:
        seen = gets_of(server)
        return seen if len(seen) >= 2 else None

    seen = await eventually(reopened, what="the GET stream to be reopened")
    assert seen[1].headers.get("last-event-id") is None
    assert "cannot be sent back" in await notes(console, sid)


async def test_hundreds_of_repeated_ids_and_stray_cancels_are_said_a_few_times_not_hundreds(
        console: Console, legacy_target: Start) -> None:
    events = [(None, ask("d"))] * 300 + [(None, cancelled(f"none-{i}")) for i in range(300)] + \
        [(None, LIST_CHANGED)]
    server = legacy_target(gets=first_get_then_405(*events))
    sid = await connected(console, server)

    async def through() -> str | None:
        text = await notes(console, sid)
        return text if "no standalone GET stream" in text else None

    await eventually(through, what="the whole stream to be read")
    session = console.manager.get(sid)
    said = [str(getattr(e.record, "message", "")) for e in session.store.events(sid, kinds=("notice",))]
    assert 1 <= sum("repeats the id of one still open" in m for m in said) <= 5, len(said)
    assert 1 <= sum("which is no open request from the server" in m for m in said) <= 5, len(said)
    assert sum("not said again" in m for m in said) == 2


async def test_hundreds_of_answers_to_nothing_on_the_standalone_stream_are_kept_but_told_a_few_times(
        console: Console, legacy_target: Start) -> None:
    strays = [(None, json.dumps({"jsonrpc": "2.0", "id": f"x{i}", "result": {}})) for i in range(300)]
    server = legacy_target(gets=first_get_then_405(*strays))
    # Not `connected()`: before the fix its wait for the lists was pushed off the page's window by the notices.
    sid = await console.create(kind="http", url=server.url, headers="")

    async def through() -> bool:
        return "no standalone GET stream" in await notes(console, sid)

    await eventually(through, what="the whole stream to be read")
    session = console.manager.get(sid)
    said = [str(getattr(e.record, "message", "")) for e in session.store.events(sid, kinds=("notice",))]
    assert sum("matches no request" in m for m in said) == 21, sum("matches no request" in m for m in said)
    assert sum("recorded but not told" in m for m in said) == 1
    kept = session.store.events(sid, kinds=("wire",))
    assert sum('"x2' in str(getattr(e.record, "raw", "")) for e in kept) >= 100, "every frame is still recorded"


async def test_a_server_request_whose_id_is_the_calls_own_is_answered_and_the_call_still_takes_its_answer(
        console: Console, legacy_target: Start) -> None:
    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") != "tools/call":
            return None
        rid = message["id"]
        mine = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "roots/list"})  # the client's own id
        answer = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "fine"}]}})
        return sse((None, mine), (None, answer))

    server = legacy_target(posts=posts)
    sid = await connected(console, server)
    reply = await console.call_tool(sid, "echo")
    assert reply["status"] == "complete", reply

    async def answered() -> list[dict[str, Any]] | None:
        back = [m for m in posted(server) if "method" not in m and "result" in m]
        return back or None

    back = await eventually(answered, what="the roots to go back")
    assert back[0]["id"] == reply["id"] and "roots" in back[0]["result"]


@pytest.mark.parametrize(("version", "said"), [(None, "no protocolVersion"), (20251125, "protocol version 20251125"),
                                               ("<b>2025-11-25</b>", "protocol version '<b>2025-11-25</b>'")])
async def test_an_initialize_answer_without_a_usable_protocol_version_fails_saying_what_came(
        console: Console, legacy_target: Start, version: Any, said: str) -> None:
    init = {k: v for k, v in INIT.items() if k != "protocolVersion"}
    if version is not None:
        init["protocolVersion"] = version
    s = await console.connect(kind="http", url=legacy_target(init=init).url, headers="")
    assert s["status"] == "failed" and said in s["status_message"], s["status_message"]
    page = await console.http.get(f"/sessions/{s['id']}")
    assert page.status_code == 200 and "<b>2025-11-25</b>" not in page.text


async def test_a_server_that_never_answers_notifications_initialized_fails_the_connect_in_bounded_time(
        console: Console, legacy_target: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    """No request deadline covers a notification: the connect stood at "connecting" for as long as the server
    held the POST. Now a notification's answer is waited for NOTIFY_TIMEOUT_S (here half a second)."""
    monkeypatch.setattr(http_module, "NOTIFY_TIMEOUT_S", 0.5)
    released = threading.Event()

    def posts(_seen: Seen, message: dict[str, Any]) -> Answer | None:
        if message.get("method") == "notifications/initialized":
            released.wait(10)  # holds the POST: the server thread answers only when the test is over
            return 202, "application/json", b""
        return None

    try:
        started = time.monotonic()
        s = await console.connect(kind="http", url=legacy_target(posts=posts).url, headers="")
        assert time.monotonic() - started < 8
        assert s["status"] == "failed", s["status"]
        assert "notifications/initialized failed" in s["status_message"], s["status_message"]
        assert "no answer within 0.5 s" in s["status_message"], s["status_message"]
    finally:
        released.set()
