"""Secrets are values: what is secret is explicit, the log records masks, and the values live in one owner-only place.

A target's credential-shaped values are secret by default and the owner marks more or fewer on the connect form;
a value that is not secret (`?tenant=json`) is shown as typed to everyone, so it can no longer break a link
holder's page. The secret values go to the store's `secrets` table only: no event, index row or session row holds
them, and the owner's reconnect after a restart sends them again.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Awaitable, Callable

import httpx

from tests.hostile.fixtures import HostileUrl
from tests.hostile.tools_copy import SHELL_NAME
from tests.integration.conftest import JSON, Console, ConsoleRestarts, create_link

ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]

HEADER = "hv-7f3a9c-secret"
QUERY = "qv-5d1e8b-secret"


def _arrived_headers(result: dict[str, object]) -> list[str]:
    """The header lines that reached the target, as the hostile `copy` server's shell tool says them back."""
    said = json.loads(result["content"][0]["text"])  # type: ignore[index]
    return [h for h in base64.b64decode(said["head"]).decode("latin-1").split("\r\n")[1:] if h]


async def _sent_headers(console: Console, sid: str) -> list[str]:
    reply = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                    data={"tool": SHELL_NAME, "mode": "json", "json": "{}"})
    assert reply.status_code == 200 and reply.json()["ok"], reply.text
    return _arrived_headers(reply.json()["result"])


def _tables(path: str) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {name: repr(conn.execute(f'SELECT * FROM "{name}"').fetchall()) for name in names}


async def test_secret_values_are_stored_only_in_the_owner_only_table_and_sent_again_after_a_restart(
        restarts: ConsoleRestarts, hostile_http: Callable[..., HostileUrl]) -> None:
    console = restarts.first()
    s = await console.connect(kind="http", url=hostile_http("copy") + f"?api_key={QUERY}&tenant=json",
                              headers=f"Authorization: Bearer {HEADER}\nX-Tenant: acme")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    assert s["secret"] == ["header:Authorization", "query:api_key"]
    assert s["target"].endswith("?api_key=••••••&tenant=json · Authorization: Bearer •••••• · X-Tenant: acme")
    assert f"Authorization: Bearer {HEADER}" in await _sent_headers(console, sid)  # the wire has the value

    console.manager.store.flush()
    for table, rows in _tables(console.settings.db_path).items():
        found = [v for v in (HEADER, QUERY) if v in rows]
        assert found == ([HEADER, QUERY] if table == "secrets" else []), table

    again = await restarts.restart(console)
    await again.http.post(f"/sessions/{sid}/reconnect")
    s = await again.settled(sid)
    assert s["status"] == "connected", s["status_message"]
    assert f"Authorization: Bearer {HEADER}" in await _sent_headers(again, sid)
    again.manager.store.flush()
    assert all(HEADER not in rows for table, rows in _tables(again.settings.db_path).items() if table != "secrets")


async def test_the_owner_marks_a_value_secret_or_a_credential_shaped_one_not_on_the_connect_form(
        console: Console, demo_url: str) -> None:
    preview = await console.http.post("/connect/secrets", data={
        "form_id": "http", "kind": "http", "url": f"{demo_url}?token=t1&tenant=acme", "headers": "X-Team: blue"})
    assert preview.status_code == 200
    assert 'value="query:token" checked' in preview.text and 'value="query:tenant">' in preview.text
    assert 'value="header:X-Team">' in preview.text and "credential-shaped" in preview.text
    # The session head's form to change them lists what is typed there the same way (its own fieldset).
    again = await console.http.post("/connect/secrets", data={
        "form_id": "retarget", "kind": "http", "url": f"{demo_url}?tenant=acme", "headers": ""})
    assert 'id="secret-slots-retarget"' in again.text and 'value="query:tenant">' in again.text

    s = await console.connect(kind="http", url=f"{demo_url}?token=t1&tenant=acme", headers="X-Team: blue",
                              secret_offered=["query:token", "query:tenant", "header:X-Team"],
                              secret=["query:tenant", "header:X-Team"])
    assert s["status"] == "connected", s["status_message"]
    assert s["secret"] == ["header:X-Team", "query:tenant"]
    assert "?token=t1&tenant=••••••" in s["target"] and "X-Team: ••••••" in s["target"]


