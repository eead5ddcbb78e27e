"""Share links: what a viewer and an operator may do, revocation, expiry, and masked secrets.

Each link holder is a fresh client with no owner token that opened /s/<token> (it holds only the link
cookie). HTTP goes in-process over ASGITransport; websockets need the app under a real uvicorn.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.integration.conftest import (
    JSON,
    LINK_COOKIE,
    WS_DEADLINE_S,
    create_link,
    eventually,
    fragment_seq,
    link_token,
    ws_closed,
    ws_collect,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from tests.integration.conftest import Console, ConsoleRestarts, Served

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
    Serve = Callable[..., Awaitable[Served]]
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from tests.integration.conftest import Console
from typing import TYPE_CHECKING

from tests.hostile.fixtures import hostile_argv

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from tests.integration.conftest import Console

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
import asyncio
import shlex
import sys
from typing import TYPE_CHECKING

import httpx

from tests.integration.conftest import (
    TOKEN,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
    Serve = Callable[..., Awaitable[Served]]


SECRET = "secret123"
CLOSED_BY_LINK = 4003  # the close code the console uses when it cuts a link's socket


async def demo_session(console: Console, demo_url: str, headers: str = "") -> str:
    s = await console.connect(kind="http", url=demo_url, headers=headers)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


def facts(s: dict[str, Any]) -> tuple[int, list[tuple[str, str]]]:
    """What would change if anything were sent: the last seq, and every entry's key and status."""
    return s["seq"], [(e["key"], e.get("status", "")) for e in s["timeline"]]


async def awaiting_profile_form(console: Console, session_id: str) -> dict[str, Any]:
    """The owner starts profile_form; it stops at its elicitation round, awaiting an answer."""
    reply = await console.call_tool(session_id, "profile_form")
    assert reply["status"] == "awaiting_input", reply
    operation: dict[str, Any] = reply["operation"]
    assert operation["pending"] == ["profile"]
    return operation


async def open_socket(served: Served, session_id: str, token: str) -> Any:
    ws = await connect(served.ws_url(session_id), open_timeout=WS_DEADLINE_S, **served.via,
                       additional_headers=served.headers(f"{LINK_COOKIE}={token}"))
    await ws.send(json.dumps({"last_seq": 0}))
    return ws


# --- viewer -------------------------------------------------------------------------------------------


async def test_a_viewer_link_opens_the_session_page_its_json_and_its_websocket(
        console: Console, demo_url: str, share_tab: ShareTab, serve: Serve) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    assert link["role"] == "viewer" and link["url"].startswith(f"{console.base}/s/")
    tab = await share_tab(console, link)

    page = await tab.get(f"/sessions/{sid}")
    assert page.status_code == 200 and "viewer" in page.text
    data = await tab.get(f"/sessions/{sid}.json")
    assert data.status_code == 200 and data.json()["id"] == sid

    served = await serve(console)
    ws = await open_socket(served, sid, link_token(link))
    try:
        replay = await ws_collect(ws, lambda fs: any("server/discover" in f for f in fs), "the replayed timeline")
    finally:
        await ws.close()
    assert [fragment_seq(f) for f in replay] == sorted(fragment_seq(f) for f in replay)


async def test_a_viewer_cannot_call_a_tool_and_nothing_reaches_the_server(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, demo_url)
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    before = facts(await console.session(sid))

    response = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "hi"}, headers=JSON)
    assert response.status_code == 403
    assert "read-only" in response.json()["error"]
    # Every frame sent is recorded on the timeline first: an unchanged timeline means nothing went out.
    assert facts(await console.session(sid)) == before
    assert not [op for op in (await console.session(sid))["operations"] if op["method"] == "tools/call"]


