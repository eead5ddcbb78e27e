"""Link holders see no secret value of the target: header and query values, command arguments, environment, cwd.

The owner types secrets into the target (an `X-Custom-Auth` header, an `?auth=` query value, `env KEY=…`
before a command): credential-shaped names are secret by default, and the owner marks any other value secret
on the connect form (`secret_offered` / `secret`). Every way a viewer can look is checked: the page, its JSON
twin, entry details, websocket pushes, the session file, HAR and cURL. The event log records the masks, so the
owner's page shows them too; the owner's own export with secrets has the values.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import connect

from tests.hostile.fixtures import hostile_argv
from tests.integration.conftest import (
    LINK_COOKIE,
    WS_DEADLINE_S,
    create_link,
    eventually,
    link_token,
    ws_collect,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from tests.integration.conftest import Console, Served

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]
    Serve = Callable[..., Awaitable[Served]]

ENV_SECRETS = ("sk-live-abc123", "hunter22")
HEADER_SECRET = "s3cr3t-value"
QUERY_SECRET = "qv-secret-1"
# The connect form's choice: `--key=…` is secret by default, the bare argument after it only when marked.
MARK_BOTH_ARGUMENTS: dict[str, str | list[str]] = {"secret_offered": ["arg:1", "arg:2"], "secret": ["arg:1", "arg:2"]}


def leaks(text: str, secrets: tuple[str, ...]) -> list[str]:
    return [s for s in secrets if s in text]


async def viewer_fragments(served: Served, session_id: str, cookie: str, wanted: str) -> list[str]:
    """What a socket is replayed from the start, up to a fragment mentioning `wanted`."""
    ws = await connect(served.ws_url(session_id), open_timeout=WS_DEADLINE_S,
                       additional_headers=served.headers(cookie), **served.via)
    try:
        await ws.send(json.dumps({"last_seq": 0}))
        return await ws_collect(ws, lambda fs: any(wanted in f for f in fs), f"a fragment with {wanted!r}")
    finally:
        await ws.close()


async def stdio_session(console: Console) -> tuple[str, dict[str, Any]]:
    command = " ".join(["env", f"OPENAI_KEY={ENV_SECRETS[0]}", f"MY_TOKEN={ENV_SECRETS[1]}",
                        *hostile_argv("basic")])
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"]), s


async def test_a_viewer_of_a_stdio_session_sees_no_environment_value_the_owner_typed(
        console: Console, share_tab: ShareTab, serve: Serve) -> None:
    sid, owner_json = await stdio_session(console)
    assert leaks(owner_json["target"], ENV_SECRETS) == []  # the owner sees which values are secret: their masks
    assert owner_json["secret"] == ["env:MY_TOKEN", "env:OPENAI_KEY"]
    owner_page = await console.http.get(f"/sessions/{sid}")
    assert leaks(owner_page.text, ENV_SECRETS) == [] and "variable OPENAI_KEY" in owner_page.text
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)

    page = await tab.get(f"/sessions/{sid}")
    data = await tab.get(f"/sessions/{sid}.json")
    assert page.status_code == 200 and data.status_code == 200
    assert "started pid" in page.text  # the notice is there, its values are not
    assert leaks(page.text, ENV_SECRETS) == [] and leaks(data.text, ENV_SECRETS) == []
    assert "OPENAI_KEY=••••••" in data.json()["target"]
    for entry in data.json()["timeline"]:
        detail = await tab.get(f"/sessions/{sid}/entries/{entry['key']}.json")
        html = await tab.get(f"/sessions/{sid}/entries/{entry['key']}")
        assert leaks(detail.text + html.text, ENV_SECRETS) == [], entry["key"]
    export = await tab.get(f"/sessions/{sid}/export.json")
    assert export.status_code == 200 and leaks(export.text, ENV_SECRETS) == []

    served = await serve(console)
    shown = await viewer_fragments(served, sid, f"{LINK_COOKIE}={link_token(link)}", "started pid")
    assert leaks("".join(shown), ENV_SECRETS) == []
    owner_shown = await viewer_fragments(served, sid, served.headers()["Cookie"], "started pid")
    assert leaks("".join(owner_shown), ENV_SECRETS) == []  # the note was made from the masked command


async def test_a_viewer_of_an_http_session_sees_no_header_or_query_value_the_owner_typed(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab, serve: Serve) -> None:
    secrets = (HEADER_SECRET, QUERY_SECRET)
    url = hostile_http("basic") + f"?auth={QUERY_SECRET}"
    s = await console.connect(kind="http", url=url, headers=f"X-Custom-Auth: {HEADER_SECRET}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    discover = next(e for e in s["timeline"] if e.get("method") == "server/discover")
    owner_detail = await console.entry(sid, discover["key"])
    assert leaks(s["target"], secrets) == []  # the target shows its masks
    assert leaks(json.dumps(owner_detail), secrets) == [HEADER_SECRET]  # the owner's entry shows what was sent
    assert s["secret"] == ["header:X-Custom-Auth", "query:auth"]
    owner_har = await console.http.get(f"/sessions/{sid}/export.har", params={"secrets": "1"})
    assert leaks(owner_har.text, secrets) == list(secrets)  # the owner's deliberate opt-in still works
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)

    looks = [await tab.get(path) for path in (
        f"/sessions/{sid}", f"/sessions/{sid}.json", f"/sessions/{sid}/entries/{discover['key']}.json",
        f"/sessions/{sid}/entries/{discover['key']}", f"/sessions/{sid}/export.json",
        f"/sessions/{sid}/export.har", f"/sessions/{sid}/export.har?secrets=1",
        f"/sessions/{sid}/entries/{discover['key']}/curl")]
    for response in looks:
        assert response.status_code == 200, response.url
        assert leaks(response.text, secrets) == [], response.url
    assert "x-custom-auth" in looks[2].text.lower()  # the header is there, masked
    assert "auth=" in looks[7].text and "x-custom-auth: ••••••" in looks[7].text.lower()

    served = await serve(console)
    shown = await viewer_fragments(served, sid, f"{LINK_COOKIE}={link_token(link)}", "server/discover")
    assert leaks("".join(shown), secrets) == []


async def test_an_operator_and_the_owner_get_the_same_masked_push_of_an_echoed_secret(
        console: Console, share_tab: ShareTab, serve: Serve) -> None:
    sid, _ = await stdio_session(console)
    link = await create_link(console, sid, "operator")
    await share_tab(console, link)
    served = await serve(console)
    owner = await connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S, additional_headers=served.headers(),
                          **served.via)
    operator = await connect(served.ws_url(sid), open_timeout=WS_DEADLINE_S,
                             additional_headers=served.headers(f"{LINK_COOKIE}={link_token(link)}"), **served.via)
    try:
        seq = (await console.session(sid))["seq"]
        for ws in (owner, operator):
            await ws.send(json.dumps({"last_seq": seq}))
        # Both sockets open: the next event is rendered for each kind. Echoing a typed value makes it show.
        await eventually(lambda: _subscribed(console, sid, 2), what="both sockets to subscribe")
        reply = await console.call_tool(sid, "echo", text=f"echo {ENV_SECRETS[1]}")
        assert reply["status"] == "complete", reply
        # Masked once, when recorded: the owner's push is the same text (its exact frame is in the entry detail).
        got_owner = await ws_collect(owner, lambda fs: any("echo ••••••" in f for f in fs), "the owner's echo")
        got_operator = await ws_collect(operator, lambda fs: any("echo ••••••" in f for f in fs),
                                        "the operator's masked echo")
    finally:
        await owner.close()
        await operator.close()
    assert got_owner and leaks("".join(got_owner + got_operator), ENV_SECRETS) == []


async def _subscribed(console: Console, sid: str, n: int) -> bool:
    return bool(console.manager.hub.subscribers(sid) >= n)


async def test_a_failed_start_shows_the_viewer_a_status_message_without_the_typed_command(
        console: Console, share_tab: ShareTab) -> None:
    sid = await console.create(kind="stdio", command=f"/nonexistent/mcp-server --key={ENV_SECRETS[0]} {ENV_SECRETS[1]}",
                               **MARK_BOTH_ARGUMENTS)
    s = await console.settled(sid)
    assert s["status"] == "failed" and leaks(s["status_message"], ENV_SECRETS) == []
    assert "/nonexistent/mcp-server --key=•••••• ••••••" in s["status_message"]
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    data = (await tab.get(f"/sessions/{sid}.json")).json()
    page = await tab.get(f"/sessions/{sid}")
    assert data["status"] == "failed" and "could not start" in data["status_message"]
    assert leaks(data["status_message"] + page.text, ENV_SECRETS) == []


async def test_presenter_mode_masks_the_owners_own_page(console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("basic") + f"?auth={QUERY_SECRET}",
                              headers=f"X-Custom-Auth: {HEADER_SECRET}")
    sid = str(s["id"])
    console.http.cookies.set("mcp_console_presenter", "1")  # what POST /presenter sets
    page = await console.http.get(f"/sessions/{sid}")
    data = await console.http.get(f"/sessions/{sid}.json")
    assert "presenter" in page.text
    assert leaks(page.text + data.text, (HEADER_SECRET, QUERY_SECRET)) == []


async def test_an_operator_acting_on_a_failed_session_reads_its_error_without_the_typed_command(
        console: Console, share_tab: ShareTab) -> None:
    sid = await console.create(kind="stdio", command=f"/nonexistent/mcp-server --key={ENV_SECRETS[0]} {ENV_SECRETS[1]}",
                               **MARK_BOTH_ARGUMENTS)
    assert (await console.settled(sid))["status"] == "failed"
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    refused = await tab.post(f"/sessions/{sid}/tools/call", data={"name": "echo"},
                             headers={"Accept": "application/json"})
    assert refused.status_code == 409 and "could not start" in refused.text
    assert leaks(refused.text, ENV_SECRETS) == []


async def test_a_typed_credential_the_target_echoes_with_other_writers_json_escapes_is_masked_for_a_viewer(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab, serve: Serve) -> None:
    """The raw frame keeps the target's own JSON text. A PHP server writes "/" as \\/ and a Go one "&" as \\u0026,
    so a typed `sk/live/…` came back as `sk\\/live\\/…`: not the spelling the mask looked for, and every view a
    viewer has of the frame (its detail, its body, the session file, the HAR) showed the credential."""
    token, api = "sk/live/AAAABBBBCCCC", "tok&en=ZZZZ-YYYY.XXXX"
    s = await console.connect(kind="http", url=hostile_http("text"),
                              headers=f"Authorization: Bearer {token}\nX-Api-Key: {api}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    said = await console.call_tool(sid, "echo_escaped", text=f"Bearer {token} and {api}")
    key = said["key"]
    escaped = (r"sk\/live\/AAAABBBBCCCC", r"tok\u0026en\u003DZZZZ\u002DYYYY\u002EXXXX")
    owner_wire = (await console.http.get(f"/sessions/{sid}/entries/{key}.json")).text
    assert [e for e in escaped if e.replace("\\", "\\\\") in owner_wire] == list(escaped)  # the owner sees the wire
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    looks = [await tab.get(path) for path in (
        f"/sessions/{sid}/entries/{key}.json", f"/sessions/{sid}/entries/{key}", f"/sessions/{sid}/entries/{key}/body",
        f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har")]
    for response in looks:
        assert response.status_code == 200, response.url
        body = response.text
        assert not [e for e in escaped if e in body or e.replace("\\", "\\\\") in body], (response.url, body[:2000])
        assert "AAAABBBBCCCC" not in body and "XXXX" not in body, response.url
    served = await serve(console)
    shown = "".join(await viewer_fragments(served, sid, f"{LINK_COOKIE}={link_token(link)}", key))
    assert "AAAABBBBCCCC" not in shown and "XXXX" not in shown


async def test_a_typed_credential_echoed_as_json_inside_json_or_inside_an_http_errors_body_is_masked_for_a_viewer(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    """JSON text inside a JSON string (a PHP tool returning json_encode'd data as its text) doubles an escape's
    backslash once more ("sk\\\\\\/live"), and an HTTP error's message quotes its body with Python's repr, which
    doubles it too ("sk\\\\/live"): the mask looked for one level only, and a viewer read the whole credential."""
    token = "sk/live/AAAABBBBCCCC"
    s = await console.connect(kind="http", url=hostile_http("text"), headers=f"Authorization: Bearer {token}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    nested = await console.call_tool(sid, "echo_nested", text=f"Bearer {token}")
    refused = await console.call_tool(sid, "refuse_escaped", text=token)
    owner = (await console.http.get(f"/sessions/{sid}.json")).text + \
        (await console.http.get(f"/sessions/{sid}/entries/{nested['key']}.json")).text
    assert "AAAABBBBCCCC" in owner  # the owner's entry detail has the exact frames
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    paths = [f"/sessions/{sid}.json", f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har"]
    for key in (nested["key"], refused["key"]):
        paths += [f"/sessions/{sid}/entries/{key}.json", f"/sessions/{sid}/entries/{key}",
                  f"/sessions/{sid}/entries/{key}/body"]
    for path in paths:
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert "AAAABBBBCCCC" not in response.text, (path, response.text[:2000])


async def test_a_typed_credential_where_the_display_cuts_a_log_line_or_a_progress_message_is_left_out_whole(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    """Log data is kept to 8,192 characters and a progress message to 2,000; the mask looks for whole values, so a
    credential the cut went through kept its head unmasked for link holders. The cut now stops before it."""
    token = "sk/live/AAAABBBBCCCC"
    s = await console.connect(kind="http", url=hostile_http("text"), headers=f"Authorization: Bearer {token}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    said = await console.call_tool(sid, "say_at_the_cut", text=token)
    owner = json.dumps((await console.http.get(f"/sessions/{sid}.json")).json(), ensure_ascii=False)
    assert "A" * 8182 + " … [" in owner and "P" * 1990 + " … [" in owner  # cut before the credential, not in it
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}", f"/sessions/{sid}/entries/{said['key']}.json",
                 f"/sessions/{sid}/entries/{said['key']}/body", f"/sessions/{sid}/export.json"):
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert "sk/live" not in response.text and "sk\\/live" not in response.text, path


async def test_a_typed_credential_whose_head_is_left_before_the_mark_of_a_cut_is_masked_for_a_viewer(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    """The protocol core shortens a server's text for a message and ends it with "…": an HTTP error's body (200
    characters), a stdio line that is not JSON (120), a stderr line past its bound (2,000 bytes). A credential the
    cut went through left its head there, which no mask of whole values finds."""
    token = "sk-live-AAAABBBBCCCCDDDD"
    s = await console.connect(kind="http", url=hostile_http("text"), headers=f"Authorization: Bearer {token}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    await console.call_tool(sid, "refuse_escaped", text="A" * 170 + " " + token)
    owner = json.dumps((await console.http.get(f"/sessions/{sid}.json")).json(), ensure_ascii=False)
    assert "sk-live-AAAA" not in owner and "••••••…" in owner  # the head before the cut is masked when recorded
    link = await create_link(console, sid, "viewer")
    tab = await share_tab(console, link)
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}", f"/sessions/{sid}/export.json"):
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert "sk-live-AAAA" not in response.text, path
    for client in (console.http, tab):  # the index holds what the log holds: the mask
        assert (await client.get(f"/sessions/{sid}.json", params={"q": "aaa sk-live-aaaa"})).json()["matches"] == 0


async def test_a_typed_env_value_a_stdio_server_writes_where_its_stderr_line_is_cut_is_masked_for_a_viewer(
        console: Console, share_tab: ShareTab) -> None:
    token = "sk-live-EEEEFFFFGGGGHHHH"
    command = " ".join(["env", f"API_KEY={token}", *hostile_argv("text")])
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    await console.call_tool(sid, "say_on_stderr", text=token)

    async def cut_line_recorded() -> bool:
        return "more bytes of this line not kept" in (await console.http.get(f"/sessions/{sid}.json")).text

    await eventually(cut_line_recorded, what="the cut stderr line")
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}", f"/sessions/{sid}/export.json"):
        response = await tab.get(path)
        assert response.status_code == 200, path
        assert "sk-live-EEEE" not in response.text, path
