"""One path for a call: what a script or a tab reads right after a call is the whole of it, with no flush to ask
for, and the answer to a POST is sent as it is (compressing it costs more than it saves on loopback).

Wall-clock figures are `bench/latency.py`'s, never a test's."""

from __future__ import annotations

import asyncio

from app.console.events import TimelineEvent
from tests.integration.conftest import JSON, Console


async def test_a_calls_json_answer_goes_uncompressed_while_the_session_page_twin_is_gzipped(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    big = "x" * 4000  # past the 2 KB below which nothing is compressed anyway
    answer = await console.http.post(f"/sessions/{s['id']}/tools/call", data={"tool": "echo", "arg.text": big},
                                     headers={"Accept": "application/json", "Accept-Encoding": "gzip"})
    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == big
    assert "content-encoding" not in answer.headers
    twin = await console.http.get(f"/sessions/{s['id']}.json", headers={"Accept-Encoding": "gzip"})
    assert twin.status_code == 200 and twin.headers.get("content-encoding") == "gzip"


async def test_a_calls_entry_is_folded_stored_and_published_before_its_answer_reaches_the_caller(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    session = console.manager.get(s["id"])
    assert session is not None
    published: list[TimelineEvent] = []
    publish = session.timeline._publish
    session.timeline._publish = lambda e: (published.append(e), publish(e))[1]  # type: ignore[method-assign]
    reply = await console.call_tool(s["id"], "echo", text="at once")
    assert reply["ok"] and reply["status"] == "complete"
    # Nothing waits behind the answer: the fold has the entry, the tabs were sent it, the store is told.
    key = reply["key"]
    assert session.state.rounds[key]["op"] == reply["operation"]["op"] and session.state.rounds[key]["status"] == "ok"
    assert any(e.kind == "exchange_finished" and e.record.key == key for e in published)
    op = session.state.operations[reply["operation"]["op"]]
    assert op.status == "complete" and op.to_json(with_final=False) == reply["operation"]
    # ... and a direct read of the store (an export, another process) finds its frames without a flush asked for.
    kinds = [e.kind for e in console.manager.store.events(s["id"], exchange=key)]
    assert "exchange_finished" in kinds


async def test_the_next_read_after_a_call_finds_its_frames_in_the_order_they_crossed_the_wire(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    replies = await asyncio.gather(*(console.call_tool(s["id"], "echo", text=f"n{i}") for i in range(5)))
    for reply in replies:
        entry = await console.http.get(f"/sessions/{s['id']}/entries/{reply['key']}.json", headers=JSON)
        assert entry.status_code == 200, entry.text
        wire = entry.json()["wire"]
        assert [w["direction"] for w in wire if w["direction"] in ("out", "in")] == ["out", "in"]
        sent = next(w for w in wire if w["direction"] == "out")
        assert ("Mcp-Method", "tools/call") in [tuple(h) for h in sent["headers"]]