async def test_a_viewer_cannot_answer_cancel_listen_share_or_change_anything(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, demo_url)
    op = await awaiting_profile_form(console, sid)
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    before = facts(await console.session(sid))
    links_before = len(console.manager.links.for_session(sid))

    refused = {
        "answer a dialog": (f"/sessions/{sid}/operations/{op['op']}/answer", {"key": "profile", "action": "decline"}),
        "abandon a dialog": (f"/sessions/{sid}/operations/{op['op']}/abandon", {}),
        "cancel an operation": (f"/sessions/{sid}/operations/{op['op']}/cancel", {}),
        "start a subscription": (f"/sessions/{sid}/subscriptions", {"toolsListChanged": "1"}),
        "create a link": (f"/sessions/{sid}/links", {"role": "operator"}),
        "change request settings": (f"/sessions/{sid}/request-settings", {"log_level": "debug"}),
        "replay a request": (f"/sessions/{sid}/replay", {"key": "c1x1", "mode": "as-is"}),
    }
    for what, (path, form) in refused.items():
        response = await tab.post(path, data=form, headers=JSON)
        assert response.status_code == 403, f"a viewer could {what}: {response.status_code} {response.text}"

    after = await console.session(sid)
    assert facts(after) == before
    [still] = [o for o in after["operations"] if o["op"] == op["op"]]
    assert still["status"] == "awaiting_input" and still["answered"] == []
    assert after["subscriptions"] == [] and after["request_settings"]["log_level"] == ""
    assert len(console.manager.links.for_session(sid)) == links_before


async def test_a_viewer_cannot_see_another_session_or_the_session_list(
        console: Console, demo_url: str, share_tab: ShareTab, serve: Serve) -> None:
    sid = await demo_session(console, demo_url)
    other = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    for path in (f"/sessions/{other}", f"/sessions/{other}.json", f"/sessions/{other}/export.json",
                 f"/sessions/{other}/entries/c1x1.json", "/", "/sessions.json"):
        response = await tab.get(path, headers=JSON)
        assert response.status_code == 403, f"{path}: {response.status_code}"
    served = await serve(console)
    with pytest.raises(InvalidStatus) as refused:
        await open_socket(served, other, link_token(link))
    assert refused.value.response.status_code == 403


# --- operator -----------------------------------------------------------------------------------------


async def test_an_operator_link_can_call_tools_and_decline_an_elicitation(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, demo_url)
    tab = await share_tab(console, await create_link(console, sid, "operator"))

    echo = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "from an operator"},
                          headers=JSON)
    assert echo.status_code == 200, echo.text
    assert echo.json()["result"]["content"] == [{"type": "text", "text": "from an operator"}]

    form = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "profile_form"}, headers=JSON)
    assert form.status_code == 200 and form.json()["status"] == "awaiting_input", form.text
    op = form.json()["operation"]["op"]
    answered = await tab.post(f"/sessions/{sid}/operations/{op}/answer", data={"key": "profile", "action": "decline"},
                              headers=JSON)
    assert answered.status_code == 200, answered.text
    done = answered.json()
    assert done["status"] == "complete" and len(done["rounds"]) == 2
    assert done["final"]["result"]["structuredContent"] == {"action": "decline"}


async def test_an_operator_link_cannot_start_sessions_share_delete_or_reconnect(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, demo_url)
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    sessions_before = set(console.manager.sessions)
    links_before = len(console.manager.links.for_session(sid))

    refused = {
        "start a stdio process": ("/sessions", {"kind": "demo-stdio"}),
        "run a command": ("/sessions", {"kind": "stdio", "command": "true"}),
        "connect a new target": ("/sessions", {"kind": "http", "url": demo_url}),
        "create a link": (f"/sessions/{sid}/links", {"role": "operator"}),
        "delete the session": (f"/sessions/{sid}/delete", {}),
        "reconnect the session": (f"/sessions/{sid}/reconnect", {}),
    }
    for what, (path, form) in refused.items():
        response = await tab.post(path, data=form, headers=JSON)
        assert response.status_code == 403, f"an operator could {what}: {response.status_code} {response.text}"
    imported = await tab.post("/sessions/import", content=b"{}", headers=JSON)
    assert imported.status_code == 403

    assert set(console.manager.sessions) == sessions_before
    assert len(console.manager.links.for_session(sid)) == links_before
    assert (await console.session(sid))["status"] == "connected"


# --- revocation and expiry -------------------------------------------------------------------------------


