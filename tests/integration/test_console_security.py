"""Security defaults: the owner token, the Host allow-list, Origin checks, the launch URL and the websocket.

HTTP routes are driven in-process over ASGITransport; the websocket needs a real server, so those tests
run the same app under uvicorn on 127.0.0.1 and connect with the `websockets` client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

if TYPE_CHECKING:
    from tests.integration.conftest import Console

from typing import TYPE_CHECKING

from tests.integration.conftest import TOKEN

if TYPE_CHECKING:
    from tests.integration.conftest import Console


COOKIE = "mcp_console_token"
WS_DEADLINE_S = 10.0


# --- the owner token ---------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), [("GET", "/sessions.json"), ("POST", "/sessions"), ("GET", "/")])
async def test_a_caller_without_the_token_is_refused_with_401(console: Console, method: str, path: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url="http://127.0.0.1") as anon:
        response = await anon.request(method, path, data={"kind": "demo-stdio"} if method == "POST" else None)
    assert response.status_code == 401
    assert console.manager.sessions == {}, "a refused POST must not create (or start) anything"


async def test_a_wrong_bearer_token_is_refused_with_401(console: Console) -> None:
    response = await console.http.get("/sessions.json", headers={"Authorization": "Bearer not-the-owner-token"})
    assert response.status_code == 401


async def test_the_owner_token_opens_the_session_list(console: Console) -> None:
    response = await console.http.get("/sessions.json")
    assert response.status_code == 200
    assert response.json() == {"sessions": []}


# --- Host and Origin -----------------------------------------------------------------------


async def test_a_foreign_host_header_is_refused_with_403_even_with_the_token(console: Console) -> None:
    response = await console.http.get("/sessions.json", headers={"Host": "evil.example"})
    assert response.status_code == 403
    assert "Host" in response.text


async def test_an_allowed_extra_host_is_accepted(console: Console) -> None:
    response = await console.http.get("/sessions.json", headers={"Host": "testserver"})
    assert response.status_code == 200


async def test_a_post_from_a_foreign_origin_is_refused_with_403(console: Console) -> None:
    response = await console.http.post("/sessions", data={"kind": "demo-stdio"},
                                       headers={"Origin": "http://evil.example", "Accept": "application/json"})
    assert response.status_code == 403
    assert "Origin" in response.text
    assert console.manager.sessions == {}, "a refused POST must not start a process"


async def test_a_post_from_another_port_on_the_same_host_is_refused_and_starts_nothing(console: Console) -> None:
    # A page served by another local service is same-site to the browser, which sends the owner's cookie.
    response = await console.http.post("/sessions", data={"kind": "demo-stdio"},
                                       headers={"Origin": "http://127.0.0.1:3000", "Sec-Fetch-Site": "same-site",
                                                "Accept": "application/json"})
    assert response.status_code == 403
    assert console.manager.sessions == {}, "a refused POST must not start a process"


async def test_every_response_carries_a_content_security_policy(console: Console) -> None:
    response = await console.http.get("/sessions.json")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'self'" in policy  # only its own workspace panes
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_a_header_value_that_is_not_latin1_is_refused_before_anything_is_sent(console: Console) -> None:
    response = await console.http.post("/sessions", data={"kind": "http", "url": "http://127.0.0.1:9/mcp",
                                                          "headers": "X-Name: h\u00e9llo \u2603"},
                                       headers={"Accept": "application/json"})
    assert response.status_code == 400
    assert "Latin-1" in response.text
    assert console.manager.sessions == {}


async def test_a_cross_site_fetch_is_refused_with_403(console: Console) -> None:
    response = await console.http.post("/sessions", data={"kind": "demo-stdio"},
                                       headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status_code == 403
    assert console.manager.sessions == {}


async def test_a_post_from_our_own_origin_is_accepted(console: Console, demo_url: str) -> None:
    response = await console.http.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""},
                                       headers={"Origin": console.base, "Accept": "application/json"})
    assert response.status_code == 200
    assert (await console.settled(response.json()["id"]))["status"] == "connected"


# --- the launch URL ---------------------------------------------------------------------------


async def test_the_launch_url_sets_a_strict_httponly_cookie_and_redirects_to_a_clean_url(console: Console) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base) as tab:
        response = await tab.get("/", params={"token": TOKEN})
        assert response.status_code == 303
        assert response.headers["location"] == "/"
        cookie = response.headers["set-cookie"]
        attributes = {part.strip().lower() for part in cookie.split(";")}
        assert f"{COOKIE}={TOKEN}" in cookie
        assert "httponly" in attributes
        assert "samesite=strict" in attributes
        assert "path=/" in attributes
        # The cookie alone now opens the owner's routes.
        assert (await tab.get("/sessions.json")).status_code == 200


async def test_the_launch_url_with_a_wrong_token_is_refused_with_401_and_no_cookie(console: Console) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base) as tab:
        response = await tab.get("/", params={"token": "wrong"})
    assert response.status_code == 401
    assert "set-cookie" not in response.headers


async def test_the_launch_url_follows_a_local_next_path(console: Console) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": "/sessions/abc"})
    assert response.status_code == 303
    assert response.headers["location"] == "/sessions/abc"


@pytest.mark.parametrize("target", ["//evil.example", "https://evil.example/", "//evil.example/sessions"])
async def test_the_launch_url_does_not_follow_next_to_another_site(console: Console, target: str) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": target})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


@pytest.mark.parametrize("target", ["/\\evil.example", "/\\/evil.example", "/%2F/evil.example"])
async def test_the_launch_url_keeps_an_odd_next_path_on_our_own_site(console: Console, target: str) -> None:
    # Browsers read a backslash as a slash, so "/\\evil.example" must not reach the client as is.
    response = await console.http.get("/", params={"token": TOKEN, "next": target})
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.startswith("/") and not location.startswith("//") and "\\" not in location


# --- the websocket, over a real server ----------------------------------------------------------


@pytest.fixture
async def served(console: Console) -> AsyncIterator[str]:
    """The console app under a real uvicorn server on 127.0.0.1; yields its public `name:port`."""
    config = uvicorn.Config(console.app, host="127.0.0.1", port=0, lifespan="off", log_level="warning",
                            ws="websockets-sansio")
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(), name="uvicorn-under-test")
    deadline = time.monotonic() + WS_DEADLINE_S
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            pytest.fail("uvicorn did not start")
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"{console.public_host}:{port}"  # reached over 127.0.0.1: see _via
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WS_DEADLINE_S)


async def _ws_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


def _via(url: str) -> dict[str, Any]:
    """Python does not resolve *.localhost (browsers do): connect to 127.0.0.1, keep the URL's Host."""
    return {"host": "127.0.0.1", "port": int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])}


