"""The action POSTs: a streamed body and a declared one are answered alike, recorded alike, and bounded alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from app.web.security import page_headers
from tests.integration.conftest import JSON

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.integration.conftest import Console
from typing import TYPE_CHECKING

import pytest

from app.web import actions
from tests.integration.conftest import create_link, free_port

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from tests.integration.conftest import Console

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
import asyncio
import json
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import OWNER_COOKIE, TOKEN, Seen, TinyHttp

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    Serve = Callable[..., Awaitable[Served]]


FORM = b"tool=echo&arg.text=front"
FORM_TYPE = {"Content-Type": "application/x-www-form-urlencoded"}


async def test_a_call_with_a_declared_length_and_a_streamed_one_get_the_same_answer_and_headers(
        console: Console, demo_url: str) -> None:
    # A declared length and a streamed body (no Content-Length) take the same path and get the same answer.
    sid = await console.connected_http(demo_url)

    async def streamed() -> AsyncIterator[bytes]:
        yield FORM

    one_step = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM, headers={**JSON, **FORM_TYPE})
    full = await console.http.post(f"/sessions/{sid}/tools/call", content=streamed(), headers={**JSON, **FORM_TYPE})
    assert one_step.status_code == full.status_code == 200, (one_step.text, full.text)
    a, b = one_step.json(), full.json()
    assert a["ok"] and b["ok"] and a["result"] == b["result"]
    assert a["result"]["content"] == [{"type": "text", "text": "front"}]
    assert sorted(a) == sorted(b)
    assert a["status"] == b["status"] == "complete"

    def kept(response: httpx.Response) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k not in ("content-length", "date"))

    assert kept(one_step) == kept(full)
    for name, value in page_headers(console.app.state.web.guard.sandbox_host):
        assert one_step.headers[name.decode()] == value.decode()


async def test_a_call_with_a_declared_length_is_recorded_like_any_other(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM, headers={**JSON, **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    entry = await console.http.get(f"/sessions/{sid}/entries/{answer.json()['key']}.json")
    assert entry.status_code == 200, entry.text
    directions = [w["direction"] for w in entry.json()["wire"]]
    assert directions[:1] == ["out"] and "in" in directions


async def test_an_html_call_from_a_tab_is_answered_in_one_step_with_its_card(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM,
                                     headers={"HX-Request": "true", **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "front" in answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"


async def test_a_declared_length_beside_a_transfer_encoding_is_counted_by_the_body_limit(
        console: Console, demo_url: str) -> None:
    # Straight to the app (no HTTP parser in between to refuse the pair): the body limit must not trust the length.
    sid = await console.connected_http(demo_url)
    limit = console.settings.max_request_body_bytes
    chunks = [b"tool=echo&arg.text=", b"x" * (limit // 2), b"x" * (limit // 2 + 10)]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        body = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    path = f"/sessions/{sid}/tools/call"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 50000), "server": (console.public_host, 80),
             "headers": [(b"host", console.public_host.encode()),
                         (b"authorization", console.http.headers["authorization"].encode()),
                         (b"accept", b"application/json"), (b"content-type", b"application/x-www-form-urlencoded"),
                         (b"content-length", b"24"), (b"transfer-encoding", b"chunked")]}
    await console.app(scope, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 413, sent[:1]


# -- The action POSTs keep every check any request passes: who may operate, masking for link holders, the
# Host/Origin guard, body limits, and paths that only look like an action's.

SECRET = "sk-live-Hq8r5t2p"


def _calls(console: Console, sid: str) -> int:
    session = console.manager.get(sid)
    assert session is not None
    session.timeline.flush()
    return sum(1 for e in session.state.entries.values() if e.get("method") == "tools/call")


async def test_an_action_post_without_a_token_or_with_a_viewer_link_sends_nothing(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    stranger = await share_tab(console, await create_link(console, sid, "viewer"))
    stranger.cookies.clear()
    refused = await stranger.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                  headers=JSON)
    assert refused.status_code == 401, refused.text
    viewer = await share_tab(console, await create_link(console, sid, "viewer"))
    for path in ("tools/call", "resources/read", "prompts/get"):
        answer = await viewer.post(f"/sessions/{sid}/{path}", data={"tool": "echo", "arg.text": "x"}, headers=JSON)
        assert answer.status_code == 403, (path, answer.text)
        assert "read-only" in answer.json()["error"]
    assert _calls(console, sid) == 0


async def test_a_revoked_operator_link_sends_nothing_and_says_the_link_was_revoked(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    link = await create_link(console, sid, "operator")
    tab = await share_tab(console, link)
    ok = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"}, headers=JSON)
    assert ok.status_code == 200 and ok.json()["ok"], ok.text
    revoked = await console.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
    assert revoked.status_code in (200, 303), revoked.text
    again = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"}, headers=JSON)
    assert again.status_code == 401 and "revoked" in again.json()["error"], again.text
    assert _calls(console, sid) == 1


async def test_an_operator_link_on_another_session_cannot_call_this_one(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    mine = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    other = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    tab = await share_tab(console, await create_link(console, other, "operator"))
    answer = await tab.post(f"/sessions/{mine}/tools/call", data={"tool": "echo", "arg.text": "x"}, headers=JSON)
    assert answer.status_code == 403, answer.text
    assert _calls(console, mine) == 0


async def test_an_operator_links_answer_masks_the_owners_typed_secret_json_and_html(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    as_json = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": SECRET}, headers=JSON)
    assert as_json.status_code == 200 and SECRET not in as_json.text, as_json.text
    card = await tab.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": SECRET})
    assert card.status_code == 200 and SECRET not in card.text
    owner = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": SECRET},
                                    headers=JSON)
    # Masked once, when recorded, for everyone; the owner's entry detail has the exact frames.
    assert SECRET not in owner.text and "••••••" in owner.text
    detail = await console.http.get(f"/sessions/{sid}/entries/{owner.json()['key']}.json")
    assert SECRET in detail.text and '"masked_in_log": true' in detail.text.replace('":true', '": true')
    console.http.cookies.set("mcp_console_presenter", "1")
    presenting = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": SECRET},
                                         headers=JSON)
    assert presenting.status_code == 200 and SECRET not in presenting.text


async def test_a_cross_site_or_foreign_host_action_post_is_refused_before_it_sends(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    form = {"tool": "echo", "arg.text": "x"}
    cross = await console.http.post(f"/sessions/{sid}/tools/call", data=form,
                                    headers={**JSON, "Origin": "https://evil.example"})
    assert cross.status_code == 403, cross.text
    foreign = await console.http.post(f"/sessions/{sid}/tools/call", data=form,
                                      headers={**JSON, "Host": "evil.example"})
    assert foreign.status_code in (400, 403, 421), foreign.text
    assert _calls(console, sid) == 0


async def test_paths_that_only_look_like_an_action_send_nothing(console: Console, demo_url: str) -> None:
    # (`%2F` is not among them: ASGI's path is decoded, so it is the action itself, for the router and the front
    # door alike.)
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    form = {"tool": "echo", "arg.text": "x"}
    for path in (f"/sessions/{sid}/tools/call/", f"//sessions/{sid}/tools/call",
                 f"/sessions/{sid}/x/tools/call", "/static/tools/call", "/sessions/import/tools/call",
                 f"/sessions/{sid}/entries/c1x1/tools/call"):
        answer = await console.http.post(path, data=form, headers=JSON, follow_redirects=False)
        assert answer.status_code in (307, 404, 405), (path, answer.status_code, answer.text)
        assert "Traceback" not in answer.text
    wrong = await console.http.get(f"/sessions/{sid}/tools/call", headers=JSON)
    assert wrong.status_code in (404, 405), wrong.text
    assert _calls(console, sid) == 0


async def test_an_oversized_malformed_or_multipart_action_body_is_answered_plainly(
        console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")
    huge = await console.http.post(f"/sessions/{sid}/tools/call", content=b"tool=echo&arg.text=" + b"x" * 20_000_000,
                                   headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"})
    assert huge.status_code == 413, huge.status_code

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the limit must count what arrives
        for _ in range(40):
            yield b"x" * 500_000

    streamed = await console.http.post(f"/sessions/{sid}/tools/call", content=chunks(),
                                       headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"})
    assert streamed.status_code == 413, streamed.status_code
    broken = await console.http.post(f"/sessions/{sid}/tools/call", content=b"--nope\r\n\r\n",
                                     headers={**JSON, "Content-Type": "multipart/form-data; boundary=zz"})
    assert broken.status_code in (200, 400), broken.text
    assert "Traceback" not in broken.text
    multipart = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "m"},
                                        files={"f": ("a.txt", b"ignored")}, headers=JSON)
    assert multipart.status_code == 200 and multipart.json()["ok"], multipart.text
    bad_json = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                       data={"tool": "echo", "mode": "json", "json": '{"text": NaN}'})
    assert bad_json.status_code == 200 and bad_json.json()["sent"] is False, bad_json.text
    latin = await console.http.post(f"/sessions/{sid}/tools/call", content=b"tool=echo&arg.text=%FF%FE\xff",
                                    headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"})
    assert latin.status_code == 200, latin.text


async def test_a_refusal_quoting_the_sessions_status_masks_the_owners_typed_secret_for_a_link(
        console: Console, share_tab: ShareTab) -> None:
    s = await console.connect(kind="http", url=f"http://127.0.0.1:{free_port()}/mcp?key={SECRET}", headers="")
    assert s["status"] == "failed", s
    tab = await share_tab(console, await create_link(console, s["id"], "operator"))
    for headers in (JSON, {"HX-Request": "true"}, {"Accept": "text/html"}):
        answer = await tab.post(f"/sessions/{s['id']}/tools/call", data={"tool": "echo"}, headers=headers)
        assert answer.status_code == 409, answer.text
        assert SECRET not in answer.text, (headers, answer.text)


async def test_a_crash_inside_an_action_is_a_plain_500_and_the_calls_events_are_still_recorded(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = await console.connected_http(demo_url, f"X-Api-Key: {SECRET}")

    def broken(_op: object) -> dict[str, object]:
        raise RuntimeError(f"internal detail {SECRET}")

    monkeypatch.setattr(actions, "operation_json", broken)
    plain = httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app, raise_app_exceptions=False),
                              base_url=console.base, headers=console.http.headers, cookies=console.http.cookies)
    async with plain:
        for headers in (JSON, {"HX-Request": "true"}):
            answer = await plain.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                      headers=headers)
            assert answer.status_code == 500, answer.text
            assert "Traceback" not in answer.text and SECRET not in answer.text and "RuntimeError" not in answer.text
    assert _calls(console, sid) == 2
    session = console.manager.get(sid)
    assert session is not None
    assert all(e.get("status") == "complete" for e in session.state.entries.values()
               if e.get("method") == "tools/call")


# -- The action POSTs against a console served by uvicorn, with raw requests httpx would not send: odd Host
# values, hostile targets' answers.

DEADLINE_S = 15.0


async def _raw(served: Served, request: bytes) -> bytes:
    """One request on its own connection (it says Connection: close); everything the console answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(DEADLINE_S):
            return await reader.read(-1)
    finally:
        writer.close()