async def test_revoking_a_link_refuses_its_next_request_with_401_and_closes_its_websocket(
        console: Console, demo_url: str, share_tab: ShareTab, serve: Serve) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    served = await serve(console)
    ws = await open_socket(served, sid, link_token(link))
    try:
        await ws_collect(ws, lambda fs: any("server/discover" in f for f in fs), "the replayed timeline")
        revoked = await console.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
        assert revoked.status_code == 200 and revoked.json()["revoked"], revoked.text
        _, close = await ws_closed(ws)
    finally:
        await ws.close()
    assert close is not None and close.code == CLOSED_BY_LINK and "revoked" in close.reason
    assert (await tab.get(f"/sessions/{sid}.json")).status_code == 401
    assert (await tab.get(f"/s/{link_token(link)}")).status_code == 404
    with pytest.raises(InvalidStatus):
        await open_socket(served, sid, link_token(link))


async def test_an_expiring_link_stops_working_after_its_time_and_its_websocket_is_closed(
        console: Console, demo_url: str, share_tab: ShareTab, serve: Serve) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer", ttl_minutes=0.02)  # 1.2 s
    assert link["expires"] is not None
    tab = await share_tab(console, link)
    # Send the cookie by hand: the browser-side max-age must not be what makes the link stop working.
    cookie = {"Cookie": f"{LINK_COOKIE}={link_token(link)}"}
    assert (await tab.get(f"/sessions/{sid}.json", headers=cookie)).status_code == 200
    served = await serve(console)
    ws = await open_socket(served, sid, link_token(link))
    try:
        _, close = await ws_closed(ws)
    finally:
        await ws.close()
    assert close is not None and close.code == CLOSED_BY_LINK and "expired" in close.reason
    assert time.time() >= link["expires"]

    async def refused() -> bool:
        return (await tab.get(f"/sessions/{sid}.json", headers=cookie)).status_code == 401

    await eventually(refused, 10.0, "the expired link to be refused")


async def test_deleting_a_session_closes_its_viewers_websocket_and_retires_its_links(
        console: Console, demo_url: str, share_tab: ShareTab, serve: Serve) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    served = await serve(console)
    ws = await open_socket(served, sid, link_token(link))
    try:
        await ws_collect(ws, lambda fs: any("server/discover" in f for f in fs), "the replayed timeline")
        assert (await console.http.post(f"/sessions/{sid}/delete")).status_code == 303
        _, close = await ws_closed(ws)
    finally:
        await ws.close()
    assert close is not None and close.code == CLOSED_BY_LINK
    assert (await tab.get(f"/sessions/{sid}.json")).status_code == 401
    assert (await console.http.get(f"/s/{link_token(link)}")).status_code == 404


async def test_after_a_restart_a_revoked_link_stays_revoked_and_an_active_one_still_opens_the_session(
        restarts: ConsoleRestarts, demo_url: str, share_tab: ShareTab) -> None:
    console = restarts.first()
    sid = await demo_session(console, demo_url)
    kept = await create_link(console, sid, "viewer")
    revoked = await create_link(console, sid, "operator")
    assert (await console.http.post(f"/sessions/{sid}/links/{revoked['id']}/revoke", headers=JSON)).status_code == 200

    console = await restarts.restart(console)
    tab = await share_tab(console, kept)
    assert (await tab.get(f"/sessions/{sid}.json")).status_code == 200
    assert (await console.http.get(f"/s/{link_token(revoked)}")).status_code == 404
    cookie = {"Cookie": f"{LINK_COOKIE}={link_token(revoked)}"}
    assert (await tab.get(f"/sessions/{sid}.json", headers=cookie)).status_code == 401


# --- secrets -------------------------------------------------------------------------------------------------