async def test_a_link_holders_page_works_when_an_ordinary_query_value_spells_the_pages_own_words(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    """`?tenant=json&x=sessions&y=stylesheet`: typed values that are not secret are not masked, so the viewer's
    JSON twin (`application/json`), websocket path (`/sessions/…`) and CSS (`stylesheet`) stay whole."""
    s = await console.connect(kind="http", url=f"{demo_url}?tenant=json&x=sessions&y=stylesheet",
                              headers=f"Authorization: Bearer {HEADER}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    page = await tab.get(f"/sessions/{sid}")
    assert page.status_code == 200 and HEADER not in page.text
    assert f'ws-connect="/sessions/{sid}/ws"' in page.text and '<link rel="stylesheet" href="/static/console.css">' \
        in page.text
    twin = await tab.get(f"/sessions/{sid}.json")
    assert twin.status_code == 200 and twin.headers["content-type"] == "application/json"
    # The only masks: the credential's, and the note naming it ("secret, shown as ••••••: header Authorization").
    assert "••••••" not in page.text.replace("Bearer ••••••", "").replace("shown as ••••••", "")
    exported = await tab.get(f"/sessions/{sid}/export.json")
    assert exported.status_code == 200 and HEADER not in exported.text
    imported = await console.http.post("/sessions/import", headers=JSON,
                                       files={"file": ("s.json", exported.content, "application/json")})
    assert imported.status_code == 200, imported.text


async def test_a_log_recorded_before_secrets_were_explicit_is_masked_in_place_on_the_first_restore(
        restarts: ConsoleRestarts, hostile_http: Callable[..., HostileUrl]) -> None:
    console = restarts.first()
    s = await console.connect(kind="http", url=hostile_http("copy"), headers=f"Authorization: Bearer {HEADER}")
    sid = str(s["id"])
    await console.close()
    restarts.open.remove(console)
    # As an older console wrote it: the target as typed, no secret list, no owner-only rows, an echo in a frame.
    with sqlite3.connect(console.settings.db_path) as conn:
        (data,) = conn.execute("SELECT data FROM events WHERE session_id=? AND kind='session_created'",
                               (sid,)).fetchone()
        created = json.loads(data)
        created["target"] = {k: v for k, v in created["target"].items() if k != "secret"} | {
            "headers": {"Authorization": f"Bearer {HEADER}"}}
        conn.execute("UPDATE events SET data=? WHERE session_id=? AND kind='session_created'",
                     (json.dumps(created), sid))
        (last,) = conn.execute("SELECT MAX(seq) FROM events WHERE session_id=?", (sid,)).fetchone()
        said = json.dumps({"jsonrpc": "2.0", "id": 9, "result": {"said": f"it was {HEADER}"}})
        echo = {"direction": "in", "raw": said,
                "frame_kind": "response", "problem": None, "exchange": "old1", "http_status": 200, "headers": None,
                "note": None, "wall": 1.0, "url": None}
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?)",
                     (sid, last + 1, "wire", "old1", 1.0, json.dumps(echo), 3))
        conn.execute("DELETE FROM secrets")
    again = restarts.after_crash(console)
    again.manager.store.flush()
    tables = _tables(again.settings.db_path)
    assert sorted(t for t, rows in tables.items() if HEADER in rows) == ["exact_events", "secrets"]
    s = await again.session(sid)
    assert s["secret"] == ["header:Authorization"] and HEADER not in json.dumps(s)
    await again.http.post(f"/sessions/{sid}/reconnect")
    assert (await again.settled(sid))["status"] == "connected"
    assert f"Authorization: Bearer {HEADER}" in await _sent_headers(again, sid)