def _post(path: str, host: bytes, *extra: bytes) -> bytes:
    head = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: " + host, *extra,
            b"Accept: application/json", b"Content-Type: application/x-www-form-urlencoded",
            b"Content-Length: " + str(len(FORM)).encode(), b"Connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + FORM


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


async def test_a_host_whose_port_is_a_digit_but_not_a_number_is_answered_not_a_crash(
        make_console: Callable[..., Console], serve: Serve, demo_url: str) -> None:
    # "²" (latin-1 \xb2) is a digit to str.isdigit() and not a number to int(): the guard's port reading raised,
    # a 500 for the action POSTs, a page or a websocket alike, from a header any client may send.
    console = make_console()
    served = await serve(console)
    sid = await console.connected_http(demo_url)
    path = f"/sessions/{sid}/tools/call"
    for port in (b"\xb2", b"\xb9\xb2", b"1\xb3"):
        host = console.public_host.encode() + b":" + port
        bearer = await _raw(served, _post(path, host, f"Authorization: Bearer {TOKEN}".encode()))
        assert _status(bearer) == 200, bearer[:300]
        # Its port is not the console's: not the public host, so the owner's cookie is not honoured there.
        cookie = await _raw(served, _post(path, host, f"Cookie: {OWNER_COOKIE}={TOKEN}".encode()))
        assert _status(cookie) == 401, cookie[:300]
        page = await _raw(served, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nAuthorization: Bearer " +
                          TOKEN.encode() + b"\r\nConnection: close\r\n\r\n")
        assert _status(page) < 500, page[:300]


