"""The owner's credential stays with the console: cookies count only under its public host name.

Browsers send a 127.0.0.1 cookie to every port of 127.0.0.1, so a hostile target that gets the owner to open
http://127.0.0.1:<its port>/ would receive it. The console therefore honours its cookies only under its own
random mcp-….localhost name, while Bearer headers (scripts) work under any allowed Host. Driven in-process over
ASGITransport (the Host header is the base URL's) and, for the websocket, under a real uvicorn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from app.settings import Settings
from app.web.app import create_app
from app.web.security import COOKIE, LINK_COOKIE
from tests.integration.conftest import AUTH, JSON, TOKEN, WS_DEADLINE_S, create_link, link_token

if TYPE_CHECKING:
    from collections.abc import Awaitable
    from pathlib import Path

    from tests.integration.conftest import Console, Served


def client(console: Console, base: str, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=base, timeout=30, **kw)


# --- which Host a cookie counts under ---------------------------------------------------------------------


@pytest.mark.parametrize("base", ["http://127.0.0.1", "http://localhost", "http://testserver"])
async def test_the_owner_cookie_under_another_allowed_host_is_refused_with_401(console: Console, base: str) -> None:
    async with client(console, base, headers={"Cookie": f"{COOKIE}={TOKEN}", **JSON}) as tab:
        assert (await tab.get("/sessions.json")).status_code == 401
        refused = await tab.post("/sessions", data={"kind": "demo-stdio"}, headers={"Origin": base})
    assert refused.status_code == 401
    assert console.manager.sessions == {}, "a refused POST must not create (or start) anything"


async def test_the_owner_cookie_under_the_public_host_opens_the_session_list(console: Console) -> None:
    async with client(console, console.base, headers={"Cookie": f"{COOKIE}={TOKEN}", **JSON}) as tab:
        assert (await tab.get("/sessions.json")).status_code == 200


async def test_the_owner_cookie_under_the_public_name_on_another_port_is_refused(console: Console) -> None:
    # The request reaches the console's socket (port 80 here) but names port 9: not the console's origin.
    async with client(console, console.base, headers={"Cookie": f"{COOKIE}={TOKEN}", **JSON,
                                                      "Host": f"{console.public_host}:9"}) as tab:
        assert (await tab.get("/sessions.json")).status_code == 401


async def test_a_bearer_token_works_under_127_0_0_1(console: Console) -> None:
    async with client(console, "http://127.0.0.1", headers={**AUTH, **JSON}) as script:
        assert (await script.get("/sessions.json")).status_code == 200


async def test_the_launch_url_under_127_0_0_1_hops_to_the_public_host_without_setting_a_cookie(
        console: Console) -> None:
    async with client(console, "http://127.0.0.1") as tab:
        response = await tab.get("/", params={"token": TOKEN, "next": "/sessions/abc"})
    assert response.status_code == 303
    assert "set-cookie" not in response.headers
    assert response.headers["location"] == f"{console.base}/?token={TOKEN}&next=%2Fsessions%2Fabc"


async def test_a_wrong_token_under_127_0_0_1_gets_401_and_does_not_learn_the_public_host(console: Console) -> None:
    async with client(console, "http://127.0.0.1") as tab:
        response = await tab.get("/", params={"token": "not-the-owner-token"})
    assert response.status_code == 401
    assert console.public_host not in response.text and "location" not in response.headers


# --- Origin scheme, doubled Host --------------------------------------------------------------------------


async def test_a_post_with_the_right_netloc_but_the_wrong_scheme_is_refused_with_403(console: Console) -> None:
    netloc = console.base.split("://", 1)[1]
    response = await console.http.post("/sessions", data={"kind": "demo-stdio"},
                                       headers={"Origin": f"https://{netloc}", **JSON})
    assert response.status_code == 403 and "Origin" in response.text
    assert console.manager.sessions == {}


async def test_a_request_with_two_host_headers_is_refused_with_400(console: Console) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/sessions.json", "raw_path": b"/sessions.json", "query_string": b"", "root_path": "",
             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5555),
             "headers": [(b"host", console.public_host.encode()), (b"host", b"evil.example"),
                         (b"authorization", f"Bearer {TOKEN}".encode())]}
    await console.app(scope, receive, send)  # type: ignore[arg-type]
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 400


# --- share links ------------------------------------------------------------------------------------------


async def test_a_share_link_url_uses_the_public_host_whatever_host_the_request_came_with(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    async with client(console, "http://testserver", headers={**AUTH, **JSON}) as script:
        response = await script.post(f"/sessions/{sid}/links", data={"role": "viewer"},
                                     headers={"Origin": "http://testserver"})
    assert response.status_code == 200, response.text
    assert response.json()["url"].startswith(f"http://{console.public_host}/s/")


async def test_a_share_link_opened_under_127_0_0_1_hops_to_the_public_host_and_its_cookie_counts_only_there(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    token = link_token(await create_link(console, sid, "operator"))
    async with client(console, "http://127.0.0.1") as tab:
        hop = await tab.get(f"/s/{token}")
        assert hop.status_code == 303 and "set-cookie" not in hop.headers
        assert hop.headers["location"] == f"{console.base}/s/{token}"
        tab.headers["Cookie"] = f"{LINK_COOKIE}={token}"
        assert (await tab.get(f"/sessions/{sid}.json")).status_code == 401
    async with client(console, console.base, headers={"Cookie": f"{LINK_COOKIE}={token}"}) as tab:
        assert (await tab.get(f"/sessions/{sid}.json")).status_code == 200


# --- the websocket ----------------------------------------------------------------------------------------


async def test_the_websocket_refuses_the_owner_cookie_under_127_0_0_1_and_takes_it_under_the_public_host(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]]) -> None:
    sid = await console.connected_http(demo_url)
    served = await serve(console)
    with pytest.raises(InvalidStatus):
        async with connect(f"ws://{served.host}/sessions/{sid}/ws", open_timeout=WS_DEADLINE_S,
                           additional_headers={"Cookie": f"{COOKIE}={TOKEN}", "Origin": f"http://{served.host}"}):
            pass
    async with connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S, **served.via,
                       additional_headers=served.headers()):
        pass


# --- tokens -----------------------------------------------------------------------------------------------


def test_the_app_refuses_a_set_owner_token_shorter_than_16_characters(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        create_app(Settings(data_dir=str(tmp_path), token="t"))


# --- operators may not change the owner's claims ----------------------------------------------------------


async def test_an_operator_cannot_change_roots_or_client_capabilities(
        console: Console, demo_url: str, share_tab: Callable[..., Awaitable[httpx.AsyncClient]]) -> None:
    sid = await console.connected_http(demo_url)
    before = await console.session(sid)
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    origin = {"Origin": console.base, **JSON}
    refused = {
        "roots": (f"/sessions/{sid}/roots", {"roots": "file:///etc"}),
        "capabilities": (f"/sessions/{sid}/capabilities", {"cap": "sampling"}),
        "capabilities as JSON": (f"/sessions/{sid}/capabilities", {"mode": "json", "caps_json": '{"roots": {}}'}),
        "enable and retry": (f"/sessions/{sid}/operations/nope/enable-and-retry", {}),
    }
    for what, (path, form) in refused.items():
        response = await tab.post(path, data=form, headers=origin)
        assert response.status_code == 403, (what, response.text)
    after = await console.session(sid)
    assert (after["roots"], after["client_capabilities"]) == (before["roots"], before["client_capabilities"])
    # What an operator may still do: call a tool.
    called = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "hi"}, headers=origin)
    assert called.status_code == 200, called.text
