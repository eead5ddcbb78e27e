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
    assert sent_authorization(owner) == f"Bearer {SECRET}"

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