async def test_wire_headers_are_masked_for_a_viewer_and_shown_to_the_owner(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, demo_url, headers=f"Authorization: Bearer {SECRET}")
    discover = next(e for e in (await console.session(sid))["timeline"] if e.get("method") == "server/discover")

    def sent_authorization(detail: dict[str, Any]) -> str:
        [out] = [w for w in detail["wire"] if w["direction"] == "out"]
        return next(v for k, v in out["headers"] if k.lower() == "authorization")

    owner = await console.entry(sid, discover["key"])
    assert sent_authorization(owner) == f"Bearer {SECRET}"  # recorded as its mask; the owner's view puts it back
    curl = await console.http.get(f"/sessions/{sid}/entries/{discover['key']}/curl")
    assert f"Authorization: Bearer {SECRET}" in curl.text  # the owner's cURL sends what was sent

    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    viewer = await tab.get(f"/sessions/{sid}/entries/{discover['key']}.json")
    assert viewer.status_code == 200
    assert sent_authorization(viewer.json()) == "Bearer ••••••"
    for path in (f"/sessions/{sid}/entries/{discover['key']}.json", f"/sessions/{sid}/entries/{discover['key']}",
                 f"/sessions/{sid}.json", f"/sessions/{sid}", f"/sessions/{sid}/export.json?secrets=1",
                 f"/sessions/{sid}/export.har?secrets=1", f"/sessions/{sid}/entries/{discover['key']}/curl"):
        response = await tab.get(path)
        assert response.status_code == 200, f"{path}: {response.status_code}"
        assert SECRET not in response.text, f"a viewer sees the secret in {path}"


async def test_a_credential_in_the_target_url_is_masked_for_a_viewer(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await demo_session(console, f"{demo_url}?api_key={SECRET}")
    reply = await console.call_tool(sid, "echo", text="token in the URL")
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    leaks = []
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}", f"/sessions/{sid}/entries/{reply['key']}/curl",
                 f"/sessions/{sid}/export.json"):
        response = await tab.get(path)
        assert response.status_code == 200, f"{path}: {response.status_code}"
        if SECRET in response.text:
            leaks.append(path)
    assert leaks == []


@pytest.mark.parametrize("typed", ["", "X-Dir: logs", "X-Note: dialogs", "X-Mark: <!--dialogs-->"])
async def test_a_viewer_socket_gets_the_waiting_operation_but_not_its_dialog_which_an_operator_socket_gets(
        console: Console, demo_url: str, serve: Serve, typed: str) -> None:
    # A viewer's page has no inbox, so pushed dialogs were dropped there: but their markup still arrived over the
    # socket, the server's question and whatever an answerer had typed with it. A value the owner typed (masked
    # for link holders) that is part of the marks around the dialogs ("logs") rewrote them, and nothing was cut.
    sid = await demo_session(console, demo_url, headers=typed)
    viewer = await create_link(console, sid, "viewer")
    operator = await create_link(console, sid, "operator")
    served = await serve(console)
    viewer_ws = await open_socket(served, sid, link_token(viewer))
    operator_ws = await open_socket(served, sid, link_token(operator))
    try:
        async def both_subscribed() -> bool:
            return console.manager.hub.subscribers(sid) == 2
        await eventually(both_subscribed, WS_DEADLINE_S, "both sockets to subscribe")
        op = await awaiting_profile_form(console, sid)
        dialog = f'id="inbox-op-{op["op"]}"'
        [asked] = [f for f in await ws_collect(operator_ws, lambda fs: any(dialog in f for f in fs), "the dialog")
                   if dialog in f]
        seen = await ws_collect(viewer_ws, lambda fs: any(fragment_seq(f) >= fragment_seq(asked) for f in fs),
                                "the operation's fragment")
    finally:
        await viewer_ws.close()
        await operator_ws.close()
    [same] = [f for f in seen if fragment_seq(f) == fragment_seq(asked)]
    assert f'e-op-{op["op"]}' in same  # the operation is on the viewer's timeline, waiting
    assert all("#inbox" not in f and "inbox-op-" not in f and "dlg-" not in f for f in seen)
    assert "dialogs-->" not in same


DRAFT = "SECRETDRAFT-my-password-hunter2"


