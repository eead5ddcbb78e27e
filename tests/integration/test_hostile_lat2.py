"""The lean HTTP/1.1 client through the whole console, against the hostile target's hand-framed answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.hostile.fixtures import HostileUrl
from tests.integration.conftest import JSON, Console


async def _session(console: Console, url: str) -> str:
    s = await console.connect(kind="http", url=url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def _call(console: Console, session_id: str, tool: str) -> dict[str, Any]:
    response = await console.http.post(f"/sessions/{session_id}/tools/call",
                                       data={"tool": tool, "mode": "json", "json": json.dumps({})}, headers=JSON)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _text(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"])


async def test_a_chunked_event_stream_cut_inside_a_character_arrives_whole(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    reply = await _call(console, sid, "chunked_sse")
    assert reply["ok"] and _text(reply) == "chunked \u2713", (reply["status"], reply.get("error"))
    entry = await console.entry(sid, reply["key"])
    raws = [w["raw"] for w in entry["wire"] if w["direction"] == "in"]
    assert any("caf\u00e9 \u2713" in raw for raw in raws)  # the notification's text, exactly as sent


async def test_a_gzip_encoded_answer_is_decoded_as_httpx_decoded_it(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    reply = await _call(console, sid, "gzip_json")
    assert reply["ok"] and _text(reply) == "unzipped", reply


async def test_an_interim_103_before_the_answer_is_passed_over(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    reply = await _call(console, sid, "early_hints")
    assert reply["ok"] and _text(reply) == "after a 103", reply
    entry = await console.entry(sid, reply["key"])
    assert any(w.get("http_status") == 200 for w in entry["wire"] if w["direction"] == "transport")


async def test_bytes_after_a_keep_alive_answer_retire_that_connection_and_the_next_call_works(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    first = await _call(console, sid, "keepalive_then_junk")
    assert first["ok"] and _text(first) == "junk follows", first
    second = await _call(console, sid, "gzip_json")  # not sent on the polluted connection
    assert second["ok"] and _text(second) == "unzipped", second
    notes = " ".join(str(w.get("note") or "") for w in (await console.entry(sid, first["key"]))["wire"])
    assert "bytes after this answer on its connection, unasked" in notes, notes


async def test_headers_that_never_end_fail_the_call_with_the_bound_said(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    reply = await _call(console, sid, "endless_headers")
    assert not reply["ok"], reply
    entry = await console.entry(sid, reply["key"])
    notes = " ".join(str(w.get("note") or "") for w in entry["wire"])
    assert "headers passed" in notes, notes


async def test_a_second_answer_in_the_same_write_is_not_read_into_the_call_nor_its_record(
        console: Console, hostile_http: Callable[..., HostileUrl]) -> None:
    sid = await _session(console, hostile_http("lat2"))
    reply = await _call(console, sid, "pipelined_error")
    assert reply["ok"] and _text(reply) == "asked for", reply
    entry = await console.entry(sid, reply["key"])
    (head,) = [w for w in entry["wire"] if w["direction"] == "transport" and w.get("http_status")]
    assert head["http_status"] == 200 and head["note"] == "HTTP 200 OK", head
    assert "x-unasked" not in dict(head["headers"]), head["headers"]
    assert [json.loads(w["raw"])["id"] for w in entry["wire"] if w["direction"] == "in"] == [reply["id"]]
    again = await _call(console, sid, "gzip_json")
    assert again["ok"] and _text(again) == "unzipped", again
