"""The session page as a workbench, over real HTTP to the demo server: a timeline filter kept in the URL
(page and JSON twin), dead ends that offer the next step, plain words for revoked links and read-only copies."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.integration.conftest import JSON, Console, create_link, link_token

HTML = {"Accept": "text/html"}


async def demo_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


def methods(timeline: list[dict[str, Any]]) -> set[str]:
    return {str(e.get("method")) for e in timeline}


async def test_timeline_filter_by_method_in_the_url_filters_the_json_twin_and_the_page(
        console: Console, demo_url: str) -> None:
    sid = await demo_session(console, demo_url)
    await console.call_tool(sid, "echo", text="needle-7f3")
    everything = await console.session(sid)
    assert {"server/discover", "tools/list", "tools/call"} <= methods(everything["timeline"])

    only_calls = (await console.http.get(f"/sessions/{sid}.json", params={"method": "tools/call"})).json()
    assert only_calls["filter"] == {"method": "tools/call", "status": "", "q": ""}
    assert only_calls["timeline"] and methods(only_calls["timeline"]) == {"tools/call"}
    assert only_calls["window_entries"] == len(everything["timeline"])

    page = await console.http.get(f"/sessions/{sid}", params={"method": "tools/call"}, headers=HTML)
    shown = set(re.findall(r'<li id="e-[^"]+" class="entry[^"]*"[^>]*data-method="([^"]+)"', page.text))
    assert shown == {"tools/call"}, shown
    assert 'data-f-method="tools/call"' in page.text  # live entries are filtered by the same rule in the page
    assert '<option value="tools/call" selected>' in page.text


async def test_timeline_filter_by_text_and_status_combines_and_an_unmatched_text_shows_nothing(
        console: Console, demo_url: str) -> None:
    sid = await demo_session(console, demo_url)
    await console.call_tool(sid, "echo", text="x")
    ok = (await console.http.get(f"/sessions/{sid}.json", params={"status": "ok", "q": "tools/list"})).json()
    assert ok["timeline"] and methods(ok["timeline"]) == {"tools/list"}
    none = (await console.http.get(f"/sessions/{sid}.json", params={"q": "no-such-text-anywhere"})).json()
    assert none["timeline"] == []
    failed = (await console.http.get(f"/sessions/{sid}.json", params={"status": "error"})).json()
    assert all(e.get("status") not in ("ok", "complete") for e in failed["timeline"])


async def test_a_failed_connect_says_what_failed_and_offers_reconnect_and_the_target_to_edit(
        console: Console) -> None:
    sid = await console.create(kind="http", url="http://127.0.0.1:9/mcp")  # discard port: nothing listens
    s = await console.settled(sid)
    assert s["status"] == "failed"
    page = (await console.http.get(f"/sessions/{sid}", headers=HTML)).text
    assert 'aria-label="Connection problem"' in page
    assert "Could not connect" in page and "Not connected yet" not in page
    assert f'action="/sessions/{sid}/reconnect"' in page
    assert 'id="retarget-url" name="url" type="url" required value="http://127.0.0.1:9/mcp"' in page


async def test_the_home_page_labels_an_imported_copy_and_delete_asks_first(console: Console, demo_url: str) -> None:
    sid = await demo_session(console, demo_url)
    exported = await console.http.get(f"/sessions/{sid}/export.json")
    imported = await console.http.post("/sessions/import", content=exported.content,
                                       headers={**JSON, "Content-Type": "application/json"})
    copy_id = imported.json()["id"]
    listing = {row["id"]: row for row in (await console.http.get("/sessions.json")).json()["sessions"]}
    assert listing[copy_id]["read_only"] is True and listing[sid]["read_only"] is False

    home = (await console.http.get("/", headers=HTML)).text
    row = re.search(rf'<tr data-session="{copy_id}".*?</tr>', home, re.S)
    assert row is not None and "imported copy · read-only" in row.group(0)
    live_row = re.search(rf'<tr data-session="{sid}".*?</tr>', home, re.S)
    assert live_row is not None and "imported" not in live_row.group(0)
    assert '<details class="confirm-delete">' in live_row.group(0)  # the delete button sits behind a question

    copy_page = (await console.http.get(f"/sessions/{copy_id}", headers=HTML)).text
    assert "Refresh lists" not in copy_page and 'class="session read-only"' in copy_page


async def test_a_revoked_link_says_it_was_revoked_on_the_page_and_on_the_landing_url(
        console: Console, demo_url: str, share_tab: Any) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "viewer")
    tab: httpx.AsyncClient = await share_tab(console, link)
    assert (await console.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)).status_code == 200

    page = await tab.get(f"/sessions/{sid}", headers=HTML)
    assert page.status_code == 401
    assert "This share link was revoked" in page.text and "launch URL" not in page.text
    landing = await tab.get(f"/s/{link_token(link)}", headers=HTML)
    assert landing.status_code == 404 and "This share link was revoked" in landing.text


async def test_an_expired_link_says_it_expired(console: Console, demo_url: str, share_tab: Any) -> None:
    sid = await demo_session(console, demo_url)
    link = await create_link(console, sid, "operator", ttl_minutes=60)
    tab: httpx.AsyncClient = await share_tab(console, link)
    found = console.manager.links.get(link["id"])
    found.expires = found.created  # as if its time had passed: no sleeping for it
    page = await tab.get(f"/sessions/{sid}", headers={**HTML, "Cookie": f"mcp_console_link={link_token(link)}"})
    assert page.status_code == 401
    assert "This share link has expired" in page.text


async def test_the_role_banner_says_what_an_operator_link_allows(console: Console, demo_url: str,
                                                               share_tab: Any) -> None:
    sid = await demo_session(console, demo_url)
    tab: httpx.AsyncClient = await share_tab(console, await create_link(console, sid, "operator"))
    page = (await tab.get(f"/sessions/{sid}", headers=HTML)).text
    banner = re.search(r'<p class="alert info role-banner".*?</p>', page, re.S)
    assert banner is not None
    text = " ".join(re.sub(r"<[^>]+>", "", banner.group(0)).split())
    assert "an operator link" in text and "a operator" not in text
    assert "call tools" in text and "cannot start processes" in text
