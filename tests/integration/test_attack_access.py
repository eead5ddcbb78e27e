"""Attacks on the console's access control by a link holder and by what the console starts.

A hostile visitor holds a share link (viewer or operator) and asks the console for what the page hides from it;
a hostile stdio target reads what the console hands it when it starts. Each test is one hole that was open.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from typing import TYPE_CHECKING

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import (
    JSON,
    LINK_COOKIE,
    TOKEN,
    WS_DEADLINE_S,
    create_link,
    eventually,
    link_token,
    ws_closed,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
    Serve = Callable[..., Awaitable[Served]]

LABEL = "for-alice-at-example-corp"
CLOSED_BY_LINK = 4003  # the close code the console uses when it cuts a link's socket


async def demo_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


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