class _CookieTarget:
    """A 2026-07-28 target on a raw socket: its tools/call answer sets a cookie when asked to; it notes every
    Cookie header it receives."""

    def __init__(self) -> None:
        self.cookies_seen: list[str | None] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"

    async def __aenter__(self) -> _CookieTarget:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
                fields = {k.lower(): v for k, v in fields.items()}
                message = json.loads(await reader.readexactly(int(fields.get("content-length", "0"))) or b"{}")
                method, extra = message.get("method"), ""
                result: dict[str, object] = {"resultType": "complete"}
                if method == "server/discover":
                    result |= {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "ttlMs": 0,
                               "cacheScope": "public",
                               "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "cookies", "version": "0"}}}
                elif method == "tools/list":
                    result["tools"] = [{"name": "echo", "inputSchema": {"type": "object"}}]
                elif method == "tools/call":
                    self.cookies_seen.append(fields.get("cookie"))
                    if message["params"]["arguments"].get("set"):
                        extra = "Set-Cookie: sid=A-secret; Path=/\r\n"
                    result["content"] = [{"type": "text", "text": "ok"}]
                body = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
                writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _call(console: Console, sid: str, arguments: dict[str, object]) -> list[list[str]]:
    """tools/call with these arguments; the headers its request was recorded with."""
    answer = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                     data={"tool": "echo", "mode": "json", "json": json.dumps(arguments)})
    assert answer.status_code == 200 and answer.json()["ok"], answer.text
    entry = await console.entry(sid, answer.json()["key"])
    out = [w["headers"] for w in entry["wire"] if w["direction"] == "out"]
    assert len(out) == 1, entry["wire"]
    headers: list[list[str]] = out[0]
    return headers


