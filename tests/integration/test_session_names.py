"""Sessions have names: the server's title by default, the owner's name once given; the home page tells two
sessions on one URL apart by them and shows each one's server, revision and transport."""

from __future__ import annotations

from collections.abc import Callable

from tests.integration.conftest import JSON, Console


async def test_a_session_is_named_after_its_server_until_the_owner_renames_it(
        console: Console, demo_url: str) -> None:
    first = await console.connected_http(demo_url)
    second = await console.connected_http(demo_url)
    s = await console.session(first)
    assert s["name"] == (s["server"]["info"].get("title") or s["server"]["info"]["name"])

    renamed = await console.http.post(f"/sessions/{second}/name", headers=JSON,
                                      data={"name": " Staging\u202e <b>demo</b> "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "Staging <b>demo</b>"  # a bidi override is not printable: dropped

    rows = {r["id"]: r for r in (await console.http.get("/sessions.json")).json()["sessions"]}
    assert rows[second]["name"] == "Staging <b>demo</b>" and rows[second]["named"]
    assert rows[first]["name"] != rows[second]["name"]
    assert rows[first]["server"].startswith("mcp-console-demo") and rows[first]["revision"] == "2026-07-28"
    home = (await console.http.get("/")).text
    assert "Staging &lt;b&gt;demo&lt;/b&gt;" in home and "<b>demo</b>" not in home
    page = (await console.http.get(f"/sessions/{first}")).text
    assert "Switch session (2)" in page and f'href="/sessions/{second}"' not in page  # fetched when opened
    rows = (await console.http.get(f"/sessions/switcher?current={first}")).text
    assert f'href="/sessions/{second}"' in rows and f'<a href="/sessions/{first}" aria-current="page">' in rows

    back = await console.http.post(f"/sessions/{second}/name", headers=JSON, data={"name": ""})
    assert back.json()["name"] == s["name"]


async def test_a_servers_very_long_title_is_capped_where_it_names_the_session(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("text", name="N" * 100_000))
    assert s["status"] == "connected", s["status_message"]
    assert len(s["name"]) == 120 and s["name"].endswith("…")
    home = (await console.http.get("/")).text
    assert len(home) < 50_000