async def test_the_owners_replay_curl_and_exports_with_secrets_send_and_hold_what_was_sent_not_the_mask(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    s = await console.connect(kind="http", url=hostile_http("copy"), headers=f"Authorization: Bearer {HEADER}")
    sid = str(s["id"])
    said = await console.http.post(f"/sessions/{sid}/tools/call", headers=JSON, data={
        "tool": SHELL_NAME, "mode": "json", "json": json.dumps({"v": f"say {HEADER}"})})
    key = said.json()["key"]
    assert HEADER not in said.text  # the card: recorded once, masked

    replayed = await console.http.post(f"/sessions/{sid}/replay", headers=JSON, data={"key": key})
    assert replayed.status_code == 200, replayed.text
    round_key = replayed.json()["rounds"][0]["key"]  # an operation: its round's exchange has the frames
    again = await console.http.get(f"/sessions/{sid}/entries/{round_key}.json")
    sent = next(w for w in again.json()["wire"] if w["direction"] == "out")
    assert f"say {HEADER}" in sent["raw"] and "\u2022" not in sent["raw"]  # the replay sent the value, not the mask

    curl = (await console.http.get(f"/sessions/{sid}/entries/{key}/curl")).text
    assert f"say {HEADER}" in curl and "\u2022" not in curl
    har = (await console.http.get(f"/sessions/{sid}/export.har", params={"secrets": "1"})).text
    assert f"say {HEADER}" in har
    full = (await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})).text
    assert f"say {HEADER}" in full
    for masked in ("/export.har", "/export.json"):
        assert HEADER not in (await console.http.get(f"/sessions/{sid}{masked}")).text


async def test_an_imported_file_without_a_creation_event_has_its_metadata_masked_too(console: Console) -> None:
    """A file of an older console (or one edited by hand) may lack `session_created`: its metadata row becomes the
    creation and discover events on import, and they are recorded masked, as the file's events are."""
    target = {"kind": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": f"Bearer {HEADER}"}}
    meta = {"target": target,
            "discover": {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": {"name": "s"},
                         "instructions": f"use Bearer {HEADER}"},
            "secrets_included": True}
    body = json.dumps({"format": "mcp-console-session", "version": 2, "exported_at": "2026-12-06T00:00:00Z",
                       "console_version": "0", "secrets": "included",
                       "session": {"id": "x", "created": 1796000000.0, "meta": meta}, "events": []})
    imported = await console.http.post("/sessions/import", headers=JSON,
                                       files={"file": ("s.json", body.encode(), "application/json")})
    assert imported.status_code == 200, imported.text
    sid = imported.json()["id"]
    s = await console.session(sid)
    assert HEADER not in json.dumps(s) and "masked on import" in json.dumps(s)
    console.manager.store.flush()
    assert all(HEADER not in rows for rows in _tables(console.settings.db_path).values())


async def test_an_operators_replay_answer_is_masked_and_presenter_mode_reaches_no_value_as_typed(
        console: Console, demo_url: str, share_tab: ShareTab) -> None:
    s = await console.connect(kind="http", url=demo_url, headers=f"Authorization: Bearer {HEADER}")
    sid = str(s["id"])
    done = await console.http.post(f"/sessions/{sid}/complete", headers=JSON, data={
        "ref_type": "ref/prompt", "ref": "greet", "argument": "name", "value": f"my token is {HEADER}"})
    assert done.status_code == 200 and HEADER not in done.text, done.text
    tab = await share_tab(console, await create_link(console, sid, "operator"))
    replayed = await tab.post(f"/sessions/{sid}/replay", headers=JSON, data={"key": done.json()["key"]})
    assert replayed.status_code == 200 and HEADER not in replayed.text, replayed.text
    console.http.cookies.set("mcp_console_presenter", "1")
    for path in (f"/sessions/{sid}/drawers/edit-target", f"/sessions/{sid}/export.json?secrets=1",
                 f"/sessions/{sid}/export.har?secrets=1"):
        response = await console.http.get(path)
        assert HEADER not in response.text, path


async def test_a_stdio_servers_path_argument_that_is_not_secret_is_shown_to_a_link_holder_as_typed(
        console: Console, share_tab: ShareTab) -> None:
    """A filesystem server's allowed directory was masked in everything the server said ("Allowed directories:
    ••••••"): a value the owner typed that is not secret is now shown as typed; the secret one beside it is not."""
    from tests.hostile.fixtures import hostile_argv

    allowed = "/tmp/allowed-dir-4c1e"
    command = " ".join(["env", f"ALLOWED_DIR={allowed}", f"API_KEY={QUERY}", *hostile_argv("basic"), "--name",
                        "files"])
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    assert s["secret"] == ["env:API_KEY"]
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    page = (await tab.get(f"/sessions/{sid}")).text + (await tab.get(f"/sessions/{sid}.json")).text
    assert f"ALLOWED_DIR={allowed}" in page and "API_KEY=••••••" in page and QUERY not in page
