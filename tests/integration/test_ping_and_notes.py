"""The server panel's Ping, in both eras against real server processes, and what an empty list says when the session
is not connected (never "Connecting…" once it failed)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import JSON, REPO_ROOT, eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console

HTML = {"Accept": "text/html"}
LEGACY_OUTPUT = f"{sys.executable} -m tests.hostile.legacy_output"


def exchanges(session: dict[str, Any], method: str) -> list[dict[str, Any]]:
    return [e for e in session["timeline"] if e.get("kind") == "exchange" and e.get("method") == method]


async def test_ping_on_a_2026_session_sends_server_discover_and_shows_the_round_trip_on_the_timeline(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url)
    before = len(exchanges(s, "server/discover"))
    reply = (await console.http.post(f"/sessions/{s['id']}/ping", headers=JSON)).json()
    assert reply["method"] == "server/discover" and reply["ok"] is True and reply["duration_ms"] > 0
    after = exchanges(await console.session(s["id"]), "server/discover")
    assert len(after) == before + 1 and after[0]["key"] == reply["key"] and after[0]["status"] == "ok"
    card = (await console.http.post(f"/sessions/{s['id']}/ping")).text
    assert "server/discover</span> answered in" in card and 'href="#e-' in card


async def test_ping_on_a_2025_session_sends_ping(console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, era="legacy")
    reply = (await console.http.post(f"/sessions/{s['id']}/ping", headers=JSON)).json()
    assert reply["method"] == "ping" and reply["ok"] is True and reply["result"] == {}
    pings = exchanges(await console.session(s["id"]), "ping")
    assert [p["key"] for p in pings] == [reply["key"]]


async def test_ping_on_a_failed_session_is_refused_says_why_and_sends_nothing(console: Console) -> None:
    s = await console.connect(kind="stdio", command=f"{sys.executable} -c 'raise SystemExit(3)'", cwd=str(REPO_ROOT))
    assert s["status"] == "failed"
    probes = len(exchanges(s, "server/discover"))  # the connect's own
    answer = await console.http.post(f"/sessions/{s['id']}/ping", headers=JSON)
    assert answer.status_code == 409
    card = await console.http.post(f"/sessions/{s['id']}/ping")  # a tab: told beside the button
    assert card.status_code == 200 and "not sent</span> <bdi class=\"sv\">The session is failed" in card.text
    data = await console.session(s["id"])
    assert not exchanges(data, "ping") and len(exchanges(data, "server/discover")) == probes


async def test_a_failed_session_says_so_under_every_list_never_connecting(console: Console) -> None:
    s = await console.connect(kind="stdio", command=f"{sys.executable} -c 'raise SystemExit(3)'", cwd=str(REPO_ROOT))
    assert s["status"] == "failed"
    page = (await console.http.get(f"/sessions/{s['id']}", headers=HTML)).text
    lists = page.split('<div id="lists">')[1]
    assert "Connecting…" not in lists
    for what in ("tools", "resources", "prompts"):
        assert f'id="{what}-note">No {what}: the session is failed (see above).' in lists, what


async def test_a_connected_server_without_a_capability_says_it_offers_none(console: Console, hostile_http: Any) -> None:
    s = await console.connect(kind="http", url=hostile_http("basic"))
    page = (await console.http.get(f"/sessions/{s['id']}", headers=HTML)).text
    assert 'id="prompts-note">The server offers no prompts (its capabilities have no <code>prompts</code>).' in page


async def test_a_2025_session_checks_tool_results_against_their_output_schema(console: Console) -> None:
    s = await console.connect(kind="stdio", command=LEGACY_OUTPUT, cwd=str(REPO_ROOT), era="legacy")
    assert s["status"] == "connected", s["status_message"]
    fine = await console.call_tool(s["id"], "fine")
    bad = await console.call_tool(s["id"], "count")
    assert bad["output_validation"]["valid"] is False

    async def findings() -> list[dict[str, Any]] | None:
        entry = next(e for e in (await console.session(s["id"]))["timeline"] if e.get("op") == bad["operation"]["op"])
        return entry["findings"] if entry.get("finding_count") else None

    found = await eventually(findings, what="the outputSchema finding on a 2025-11-25 call")
    assert [f["rule"] for f in found] == ["tools.structured-content"]
    assert found[0]["spec_url"].startswith("https://modelcontextprotocol.io/specification/2025-11-25/")
    data = await console.session(s["id"])
    assert data["findings"] == {"tools.structured-content": 1}  # no 2026-07-28 rule on a 2025-11-25 session
    fine_entry = next(e for e in data["timeline"] if e.get("op") == fine["operation"]["op"])
    assert not fine_entry.get("finding_count")