async def _refused(url: str, headers: dict[str, str]) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers=headers, open_timeout=WS_DEADLINE_S, **_via(url)):
            pass
    return int(refused.value.response.status_code)


async def test_the_websocket_refuses_a_foreign_origin(console: Console, demo_url: str, served: str) -> None:
    session_id = await _ws_session(console, demo_url)
    status = await _refused(f"ws://{served}/sessions/{session_id}/ws",
                            {"Cookie": f"{COOKIE}={TOKEN}", "Origin": "http://evil.example"})
    assert status == 403


async def test_the_websocket_refuses_another_port_on_the_same_host(console: Console, demo_url: str,
                                                                  served: str) -> None:
    session_id = await _ws_session(console, demo_url)
    host = served.rsplit(":", 1)[0]
    status = await _refused(f"ws://{served}/sessions/{session_id}/ws",
                            {"Cookie": f"{COOKIE}={TOKEN}", "Origin": f"http://{host}:1"})
    assert status == 403


async def test_the_websocket_refuses_a_caller_without_the_cookie(console: Console, demo_url: str,
                                                                 served: str) -> None:
    session_id = await _ws_session(console, demo_url)
    status = await _refused(f"ws://{served}/sessions/{session_id}/ws", {"Origin": f"http://{served}"})
    assert status == 403


