"""Workspaces through the console's routes (the console in-process, the demo server a real process): created from
sessions, renamed, a session added and removed, the combined timeline merged newest first and filtered by server,
a deleted session leaving its workspace, and what a link holder may not see."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.integration.conftest import JSON, Console

pytestmark = pytest.mark.processes
FORM = {"Content-Type": "application/x-www-form-urlencoded", **JSON}


async def _workspace(console: Console, name: str, sessions: list[str]) -> str:
    body = urlencode([("name", name), *(("session", s) for s in sessions)])
    made = await console.http.post("/workspaces", content=body, headers=FORM)
    assert made.status_code == 200, made.text
    assert made.json()["sessions"] == sessions
    return str(made.json()["id"])


async def test_the_combined_timeline_merges_the_sessions_newest_first_and_filters_by_server(
        console: Console, demo_url: str) -> None:
    a = await console.connected_http(demo_url)
    b = await console.connected_http(demo_url)
    ws = await _workspace(console, "both", [a, b])
    await console.call_tool(a, "echo", text="from a")
    await console.call_tool(b, "echo", text="from b")
    page = (await console.http.get(f"/workspaces/{ws}", headers=JSON)).json()
    assert [p["id"] for p in page["panes"]] == [a, b]
    rows = page["combined"]
    assert {r["session"] for r in rows} == {a, b}
    assert [r["at0"] for r in rows] == sorted((r["at0"] for r in rows), reverse=True)
    assert rows[0]["session"] == b and rows[0]["method"] == "tools/call"
    only_a = (await console.http.get(f"/workspaces/{ws}?server={a}", headers=JSON)).json()["combined"]
    assert only_a and {r["session"] for r in only_a} == {a}
    fragment = await console.http.get(f"/workspaces/{ws}/timeline?server={a}")
    assert fragment.status_code == 200
    assert f'data-session="{b}"' not in fragment.text and f'data-session="{a}"' in fragment.text


async def test_a_workspace_is_renamed_changed_and_loses_a_deleted_session(console: Console, demo_url: str) -> None:
    a = await console.connected_http(demo_url)
    b = await console.connected_http(demo_url)
    ws = await _workspace(console, "mine", [a])
    changed = await console.http.post(f"/workspaces/{ws}", content=urlencode({"name": "renamed", "add": b}),
                                      headers=FORM)
    assert changed.json() == {"id": ws, "name": "renamed", "sessions": [a, b]}
    removed = await console.http.post(f"/workspaces/{ws}", content=urlencode({"remove": a}), headers=FORM)
    assert removed.json()["sessions"] == [b]
    await console.http.post(f"/sessions/{b}/delete", headers=JSON)
    assert console.manager.workspaces.get(ws).sessions == []
    home = await console.http.get("/")
    assert "renamed" in home.text
    gone = await console.http.post(f"/workspaces/{ws}/delete", headers=JSON)
    assert gone.status_code == 200 and console.manager.workspaces.get(ws) is None


async def test_a_link_holder_cannot_open_a_workspace(console: Console, demo_url: str) -> None:
    a = await console.connected_http(demo_url)
    ws = await _workspace(console, "private", [a])
    denied = await console.http.get(f"/workspaces/{ws}", headers={"Authorization": ""})
    assert denied.status_code in (401, 403)


async def test_a_session_made_from_an_edited_target_takes_its_place_in_the_workspace(
        console: Console, demo_url: str) -> None:
    a = await console.connected_http(demo_url)
    b = await console.connected_http(demo_url)
    ws = await _workspace(console, "mine", [a, b])
    made = await console.http.post("/sessions", content=urlencode({"kind": "http", "url": demo_url, "headers": "",
                                                                    "from_session": a}), headers=FORM)
    assert made.status_code == 200, made.text
    new = made.json()["id"]
    assert console.manager.workspaces.get(ws).sessions == [new, b]