async def test_what_the_owner_typed_into_a_refused_answer_reaches_no_viewer_nor_a_masked_file(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    # The server never received it: it is kept so the dialog shows it again, for those who may answer.
    sid = await demo_session(console, demo_url)
    op = (await awaiting_profile_form(console, sid))["op"]
    refused = await console.http.post(f"/sessions/{sid}/operations/{op}/answer", headers=JSON, data={
        "key": "profile", "key_json": '"profile"', "round": "1", "action": "accept", "arg.name": "x",
        "arg.email": DRAFT})
    [mine] = [o for o in (await console.session(sid))["operations"] if o["op"] == op]
    assert mine["status"] == "awaiting_input" and mine["errors"].get("profile"), (refused.text, mine)

    viewer = await share_tab(console, await create_link(console, sid, "viewer"))
    operator = await share_tab(console, await create_link(console, sid, "operator"))
    # The timeline's older page and an entry's JSON are rebuilt from the store, where the operation's events keep
    # what was typed (its dialog shows it again): rebuilt, they gave it to anyone who could read the session.
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}/operations/{op}.json", f"/sessions/{sid}/export.json",
                 f"/sessions/{sid}/timeline?before=999999", f"/sessions/{sid}/entries/op-{op}.json"):
        seen = await viewer.get(path, headers=JSON)
        assert seen.status_code == 200, (path, seen.text[:300])
        assert DRAFT not in seen.text and '"drafts"' not in seen.text.replace('"drafts": {}', ""), path
    [shown] = [o for o in (await viewer.get(f"/sessions/{sid}.json")).json()["operations"] if o["op"] == op]
    assert shown["errors"] == {} and shown["status"] == "awaiting_input"
    [answerable] = [o for o in (await operator.get(f"/sessions/{sid}.json")).json()["operations"] if o["op"] == op]
    assert answerable["errors"] == mine["errors"]  # an operator may answer: it sees why the answer was refused
    assert DRAFT not in (await console.http.get(f"/sessions/{sid}/export.json")).text  # masked: the shared file
    assert DRAFT in (await console.http.get(f"/sessions/{sid}/export.json?secrets=1")).text  # the owner's own


# -- A link holder (or whoever receives an export) reads a short header value the owner marked secret.
#
# A short secret is masked where it stands: a request's own header list records its mask (`X-Tenant: ab1`, marked
# secret on the connect form though its name is no credential's), in the session file, the HAR and every entry.

SHORT = "zq7"  # three characters: below the substring-masking length, and found nowhere else on a page


