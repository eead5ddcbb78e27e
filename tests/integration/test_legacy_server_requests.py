"""Requests from a 2025-11-25 server open the same inbox dialogs as MRTR, and their answers go back by id.

Against the real legacy test server (`tests/legacy/server.py`) over HTTP and stdio: its asking tools send a
request on the tool call's own stream and return, as text, the response they got.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable
from typing import Any

from tests.integration.conftest import JSON, REPO_ROOT, Console, eventually
from tests.legacy.fixtures import LEGACY_STDIO, legacy_url

__all__ = ["legacy_url"]


async def asking(console: Console, sid: str, tool: str) -> tuple[asyncio.Task[dict[str, Any]], dict[str, Any]]:
    """Start the asking tool (its call waits for the answer) and return it with the server request it opened."""
    call = asyncio.create_task(console.call_tool(sid, tool))

    async def opened() -> dict[str, Any] | None:
        if call.done():
            call.result()  # an error here says why nothing was asked
        waiting = [r for r in (await console.session(sid))["server_requests"] if r["status"] == "awaiting"]
        return waiting[0] if waiting else None

    request: dict[str, Any] = await eventually(opened, what=f"{tool} to ask the console")
    return call, request


async def answer(console: Console, sid: str, sr: dict[str, Any], **form: str) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{sid}/server-requests/{sr['id']}/answer", data=form,
                                       headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def sent_back(reply: dict[str, Any]) -> dict[str, Any]:
    """What the server says it received: the tool's text is the JSON-RPC response it got."""
    result = (reply.get("final") or reply)["result"]
    texts = [c["text"] for c in result["content"] if c.get("type") == "text"]
    got: dict[str, Any] = json.loads(texts[0])
    return got


def nested(session: dict[str, Any], sr_id: str) -> dict[str, Any]:
    """The server request as the timeline shows it, under the entry of the request that carried it."""
    for entry in session["timeline"]:
        if sr_id in (entry.get("server_requests") or {}):
            return {"entry": entry, **entry["server_requests"][sr_id]}
    raise AssertionError(f"{sr_id} is not nested under any timeline entry")


async def legacy_http(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url)
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    return str(s["id"])


async def test_form_elicitation_over_http_opens_an_inbox_dialog_and_the_answer_goes_back_with_the_servers_id(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    call, sr = await asking(console, sid, "ask")
    assert sr["method"] == "elicitation/create" and "mode" not in sr["params"]
    page = (await console.http.get(f"/sessions/{sid}")).text
    inbox = page.split('id="inbox"', 1)[1]
    assert f'id="inbox-sr-{sr["id"]}"' in inbox and f'aria-label="Answer {sr["request_id"]}"' in inbox
    assert "Your name?" in inbox and f'/server-requests/{sr["id"]}/answer' in inbox
    assert "idle deadline paused: the server waits for an answer" in page  # no countdown while we are asked

    done = await answer(console, sid, sr, action="accept", **{"arg.name": "Ada"})
    assert done["status"] == "answered" and done["answered_by"] == "owner"
    got = sent_back(await call)
    assert got == {"id": sr["request_id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
    shown = nested(await console.session(sid), sr["id"])
    assert shown["status"] == "answered" and shown["entry"]["kind"] == "operation"
    assert shown["key"] == shown["entry"]["rounds"][0]["key"]  # carried by the call's own round


async def test_an_invalid_form_answer_is_refused_beside_the_field_and_nothing_goes_back_until_fixed(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    call, sr = await asking(console, sid, "ask_form")
    assert sr["params"]["mode"] == "form"
    refused = await answer(console, sid, sr, action="accept", **{"arg.name": "A"})  # minLength 2
    assert refused["status"] == "awaiting" and "name" in refused["errors"], refused
    assert not call.done()
    await answer(console, sid, sr, action="decline")
    assert sent_back(await call)["result"] == {"action": "decline"}
    assert nested(await console.session(sid), sr["id"])["status"] == "declined"


async def test_url_mode_elicitation_shows_the_host_and_accept_sends_only_the_action(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    call, sr = await asking(console, sid, "ask_url")
    page = (await console.http.get(f"/sessions/{sid}")).text
    host = '<bdi class="sv">auth.example.com</bdi>'  # server text, isolated and shown through |visible
    assert f'<mark class="url-host">{host}</mark>' in page and f"Open {host}" in page
    await answer(console, sid, sr, action="accept")
    assert sent_back(await call)["result"] == {"action": "accept"}


async def test_a_sampling_reply_goes_back_as_the_result_and_a_decline_as_a_user_rejected_error(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    call, sr = await asking(console, sid, "sample")
    missing = await answer(console, sid, sr, action="accept", reply="", model="m")
    assert "reply" in missing["errors"]
    await answer(console, sid, sr, action="accept", reply="hi there", model="human", stopReason="endTurn")
    assert sent_back(await call)["result"] == {"role": "assistant", "content": {"type": "text", "text": "hi there"},
                                               "model": "human", "stopReason": "endTurn"}
    call, sr = await asking(console, sid, "sample")
    await answer(console, sid, sr, action="decline")
    assert sent_back(await call)["error"] == {"code": -1, "message": "User rejected sampling request"}


async def test_roots_list_is_answered_from_the_sessions_roots_without_a_dialog(
        console: Console, legacy_url: str) -> None:
    sid = await legacy_http(console, legacy_url)
    reply = await console.call_tool(sid, "roots")
    s = await console.session(sid)
    assert sent_back(reply)["result"] == {"roots": s["roots"]}
    [sr] = s["server_requests"]
    assert sr["method"] == "roots/list" and sr["answered_by"] == "console"
    assert nested(s, sr["id"])["status"] == "answered"


async def test_an_unanswered_server_request_times_out_with_an_error_and_the_timeline_says_so(
        make_console: Callable[..., Console], legacy_url: str) -> None:
    # The carrying request's idle deadline is shorter than the dialog's: it must not fire while we are the
    # ones the server waits for.
    console = make_console(server_request_timeout_s=1.0, request_idle_timeout_s=0.3)
    sid = await legacy_http(console, legacy_url)
    call, sr = await asking(console, sid, "ask")
    got = sent_back(await call)
    assert got["id"] == sr["request_id"] and got["error"]["code"] == -32001, got
    s = await console.session(sid)
    shown = nested(s, sr["id"])
    assert shown["status"] == "timed_out"
    page = (await console.http.get(f"/sessions/{sid}")).text
    body = (await console.http.get(f"/sessions/{sid}/entries/{shown['entry']['key']}/body")).text  # on open
    assert 'class="server-request is-timed_out"' in body and "timed out" in body
    assert f'id="inbox-sr-{sr["id"]}"' not in page  # no dialog left to answer


async def test_form_elicitation_over_stdio_is_answered_from_the_inbox(console: Console) -> None:
    s = await console.connect(kind="stdio", command=shlex.join(LEGACY_STDIO), cwd=str(REPO_ROOT))
    assert s["status"] == "connected" and s["era"]["era"] == "legacy", s["status_message"]
    call, sr = await asking(console, s["id"], "ask")
    await answer(console, s["id"], sr, action="accept", **{"arg.name": "Grace"})
    got = sent_back(await call)
    assert got == {"id": sr["request_id"], "result": {"action": "accept", "content": {"name": "Grace"}}}
    call, sr = await asking(console, s["id"], "sample")
    await answer(console, s["id"], sr, action="accept", reply="ok", model="human")
    assert sent_back(await call)["result"]["content"] == {"type": "text", "text": "ok"}
