"""Hostile text on the session page: escaped, bidi and zero-width characters shown, never obeyed."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import connect

from tests.hostile.tools_text import BIDI_NAME, IMG, RLO, SCRIPT
from tests.integration.conftest import WS_DEADLINE_S, ws_collect

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import Console

SERVER_NAME = f"<b>x</b>{RLO}evil"


async def test_bidi_and_markup_in_tool_names_titles_results_and_server_info_are_shown_not_obeyed(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("text", name=SERVER_NAME))
    assert s["status"] == "connected", s["status_message"]
    assert BIDI_NAME in {t["name"] for t in s["lists"]["tools"]}
    page = (await console.http.get(f"/sessions/{s['id']}")).text
    reply = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "markup"})
    result = reply.text

    for html in (page, result):
        assert IMG not in html and SCRIPT not in html and "<b>x</b>" not in html
    # Outside attributes and scripts, no bidi override survives as a character: each is shown as ⟨U+202E⟩.
    text_only = re.sub(r'"[^"]*"', "", page)
    assert RLO not in text_only and RLO not in re.sub(r'"[^"]*"', "", result)
    assert "invoice<span class=\"invisible-char\" title=\"RIGHT-TO-LEFT OVERRIDE\">⟨U+202E⟩</span>exe.pdf" in page
    assert "&lt;b&gt;x&lt;/b&gt;<span class=\"invisible-char\"" in page  # serverInfo name in the heading
    assert "⟨U+202E⟩" in result and "⟨U+200B⟩" in result  # the resource link's URI


async def test_a_result_holding_a_lone_surrogate_is_answered_shown_and_recorded_not_a_server_error(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("text"))
    sid = s["id"]
    as_json = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "lone_surrogate"},
                                      headers={"Accept": "application/json"})
    assert as_json.status_code == 200, as_json.text
    reply = as_json.json()
    assert reply["ok"] and reply["result"]["content"][0]["text"] == "half a pair: \ud800 end"
    card = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "lone_surrogate"})
    assert card.status_code == 200, card.text
    assert "half a pair:" in card.text
    entry = await console.http.get(f"/sessions/{sid}/entries/{reply['key']}.json")
    assert entry.status_code == 200, entry.text
    raws = [w["raw"] for w in entry.json()["wire"] if w["direction"] == "in"]
    assert any("\\ud800" in raw for raw in raws), raws  # the frame as it came, byte-exact
    for path in (f"/sessions/{sid}", f"/sessions/{sid}.json", f"/sessions/{sid}/entries/{reply['key']}",
                 f"/sessions/{sid}/entries/{reply['key']}/body", f"/sessions/{sid}/export.json",
                 f"/sessions/{sid}/export.har"):
        shown = await console.http.get(path)
        assert shown.status_code == 200, (path, shown.status_code, shown.text[:300])


async def test_a_tab_watching_a_call_whose_result_holds_a_lone_surrogate_keeps_its_feed(
        console: Console, hostile_http: Callable[..., str], serve: Callable[..., Any]) -> None:
    served = await serve(console)
    s = await console.connect(kind="http", url=hostile_http("text"))
    sid = s["id"]
    ws = await connect(served.ws_url(sid), additional_headers=served.headers(), open_timeout=WS_DEADLINE_S,
                       **served.via)
    try:
        await ws.send(json.dumps({"last_seq": (await console.session(sid))["seq"]}))
        first = await console.call_tool(sid, "lone_surrogate")
        after = await console.call_tool(sid, "markup")
        assert first["ok"] and after["ok"]
        await ws_collect(ws, lambda frames: any(after["key"] in f and "complete" in f for f in frames),
                         "the entry of the call after the lone surrogate")
    finally:
        await ws.close()


async def test_a_result_holding_nan_and_infinity_is_answered_not_a_server_error(
        console: Console, hostile_http: Callable[..., str]) -> None:
    s = await console.connect(kind="http", url=hostile_http("text"))
    sid = s["id"]
    as_json = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "not_a_number"},
                                      headers={"Accept": "application/json"})
    assert as_json.status_code == 200, as_json.text
    assert as_json.json()["ok"]
    assert as_json.json()["result"]["structuredContent"] == {"nan": None, "inf": None}  # as JSON.stringify does
    card = await console.http.post(f"/sessions/{sid}/tools/call", data={"tool": "not_a_number"})
    assert card.status_code == 200, card.text
    for path in (f"/sessions/{sid}.json", f"/sessions/{sid}/entries/{as_json.json()['key']}.json",
                 f"/sessions/{sid}/export.json"):
        shown = await console.http.get(path)
        assert shown.status_code == 200, (path, shown.status_code, shown.text[:300])


async def test_a_tool_named_with_a_lone_surrogate_leaves_the_page_whole_opens_its_form_and_is_called_by_that_name(
        console: Console, hostile_http: Callable[..., str]) -> None:
    from tests.hostile.tools_text import HALF_NAME
    s = await console.connect(kind="http", url=hostile_http("text"))
    sid = s["id"]
    assert HALF_NAME in {t["name"] for t in s["lists"]["tools"]}
    page = await console.http.get(f"/sessions/{sid}")
    assert page.status_code == 200, page.text[:300]
    refreshed = await console.http.post(f"/sessions/{sid}/refresh")
    assert refreshed.status_code < 400, refreshed.text[:300]
    lazy = re.search(r'data-lazy="(/sessions/[^"]*/tools/form\?name=half[^"]*)"', page.text)
    assert lazy is not None
    form = await console.http.get(unescape(lazy.group(1)))
    assert form.status_code == 200 and "half" in form.text, form.text[:300]
    reply = await console.http.post(f"/sessions/{sid}/tools/call", headers={"Accept": "application/json"},
                                    data={"tool": "half\ufffdpair", "mode": "json", "json": "{}"})  # as a form sends it
    assert reply.status_code == 200 and reply.json()["ok"], reply.text
    assert reply.json()["result"]["content"][0]["text"] == "called by half a pair"
    entry = await console.http.get(f"/sessions/{sid}/entries/{reply.json()['key']}.json")
    (out,) = [w["raw"] for w in entry.json()["wire"] if w["direction"] == "out"]
    assert '"name":"half\\ud800pair"' in out  # the server's own escape, sent back as it came
