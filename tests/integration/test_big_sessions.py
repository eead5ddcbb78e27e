"""Big sessions: a filter searches the whole session from the store, and session files stream in chunks.

The console runs with a tiny timeline window (and tiny chunks) so that "older than the window" and "more
than one chunk" happen with a few real calls to the demo server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from app.console import session_stream
from app.console import store as store_module
from tests.integration.conftest import JSON, Console

WINDOW = 4
HTML = {"Accept": "text/html"}


async def demo_session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url)
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def refresh(console: Console, sid: str, times: int) -> None:
    """Entries that are not tools/call: each refresh lists tools, prompts and resources again."""
    for _ in range(times):
        assert (await console.http.post(f"/sessions/{sid}/refresh", headers=JSON)).status_code == 200


async def test_a_filter_finds_a_call_that_left_the_window_long_ago_and_counts_it(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    await console.call_tool(sid, "echo", text="needle")
    await refresh(console, sid, 3)
    window = (await console.session(sid))["timeline"]
    assert all(e.get("method") != "tools/call" for e in window), "the call must be older than the window"

    found = (await console.http.get(f"/sessions/{sid}.json", params={"method": "tools/call"})).json()
    assert [e["method"] for e in found["timeline"]] == ["tools/call"]
    assert found["matches"] == 1 and found["older_before"] == 0
    key = found["timeline"][0]["key"]
    assert found["timeline"][0]["status"] == "complete" and found["timeline"][0]["name"] == "echo"
    ok = (await console.http.get(f"/sessions/{sid}.json", params={"method": "tools/call", "status": "ok"})).json()
    assert [e["key"] for e in ok["timeline"]] == [key]  # the final status, from the store
    by_key = (await console.http.get(f"/sessions/{sid}.json", params={"q": key.upper()})).json()
    assert [e["key"] for e in by_key["timeline"]] == [key]  # text search ignores case, as in the page

    page = await console.http.get(f"/sessions/{sid}", params={"method": "tools/call"}, headers=HTML)
    assert re.search(r'id="filter-matches">1 match in the whole session<', page.text), page.text[:2000]
    assert f'id="e-{key}"' in page.text


async def test_filtered_older_pages_walk_through_every_match_of_the_session(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    for i in range(WINDOW + 3):
        await console.call_tool(sid, "echo", text=f"call {i}")
        await refresh(console, sid, 1)
    first = (await console.http.get(f"/sessions/{sid}.json", params={"method": "tools/call"})).json()
    assert first["matches"] == WINDOW + 3 and len(first["timeline"]) == WINDOW and first["older_before"] > 0
    seen = [e["key"] for e in first["timeline"]]
    before = first["older_before"]
    while before:
        more = await console.http.get(f"/sessions/{sid}/timeline",
                                      params={"before": before, "method": "tools/call", "limit": 2}, headers=JSON)
        page = more.json()
        assert page["timeline"] and all(e["method"] == "tools/call" for e in page["timeline"])
        seen += [e["key"] for e in page["timeline"]]
        before = page["older_before"]
    assert len(seen) == len(set(seen)) == WINDOW + 3
    html = await console.http.get(f"/sessions/{sid}/timeline", params={"before": first["older_before"],
                                                                        "method": "tools/call", "limit": 2})
    assert "method=tools%2Fcall" in html.text  # the next "older" button keeps the filter


def timeline_summary(session: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(e["key"], e["kind"], e.get("method"), e.get("status")) for e in session["timeline"]]


async def test_export_reads_the_store_in_chunks_and_import_rebuilds_a_session_larger_than_window_and_chunk(
        make_console: Callable[..., Console], demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    for i in range(WINDOW + 2):
        await console.call_tool(sid, "echo", text=f"call {i}")
    store = console.manager.store
    console.manager.get(sid).timeline.flush()  # read straight from the store: its last frames first
    total = store.count(sid)
    chunk = 7
    assert total > 3 * chunk
    monkeypatch.setattr(store_module, "CHUNK", chunk)
    monkeypatch.setattr(session_stream, "READ_BYTES", 97)  # the import parses across many small reads
    monkeypatch.setattr(session_stream, "CHUNK", 5)  # the reader hands the import 5 events at a time
    reads: list[tuple[int, int]] = []
    real_rows, real_flush = store.event_rows, store.flush
    flushes = [0]

    def counted_rows(session_id: str, *, after_seq: int = 0, limit: int = 1000) -> Any:
        reads.append((after_seq, limit))
        return real_rows(session_id, after_seq=after_seq, limit=limit)

    def counted_flush() -> None:
        flushes[0] += 1
        real_flush()
    monkeypatch.setattr(store, "event_rows", counted_rows)

    exported = await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})
    assert exported.status_code == 200
    data = json.loads(exported.content)  # one JSON document, as before
    assert [e["seq"] for e in data["events"]] == list(range(1, total + 1))
    assert all(limit == chunk for _, limit in reads) and len(reads) == total // chunk + 1
    assert [after for after, _ in reads] == [i * chunk for i in range(len(reads))]  # keyset pages, in order

    monkeypatch.setattr(store, "flush", counted_flush)
    imported = await console.http.post("/sessions/import", content=exported.content,
                                       headers={**JSON, "Content-Type": "application/json"})
    assert imported.status_code == 200, imported.text
    assert flushes[0] >= total // 5  # the import hands the store a few events at a time, never the whole file
    copy = imported.json()["id"]
    original, again = await console.session(sid), await console.session(copy)
    assert timeline_summary(again) == timeline_summary(original)
    assert console.manager.get(copy).timeline.entry_count == console.manager.get(sid).timeline.entry_count
    calls = (await console.http.get(f"/sessions/{copy}.json", params={"method": "tools/call"})).json()
    assert calls["matches"] == WINDOW + 2
    lists = (await console.http.get(f"/sessions/{copy}.json", params={"method": "tools/list"})).json()
    oldest = lists["timeline"][-1]["key"]  # listed when the session connected: long out of the window
    assert oldest not in {e["key"] for e in again["timeline"]}
    frames = (await console.http.get(f"/sessions/{copy}/entries/{oldest}.json")).json()["wire"]
    assert frames and frames == (await console.http.get(f"/sessions/{sid}/entries/{oldest}.json")).json()["wire"]


async def test_a_session_file_written_all_at_once_and_pretty_printed_still_imports(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    await console.call_tool(sid, "echo", text="old format")
    data = (await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})).json()
    events = data.pop("events")
    reordered = {"events": events, **data}  # events before the header, indented: still the same document
    body = json.dumps(reordered, indent=2, ensure_ascii=False).encode()
    imported = await console.http.post("/sessions/import", content=body,
                                       headers={**JSON, "Content-Type": "application/json"})
    assert imported.status_code == 200, imported.text
    again = await console.session(imported.json()["id"])
    assert timeline_summary(again) == timeline_summary(await console.session(sid))


async def test_a_truncated_session_file_is_refused_and_leaves_no_session(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    exported = await console.http.get(f"/sessions/{sid}/export.json")
    before = set(console.manager.sessions)
    for body in (exported.content[: len(exported.content) // 2], exported.content[:-1],
                 exported.content.replace(b'"events": [', b'"events": [1, ', 1)):
        response = await console.http.post("/sessions/import", content=body,
                                           headers={**JSON, "Content-Type": "application/json"})
        assert response.status_code == 400, response.text
        assert response.json()["error"].startswith("Cannot import")
    assert set(console.manager.sessions) == before
    assert [row["id"] for row in console.manager.store.list_sessions()] == [sid]
    stored = {e.session_id for e in console.manager.store.events(sid)}
    assert stored == {sid}


async def test_the_har_export_reads_the_store_in_chunks_and_lists_the_same_exchanges_in_start_order(
        make_console: Callable[..., Console], demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    for i in range(3):
        await console.call_tool(sid, "echo", text=f"call {i}")
    whole = (await console.http.get(f"/sessions/{sid}/export.har")).json()
    store = console.manager.store
    reads: list[int] = []
    real_events = store.events

    def counted(session_id: str, **kw: Any) -> Any:
        reads.append(kw.get("limit") or 0)
        return real_events(session_id, **kw)
    monkeypatch.setattr(store_module, "CHUNK", 3)
    monkeypatch.setattr(store, "events", counted)
    chunked = (await console.http.get(f"/sessions/{sid}/export.har")).json()
    assert len(reads) > 5 and set(reads) == {3}  # many small reads, never the whole session
    started = [e["_mcp"]["exchange"] for e in chunked["log"]["entries"]]
    assert started == [e["_mcp"]["exchange"] for e in whole["log"]["entries"]] and len(started) > 6
    assert chunked["log"]["entries"] == whole["log"]["entries"]


async def test_a_download_is_gzipped_by_the_export_itself_only_for_a_client_that_takes_gzip(
        make_console: Callable[..., Console], demo_url: str) -> None:
    console = make_console(timeline_window=WINDOW)
    sid = await demo_session(console, demo_url)
    for path in (f"/sessions/{sid}/export.json", f"/sessions/{sid}/export.har"):
        plain = await console.http.get(path, headers={"Accept-Encoding": "identity"})
        packed = await console.http.get(path, headers={"Accept-Encoding": "gzip"})
        assert "content-encoding" not in plain.headers
        assert packed.headers["content-encoding"] == "gzip" and "accept-encoding" in packed.headers["vary"].lower()
        assert json.loads(packed.content).keys() == json.loads(plain.content).keys()  # httpx decoded it