async def test_a_cookie_one_target_sets_goes_back_to_it_and_never_to_another_sessions_target(
        console: Console) -> None:
    # Cookies ignore ports: kept by the client every session shares, A's cookie went to B's server (another
    # session's target on the same host, maybe a hostile one) and into B's recording, for B's link holders to read.
    async with _CookieTarget() as a, _CookieTarget() as b:
        sa = (await console.connect(kind="http", url=a.url, headers=""))["id"]
        sb = (await console.connect(kind="http", url=b.url, headers=""))["id"]
        await _call(console, sa, {"set": True})
        again = await _call(console, sa, {})
        assert ["Cookie", "sid=A-secret"] in again  # the target's own cookie still goes back to it, on the record
        elsewhere = await _call(console, sb, {})
        assert not any(name.lower() == "cookie" for name, _ in elsewhere), elsewhere
        assert a.cookies_seen == [None, "sid=A-secret"]
        assert b.cookies_seen == [None]


# Raw requests for the differential below: {sid}, {ip} (127.0.0.1:port), {pub} (public name:port), {name} (the
# public name alone), {op} and {view} (link cookies) are filled in per console. Each says Connection: close.
AUTH = f"Authorization: Bearer {TOKEN}"
ODD_REQUESTS: list[tuple[str, str, list[str]]] = [
    ("/sessions/{sid}/tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", []),
    ("/sessions/{sid}/tools/call", "{ip}", ["Authorization: Bearer not-the-token-at-all", AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", [AUTH, "Authorization: Bearer not-the-token-at-all"]),
    ("/sessions/{sid}/tools/call", "{ip}", [f"Cookie: {OWNER_COOKIE}={TOKEN}"]),
    ("/sessions/{sid}/tools/call", "{pub}", [f"Cookie: {OWNER_COOKIE}={TOKEN}"]),
    ("/sessions/{sid}/tools/call", "{name}", [f"Cookie: {OWNER_COOKIE}={TOKEN}"]),
    ("/sessions/{sid}/tools/call", "{name}:1", [f"Cookie: {OWNER_COOKIE}={TOKEN}"]),
    ("/sessions/{sid}/tools/call", "{pub}", ["Cookie: a=b", f"Cookie: {OWNER_COOKIE}={TOKEN}"]),
    ("/sessions/{sid}/tools/call", "{pub}", [f"Cookie: {OWNER_COOKIE}={TOKEN}; mcp_console_presenter=1"]),
    ("/sessions/{sid}/tools/call", "{pub}", ["Cookie: mcp_console_link={op}"]),
    ("/sessions/{sid}/tools/call", "{pub}", ["Cookie: mcp_console_link={view}"]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Cookie: mcp_console_link={op}"]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Host: evil.example", AUTH]),
    ("/sessions/{sid}/tools/call", "evil.example", [AUTH]),
    ("/sessions/{sid}/tools/call", "evil@127.0.0.1", [AUTH]),
    ("/sessions/{sid}/tools/call", "", [AUTH]),
    ("http://evil.example/sessions/{sid}/tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Origin: http://evil.example", AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Origin: null", AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Origin: http://127.0.0.1:1", AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", ["Sec-Fetch-Site: cross-site", AUTH]),
    ("/sessions/{sid}/tools/call", "{ip}", ["X-MCP-Console-Principal: owner"]),
    ("//sessions/{sid}/tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}/tools/call/", "{ip}", [AUTH]),
    ("/sessions/{sid}/tools/call;x", "{ip}", [AUTH]),
    ("/sessions/{sid};x/tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}/x/../tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}%2Ftools%2Fcall", "{ip}", [AUTH]),
    ("/sessions/nope/tools/call", "{ip}", [AUTH]),
    ("/sessions/import/tools/call", "{ip}", [AUTH]),
    ("/sessions/{sid}/resources/read", "{ip}", [AUTH]),
]


def _answer_meaning(answer: bytes, ctx: dict[str, str]) -> tuple[int, str]:
    """The status, and what the body says: a call's text (ids and timings differ between consoles) or the text."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status = _status(head)
    try:
        data = json.loads(body)
    except ValueError:
        return status, body.decode("latin-1")
    if isinstance(data, dict) and "operation" in data:
        return status, json.dumps([data.get("ok"), data.get("result"), data.get("errors")])
    text = body.decode("latin-1")
    for name, value in ctx.items():
        text = text.replace(value, "{" + name + "}")
    return status, text


async def test_odd_raw_requests_get_a_plain_answer_never_a_crash(
        make_console: Callable[..., Console], serve: Serve, demo_url: str) -> None:
    console = make_console()
    served = await serve(console)
    sid = await console.connected_http(demo_url)
    links = [await console.http.post(f"/sessions/{sid}/links", data={"role": role}, headers=JSON)
             for role in ("operator", "viewer")]
    op, view = (str(link.json()["url"]).rsplit("/s/", 1)[1] for link in links)
    ctx = {"sid": sid, "ip": served.host, "pub": served.public, "name": console.public_host, "op": op,
           "view": view}
    seen = []
    for target, host, extra in ODD_REQUESTS:
        filled = [line.format(**ctx) for line in (target, host, *extra)]
        request = _post(filled[0], filled[1].encode("latin-1"), *(x.encode("latin-1") for x in filled[2:]))
        seen.append(_answer_meaning(await _raw(served, request), ctx))
    statuses = {status for status, _ in seen}
    assert 500 not in statuses, seen
    assert statuses >= {200, 400, 401, 403, 404, 307}, seen


def _echo_target(tiny_http: TinyHttp, call: Callable[[dict[str, Any]], tuple[int, str, bytes]]
                 ) -> Callable[[Seen], tuple[int, str, bytes]]:
    """A tiny target with one tool, `echo`, whose tools/call answers as `call` says."""

    def handler(seen: Seen) -> tuple[int, str, bytes]:
        message = seen.json()
        method = message.get("method")
        if method == "server/discover":
            found = tiny_http.discover(capabilities={"tools": {}})
            return 200, "application/json", tiny_http.result(message["id"], found)
        if method == "tools/list":
            return 200, "application/json", tiny_http.result(message["id"], {
                "resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        if method == "tools/call":
            return call(message)
        return 202, "application/json", b""

    return handler


async def test_a_last_sse_event_past_the_message_bound_at_the_streams_end_is_a_violation_not_a_500(
        make_console: Callable[..., Console], tiny_http: TinyHttp) -> None:
    # Each line is within the bound and the last event has no blank line: it is only complete, and too large, when
    # the stream ends. That check raised outside the reader's handling: the call was a 500 with nothing recorded.
    console = make_console(max_message_bytes=10_000)

    def call(_message: dict[str, Any]) -> tuple[int, str, bytes]:
        return 200, "text/event-stream", b"data: " + b"x" * 6000 + b"\ndata: " + b"y" * 6000

    server = tiny_http.start(_echo_target(tiny_http, call))
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected", s
    answer = await console.http.post(f"/sessions/{s['id']}/tools/call", headers=JSON,
                                     data={"tool": "echo", "mode": "json", "json": "{}"})
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["ok"] is False and reply["error"]["type"] == "ProtocolViolation", reply
    assert "10000" in reply["error"]["message"]
    entry = await console.entry(s["id"], reply["key"])
    assert any("10000" in (w.get("problem") or w.get("note") or "") for w in entry["wire"]), entry["wire"]


@pytest.mark.parametrize("charset", ["base64", "rot13", "idna", "undefined", "uu_codec"])
async def test_a_charset_that_is_no_text_encoding_is_read_as_utf8_not_a_500(
        console: Console, tiny_http: TinyHttp, charset: str) -> None:
    # httpx takes any codec Python knows as an answer's encoding; these are not text encodings (or refuse the
    # "replace" error handler), so every decode raised (LookupError, TypeError, AssertionError, UnicodeError).
    def call(message: dict[str, Any]) -> tuple[int, str, bytes]:
        body = tiny_http.result(message["id"], {"resultType": "complete",
                                                "content": [{"type": "text", "text": "read"}]})
        if message["params"]["arguments"].get("sse"):
            return 200, f"text/event-stream; charset={charset}", b"data: " + body + b"\n\n"
        return 200, f"application/json; charset={charset}", body

    handler = _echo_target(tiny_http, call)

    server = tiny_http.start(handler)
    s = await console.connect(kind="http", url=server.url, headers="")
    assert s["status"] == "connected", s
    for sse in (False, True):
        answer = await console.http.post(f"/sessions/{s['id']}/tools/call", headers=JSON,
                                         data={"tool": "echo", "mode": "json", "json": json.dumps({"sse": sse})})
        assert answer.status_code == 200, answer.text
        reply = answer.json()
        assert reply["ok"] and reply["result"]["content"] == [{"type": "text", "text": "read"}], reply
