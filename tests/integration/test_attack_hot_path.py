"""Attack: the action POSTs that go straight to their endpoint (app/web/front_door.py) keep every check the
router gave them: who may operate, masking for link holders, the Host/Origin guard, body limits, and paths that
only look like an action's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from app.web import actions
from tests.integration.conftest import JSON, create_link, free_port

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from tests.integration.conftest import Console

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]

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
    assert SECRET in owner.text  # the owner sees it: the masking above was for the link
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
