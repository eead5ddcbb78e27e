"""What a session page carries is flat in the number of calls: timeline entries are summary rows whose body is
fetched on open, the page renders `page_entries` of the window, and closed drawers are fetched when opened."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console


async def _calls(console: Console, demo_url: str, n: int) -> tuple[str, list[dict[str, object]]]:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = str(s["id"])
    replies = [await console.call_tool(sid, "echo", text=f"call-{i}") for i in range(n)]
    return sid, replies


async def test_a_timeline_entry_is_a_summary_row_and_its_rounds_and_frames_load_when_opened(
        console: Console, demo_url: str) -> None:
    sid, [reply] = await _calls(console, demo_url, 1)
    key = reply["operation"]["key"]  # type: ignore[index]
    page = (await console.http.get(f"/sessions/{sid}", headers={"Accept": "text/html"})).text
    row = re.search(rf'<li id="e-{key}".*?</li>', page, re.DOTALL)
    assert row, "the call's entry is on the page"
    assert f'data-lazy="/sessions/{sid}/entries/{key}/body"' in row.group(0)
    assert 'class="rounds"' not in row.group(0) and f"logs-entry-{key}" not in row.group(0)
    body = (await console.http.get(f"/sessions/{sid}/entries/{key}/body")).text
    assert 'class="rounds"' in body and f'id="logs-entry-{key}"' in body and "round 1" in body
    assert (await console.http.get(f"/sessions/{sid}/entries/nope/body")).status_code == 404


async def test_the_page_renders_page_entries_of_the_window_and_offers_the_rest_as_older(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(page_entries=3)
    sid, _ = await _calls(console, demo_url, 6)
    page = (await console.http.get(f"/sessions/{sid}", headers={"Accept": "text/html"})).text
    listed = re.search(r'<ol id="timeline-list"[^>]*>(.*?)</ol>\s*(<button id="older"[^>]*>)', page, re.DOTALL)
    assert listed, "the page offers older entries"
    assert listed.group(1).count('<li id="e-') == 3 and 'data-window="3"' in page
    before = int(re.search(r"before=(\d+)", listed.group(2)).group(1))  # type: ignore[union-attr]
    older = (await console.http.get(f"/sessions/{sid}/timeline?before={before}")).text
    assert older.count('<li id="e-') >= 3, "the entries not rendered come from the server on demand"
    assert len((await console.session(sid))["timeline"]) > 6, "the JSON twin keeps the whole window"


async def test_closed_drawers_are_not_in_the_page_and_load_when_opened(console: Console, demo_url: str) -> None:
    sid, _ = await _calls(console, demo_url, 0)
    page = (await console.http.get(f"/sessions/{sid}", headers={"Accept": "text/html"})).text
    assert 'id="client-settings"' not in page and 'id="links"' not in page
    assert 'id="client-settings"' in (await console.http.get(f"/sessions/{sid}/drawers/client-settings")).text
    assert 'id="links"' in (await console.http.get(f"/sessions/{sid}/drawers/share")).text


async def test_timeline_rows_and_closed_tools_carry_no_htmx_attributes_and_few_tags(
        console: Console, demo_url: str) -> None:
    # htmx hashes every attribute of an element it processes and Chromium keeps an Attr node for each: the rows a
    # page has many of load their bodies through data-lazy (one listener in console.js) instead.
    sid, _ = await _calls(console, demo_url, 3)
    page = (await console.http.get(f"/sessions/{sid}", headers={"Accept": "text/html"})).text
    rows = re.findall(r'<li id="e-[^"]*" class="entry[^"]*".*?</li>', page, re.DOTALL)
    assert len(rows) >= 3
    for row in rows:
        assert "hx-" not in row and "data-lazy=" in row, row
        assert row.count("<") - row.count("</") <= 16, row  # start tags, bdi included
        assert "> <" not in row.split("<summary>")[1], row  # no text node between the summary's flex items
    tools = re.search(r'<div id="group-tools".*?</details>\s*</div>', page, re.DOTALL)
    assert tools and "<form" not in tools.group(0) and "hx-" not in tools.group(0)
    echo = re.search(r'<details class="item"[^>]*data-tool="echo".*?</details>', tools.group(0), re.DOTALL)
    assert echo and f'data-lazy="/sessions/{sid}/tools/form?name=echo"' in echo.group(0)
    assert echo.group(0).count("<") - echo.group(0).count("</") <= 12, echo.group(0)
