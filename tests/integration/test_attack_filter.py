"""Attack: a link holder uses the whole-session filter as an oracle for values the owner typed.

The page masks every value the owner typed (environment, arguments, headers), but the filter searches the
entry index, which holds the entries' text as recorded. A viewer who asks `?q=<guess>` and reads how many
entries match learns, one character at a time, a value the page never shows. A masked caller's text query
must be answered as if the index held the masked text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.hostile.fixtures import hostile_argv
from tests.integration.conftest import create_link

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    import httpx

    from tests.integration.conftest import Console

    ShareTab = Callable[..., Awaitable[httpx.AsyncClient]]

SECRET = "sk-live-Zq9x7w"


async def _stdio_session(console: Console) -> str:
    command = " ".join(["env", f"OPENAI_KEY={SECRET}", *hostile_argv("basic")])
    s = await console.connect(kind="stdio", command=command)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def _matches(client: httpx.AsyncClient, sid: str, q: str) -> int:
    response = await client.get(f"/sessions/{sid}.json", params={"q": q})
    assert response.status_code == 200, response.text
    return int(response.json()["matches"])


async def test_a_viewer_cannot_learn_a_typed_secret_by_counting_filter_matches(
        console: Console, share_tab: ShareTab) -> None:
    sid = await _stdio_session(console)
    assert await _matches(console.http, sid, SECRET[:9]) >= 1  # the owner's filter still finds it
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert await _matches(tab, sid, "started pid") >= 1  # the viewer's filter works on what it may see
    for guess in (SECRET[:9], SECRET.lower(), "openai_key=sk"):
        assert await _matches(tab, sid, guess) == 0, guess


async def test_a_viewer_cannot_page_older_matches_of_a_typed_secret(
        console: Console, share_tab: ShareTab) -> None:
    sid = await _stdio_session(console)
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    response = await tab.get(f"/sessions/{sid}/timeline", params={"before": 10 ** 9, "q": SECRET[:9]},
                             headers={"accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["timeline"] == []


async def test_a_presenter_owner_tab_cannot_find_a_typed_secret_either(console: Console) -> None:
    sid = await _stdio_session(console)
    console.http.cookies.set("mcp_console_presenter", "1")
    response = await console.http.get(f"/sessions/{sid}.json", params={"q": SECRET[:9]})
    assert response.status_code == 200 and response.json()["matches"] == 0


async def test_a_viewer_cannot_count_matches_of_a_typed_secret_the_server_spelled_with_other_writers_escapes(
        console: Console, hostile_http: Callable[..., str], share_tab: ShareTab) -> None:
    # The page masked "sk\/live…" (PHP's escape, doubled again by the error message's repr of the body), but the
    # filter hid only the plain spellings: `?q=token sk\\/l`, then `…/li`, … counted one match per right guess.
    token = "sk/live/Zq9x7wAAAA"
    s = await console.connect(kind="http", url=hostile_http("text"), headers=f"Authorization: Bearer {token}")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    await console.call_tool(sid, "refuse_escaped", text=token)
    probe = "token sk\\\\/live\\\\/zq9"  # as the entry's message holds it (casefolded)
    assert await _matches(console.http, sid, probe) == 1  # the owner finds it
    tab = await share_tab(console, await create_link(console, sid, "viewer"))
    assert await _matches(tab, sid, "is not valid") == 1  # the viewer's filter works on what it may see
    for guess in (probe, probe + "x", "token sk", "sk\\\\/live", "zq9x7waaaa"):
        assert await _matches(tab, sid, guess) == 0, guess
    older = await tab.get(f"/sessions/{sid}/timeline", params={"before": 10 ** 9, "q": "token sk"},
                          headers={"accept": "application/json"})
    assert older.status_code == 200 and older.json()["timeline"] == []