async def test_a_short_typed_header_value_is_masked_in_the_frames_headers_for_a_viewer_and_in_exports(
        console: Console, demo_url: str, share_tab: Callable[..., Awaitable[httpx.AsyncClient]]) -> None:
    s = await console.connect(kind="http", url=demo_url, headers=f"X-Tenant: {SHORT}",
                              secret_offered="header:X-Tenant", secret="header:X-Tenant")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    discover = next(e for e in (await console.session(sid))["timeline"] if e.get("method") == "server/discover")

    def sent(detail: dict[str, Any]) -> str:
        [out] = [w for w in detail["wire"] if w["direction"] == "out"]
        return str(next(v for k, v in out["headers"] if k.lower() == "x-tenant"))

    assert sent(await console.entry(sid, discover["key"])) == SHORT  # the owner sees what went out
    for path in (f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har"):
        text = (await console.http.get(path)).text
        assert f'"{SHORT}"' not in text, path
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert sent((await tab.get(f"/sessions/{sid}/entries/{discover['key']}.json")).json()) != SHORT
    for path in (f"/sessions/{sid}/entries/{discover['key']}", f"/sessions/{sid}/entries/{discover['key']}/body",
                 f"/sessions/{sid}/entries/{discover['key']}/curl",
                 f"/sessions/{sid}/export.json?secrets=1", f"/sessions/{sid}/export.har?secrets=1"):
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert SHORT not in response.text, f"a viewer sees {SHORT!r} in {path}"


# -- A link holder uses the whole-session filter as an oracle for values the owner typed.
#
# The page masks every value the owner typed (environment, arguments, headers), but the filter searches the
# entry index, which holds the entries' text as recorded. A viewer who asks `?q=<guess>` and reads how many
# entries match learns, one character at a time, a value the page never shows. A masked caller's text query
# must be answered as if the index held the masked text.

FILTER_SECRET = "sk-live-Zq9x7w"


async def _stdio_session(console: Console) -> str:
    command = " ".join(["env", f"OPENAI_KEY={FILTER_SECRET}", *hostile_argv("basic")])
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def _matches(client: httpx.AsyncClient, sid: str, q: str) -> int:
    response = await client.get(f"/sessions/{sid}.json", params={"q": q})
    assert response.status_code == 200, response.text
    return int(response.json()["matches"])


async def test_a_viewer_cannot_learn_a_typed_secret_by_counting_filter_matches(
        console: Console, share_tab: ShareTab) -> None:
    sid = await _stdio_session(console)
    assert await _matches(console.http, sid, FILTER_SECRET[:9]) == 0  # the log holds its mask, for everyone
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert await _matches(tab, sid, "started pid") >= 1  # the viewer's filter works on what it may see
    for guess in (FILTER_SECRET[:9], FILTER_SECRET.lower(), "openai_key=sk"):
        assert await _matches(tab, sid, guess) == 0, guess


async def test_a_viewer_cannot_page_older_matches_of_a_typed_secret(
        console: Console, share_tab: ShareTab) -> None:
    sid = await _stdio_session(console)
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    response = await tab.get(f"/sessions/{sid}/timeline", params={"before": 10 ** 9, "q": FILTER_SECRET[:9]},
                             headers={"accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["timeline"] == []


async def test_a_presenter_owner_tab_cannot_find_a_typed_secret_either(console: Console) -> None:
    sid = await _stdio_session(console)
    console.http.cookies.set("mcp_console_presenter", "1")
    response = await console.http.get(f"/sessions/{sid}.json", params={"q": FILTER_SECRET[:9]})
    assert response.status_code == 200 and response.json()["matches"] == 0


async def test_a_viewer_cannot_count_matches_of_a_typed_secret_the_server_spelled_with_other_writers_escapes(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    # The page masked "sk\/live…" (PHP's escape, doubled again by the error message's repr of the body), but the
    # filter hid only the plain spellings: `?q=token sk\\/l`, then `…/li`, … counted one match per right guess.
    token = "sk/live/Zq9x7wAAAA"
    s = await console.connect(kind="http", url=hostile_http("text"), headers=f"Authorization: Bearer {token}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    await console.call_tool(sid, "refuse_escaped", text=token)
    probe = "token sk\\\\/live\\\\/zq9"  # as the entry's message holds it (casefolded)
    assert await _matches(console.http, sid, probe) == 0  # masked when recorded: the owner's index holds the mask
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert await _matches(tab, sid, "is not valid") == 1  # the viewer's filter works on what it may see
    for guess in (probe, probe + "x", "token sk", "sk\\\\/live", "zq9x7waaaa"):
        assert await _matches(tab, sid, guess) == 0, guess
    older = await tab.get(f"/sessions/{sid}/timeline", params={"before": 10 ** 9, "q": "token sk"},
                          headers={"accept": "application/json"})
    assert older.status_code == 200 and older.json()["timeline"] == []


# -- The console's access control by a link holder and by what the console starts.
#
# A hostile visitor holds a share link (viewer or operator) and asks the console for what the page hides from it;
# a hostile stdio target reads what the console hands it when it starts. Each test is one hole that was open.

LABEL = "for-alice-at-example-corp"


async def test_a_link_holders_session_file_lists_none_of_the_owners_share_links(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    """The page and its JSON twin show a link holder no share links (their labels, roles, expiry, revocations
    are the owner's); the session file the same holder downloads listed every one of them."""
    sid = await demo_session(console, demo_url)
    labelled = await console.http.post(f"/sessions/{sid}/links", data={"role": "operator", "label": LABEL},
                                       headers=JSON)
    assert labelled.status_code == 200, labelled.text
    revoked = await create_link(console, sid, "viewer")
    assert (await console.http.post(f"/sessions/{sid}/links/{revoked['id']}/revoke")).status_code == 200
    for role in ("viewer", "operator"):
        tab = await share_tab(console, await create_link(console, sid, role))
        twin = await tab.get(f"/sessions/{sid}.json")
        assert twin.status_code == 200 and twin.json()["links"] == [], twin.text
        exported = await tab.get(f"/sessions/{sid}/export.json")
        assert exported.status_code == 200, exported.text
        kinds = {e["kind"] for e in exported.json()["events"]}
        assert not kinds & {"link_created", "link_revoked"}, (role, kinds)
        assert LABEL not in exported.text and labelled.json()["id"] not in exported.text
        # What is left is still a session file: the owner imports it as ever.
        imported = await console.http.post("/sessions/import", content=exported.content, headers=JSON)
        assert imported.status_code == 200, imported.text
    # The owner's own file keeps the link history, as it did.
    own = json.loads((await console.http.get(f"/sessions/{sid}/export.json")).text)
    assert {"link_created", "link_revoked"} <= {e["kind"] for e in own["events"]}


async def test_a_stdio_server_is_not_handed_the_owner_token_from_the_consoles_environment(
        console: Console, share_tab: ShareTab, monkeypatch: pytest.MonkeyPatch) -> None:
    """`MCP_CONSOLE_TOKEN` is how the README says to pass the token; every stdio server the console started
    inherited it (and the store's and Redis's URLs with their passwords). A server that prints its environment
    on stderr (a debug mode) showed the owner token to every link holder, in the session's stderr panel."""
    monkeypatch.setenv("MCP_CONSOLE_TOKEN", TOKEN)
    monkeypatch.setenv("MCP_CONSOLE_DATABASE_URL", "postgresql://console:hunter2-db-password@127.0.0.1/db")
    dump = ("import os, sys; sys.stderr.write('ENV ' + ' '.join(sorted(k + '=' + v for k, v in os.environ.items() "
            "if k.startswith('MCP_CONSOLE_') or k == 'KEPT')) + chr(10)); sys.stderr.flush()")
    sid = await console.create(kind="stdio", command=f"env KEPT=yes {sys.executable} -c {shlex.quote(dump)}")

    async def dumped() -> str | None:
        lines = [line for line in (await console.session(sid))["stderr"] if line.startswith("ENV")]
        return lines[0] if lines else None

    line = await eventually(dumped, what="the server's environment on stderr")
    assert "KEPT=yes" in line, line  # the process's own environment still reaches it
    assert TOKEN not in line and "hunter2" not in line and "MCP_CONSOLE_" not in line, line
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert TOKEN not in (await tab.get(f"/sessions/{sid}.json")).text


async def test_a_link_revoked_before_its_websocket_says_hello_does_not_keep_that_websocket_open(
        console: Console, demo_url: str, serve: Serve) -> None:
    """The socket is accepted, then waits up to five seconds for the tab's hello before it subscribes; a revocation
    closes the sockets subscribed by then. A holder that opens sockets and holds back the hello had one
    subscribe after the revocation, and it took the live feed for good: every call the owner made after it."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    served = await serve(console)
    ws = await connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S, **served.via,
                       additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}"))
    try:
        revoked = await console.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
        assert revoked.status_code == 200 and revoked.json()["revoked"], revoked.text
        await ws.send(json.dumps({"last_seq": 0}))  # the hello, after the revocation
        await console.call_tool(sid, "echo", text="said after the link was revoked")
        frames, close = await ws_closed(ws)
    finally:
        await ws.close()
    assert close is not None and close.code == CLOSED_BY_LINK and "revoked" in close.reason, close
    assert not any("said after the link was revoked" in f for f in frames)


async def test_the_share_links_landing_page_sends_no_referer_to_the_page_it_opens(
        console: Console, demo_url: str) -> None:
    """The landing page's URL is the link's token; it opens the session with a meta refresh, and under the
    console's same-origin policy the session page (and whatever logs its requests) got that URL as its Referer."""
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base) as tab:
        landing = await tab.get(f"/s/{link_token(link)}")
    assert landing.status_code == 200, landing.text
    assert '<meta name="referrer" content="no-referrer">' in landing.text, landing.text


SSE_SESSION = "sid-7f3a9c2e41b8d6"


async def test_a_link_holder_never_reads_the_http_sse_session_id_from_a_failed_post(
        console: Console, share_tab: ShareTab) -> None:
    """The 2024-11-05 transport posts to the endpoint its stream names, `/messages?sessionId=…`: that id is what
    binds a POST to the owner's stream, as Mcp-Session-Id does (masked by its name). A POST that failed said the
    endpoint whole in its error, which the session's status shows every link holder."""

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        if head.startswith("GET"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
                         + f"event: endpoint\ndata: /messages?sessionId={SSE_SESSION}\n\n".encode())
            await writer.drain()
            await reader.read()  # the stream stays open until the console lets go of it
        else:
            length = int(next((line.split(":", 1)[1] for line in head.split("\r\n")
                               if line.lower().startswith("content-length:")), "0"))
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nboom")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        s = await console.connect(kind="http", url=f"http://127.0.0.1:{port}/sse", era="sse-2024")
        assert s["status"] == "failed" and "HTTP 500" in s["status_message"], s["status_message"]
        assert "/messages" in s["status_message"], s["status_message"]  # still says where it posted
        tab = await share_tab(console, await create_link(console, str(s["id"]), "viewer"))
        for path in (f"/sessions/{s['id']}.json", f"/sessions/{s['id']}", f"/sessions/{s['id']}/export.json",
                     f"/sessions/{s['id']}/export.har"):
            shown = await tab.get(path)
            assert shown.status_code == 200 and SSE_SESSION not in shown.text, (path, shown.text[:2000])
    finally:
        server.close()


async def _raw_answer_head(served_port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", served_port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WS_DEADLINE_S)
    finally:
        writer.close()


@pytest.mark.parametrize("target", [b"http://evil.example/sessions.json", b"HTTP://127.0.0.1/sessions.json",
                                    b"127.0.0.1:80"])
async def test_a_request_target_that_is_not_a_path_on_the_console_is_refused_with_400_even_with_the_token(
        console: Console, serve: Serve, target: bytes) -> None:
    """uvicorn keeps an absolute-form target's path and drops its authority, so `GET http://evil.example/…` with
    the console's Host and the token was answered as `GET /…`: a proxy in front that routes by the target's
    authority (as RFC 9112 says it should) would see one host and the console's Host check another."""
    served = await serve(console)
    auth = f"Authorization: Bearer {TOKEN}\r\nHost: {served.public}\r\n".encode()
    good = await _raw_answer_head(served.port, b"GET /sessions.json HTTP/1.1\r\n" + auth + b"\r\n")
    assert good.startswith(b"HTTP/1.1 200"), good  # the same request with an origin-form target is answered
    method = b"CONNECT" if target == b"127.0.0.1:80" else b"GET"
    refused = await _raw_answer_head(served.port, method + b" " + target + b" HTTP/1.1\r\n" + auth + b"\r\n")
    assert refused.startswith(b"HTTP/1.1 400"), refused


@pytest.mark.parametrize("method", ["initialize", "notifications/initialized"])
async def test_an_operator_may_not_replay_a_request_that_declares_the_clients_capabilities(
        console: Console, demo_url: str, share_tab: ShareTab, method: str) -> None:
    """An edited replay sends any method. On a 2025-11-25 session an operator's `initialize` declared capabilities
    (roots, sampling) the owner never chose, which the roles keep for the owner."""
    sid = await demo_session(console, demo_url)
    original = await console.call_tool(sid, "echo", text="hi")
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    claims = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
              "clientInfo": {"name": "operator", "version": "1"}}
    form = {"key": original["key"], "mode": "edited", "method": method, "params": json.dumps(claims)}
    before = len((await console.session(sid))["timeline"])
    refused = await tab.post(f"/sessions/{sid}/replay", data=form, headers={**JSON, "Origin": console.base})
    assert refused.status_code == 403 and "owner" in refused.text, refused.text
    assert len((await console.session(sid))["timeline"]) == before  # nothing went to the target
    edited = {"name": "echo", "arguments": {"text": "the operator's replay"}}
    allowed = await tab.post(f"/sessions/{sid}/replay", headers={**JSON, "Origin": console.base}, data={
        "key": original["key"], "mode": "edited", "method": "tools/call", "params": json.dumps(edited)})
    assert allowed.status_code == 200, allowed.text  # an operator still replays calls
    owner = await console.http.post(f"/sessions/{sid}/replay", data=form, headers=JSON)
    assert owner.status_code != 403, owner.text  # the owner may send it (the demo server says what it thinks)