async def test_the_websocket_refuses_a_wrong_cookie(console: Console, demo_url: str, served: str) -> None:
    session_id = await _ws_session(console, demo_url)
    status = await _refused(f"ws://{served}/sessions/{session_id}/ws",
                            {"Cookie": f"{COOKIE}=wrong", "Origin": f"http://{served}"})
    assert status == 403


async def _receive_until(ws: Any, wanted: Any, what: str) -> list[str]:
    frames: list[str] = []
    deadline = time.monotonic() + WS_DEADLINE_S
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            frames.append(str(await asyncio.wait_for(ws.recv(), remaining)))
        except TimeoutError:
            break
        if wanted(frames):
            return frames
    pytest.fail(f"the websocket never delivered {what}; got {frames!r}")


async def test_the_websocket_with_cookie_and_our_origin_replays_and_pushes_html_fragments(
        console: Console, demo_url: str, served: str) -> None:
    session_id = await _ws_session(console, demo_url)
    headers = {"Cookie": f"{COOKIE}={TOKEN}", "Origin": f"http://{served}"}
    url = f"ws://{served}/sessions/{session_id}/ws"
    async with connect(url, additional_headers=headers, open_timeout=WS_DEADLINE_S, **_via(url)) as ws:
        await ws.send(json.dumps({"last_seq": 0}))
        # What happened before the tab connected is replayed: the discover and list exchanges.
        replayed = await _receive_until(ws, lambda fs: any("server/discover" in f for f in fs), "the replay")
        assert all(f.lstrip().startswith("<") for f in replayed), replayed
        assert any("hx-swap-oob" in f for f in replayed)

        # A call made now is pushed live, as HTML, to the open tab.
        reply = await console.call_tool(session_id, "echo", text="<b>pushed</b>")
        assert reply["ok"] is True
        pushed = await _receive_until(ws, lambda fs: any("echo" in f for f in fs), "the echo call")
        assert all("<b>pushed</b>" not in f for f in pushed), "server text must arrive escaped"


async def test_pages_and_json_twins_are_never_stored_by_the_browser_but_static_files_are_cached(
        console: Console) -> None:
    # An owner's pages hold what a target sent and, with ?secrets=1, the values the owner typed: a shared
    # machine's browser cache must not keep them on disk after the tab is closed.
    for path in ("/", "/sessions.json"):
        response = await console.http.get(path)
        assert response.status_code == 200, path
        assert response.headers.get_list("cache-control") == ["no-store"], path
    static = await console.http.get("/static/console.js")
    assert static.status_code == 200
    assert "no-store" not in static.headers.get("cache-control", "")


# -- The console's own redirects sent to another site.
#
# The launch URL (`/?token=…&next=…`) and the presenter toggle (`next` in its form) redirect to a path of the
# caller's choosing after setting a cookie. A check for "starts with / but not //" lets `/\evil.example` and
# `/\t/evil.example` through, and browsers read both as `//evil.example`: another site, opened from the console
# with the owner's trust. Only a plain path on the console itself may be followed.

HOSTILE_NEXT = ["/\\evil.example/", "/\t/evil.example/", "/\n/evil.example", "//evil.example", "/\\/evil.example",
                "https://evil.example/"]


@pytest.mark.parametrize("target", HOSTILE_NEXT)
async def test_the_launch_url_never_redirects_off_the_console(console: Console, target: str) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": target})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


@pytest.mark.parametrize("target", HOSTILE_NEXT)
async def test_the_presenter_toggle_never_redirects_off_the_console(console: Console, target: str) -> None:
    response = await console.http.post("/presenter", data={"next": target})
    assert response.status_code == 303
    assert response.headers["location"] == "/"


async def test_a_plain_path_with_its_query_is_still_followed(console: Console) -> None:
    response = await console.http.get("/", params={"token": TOKEN, "next": "/sessions/abc?q=x"})
    assert response.headers["location"] == "/sessions/abc?q=x"
