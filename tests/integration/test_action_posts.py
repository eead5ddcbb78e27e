"""The action POSTs: a streamed body and a declared one are answered alike, recorded alike, and bounded alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from app.web.security import SECURITY_HEADERS
from tests.integration.conftest import JSON

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.integration.conftest import Console

FORM = b"tool=echo&arg.text=front"
FORM_TYPE = {"Content-Type": "application/x-www-form-urlencoded"}


async def test_a_call_with_a_declared_length_and_a_streamed_one_get_the_same_answer_and_headers(
        console: Console, demo_url: str) -> None:
    # A declared length and a streamed body (no Content-Length) take the same path and get the same answer.
    sid = await console.connected_http(demo_url)

    async def streamed() -> AsyncIterator[bytes]:
        yield FORM

    one_step = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM, headers={**JSON, **FORM_TYPE})
    full = await console.http.post(f"/sessions/{sid}/tools/call", content=streamed(), headers={**JSON, **FORM_TYPE})
    assert one_step.status_code == full.status_code == 200, (one_step.text, full.text)
    a, b = one_step.json(), full.json()
    assert a["ok"] and b["ok"] and a["result"] == b["result"]
    assert a["result"]["content"] == [{"type": "text", "text": "front"}]
    assert sorted(a) == sorted(b)
    assert a["status"] == b["status"] == "complete"

    def kept(response: httpx.Response) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in response.headers.items() if k not in ("content-length", "date"))

    assert kept(one_step) == kept(full)
    for name, value in SECURITY_HEADERS:
        assert one_step.headers[name.decode()] == value.decode()


async def test_a_call_with_a_declared_length_is_recorded_like_any_other(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM, headers={**JSON, **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    entry = await console.http.get(f"/sessions/{sid}/entries/{answer.json()['key']}.json")
    assert entry.status_code == 200, entry.text
    directions = [w["direction"] for w in entry.json()["wire"]]
    assert directions[:1] == ["out"] and "in" in directions


async def test_an_html_call_from_a_tab_is_answered_in_one_step_with_its_card(console: Console, demo_url: str) -> None:
    sid = await console.connected_http(demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM,
                                     headers={"HX-Request": "true", **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "front" in answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"


async def test_a_declared_length_beside_a_transfer_encoding_is_counted_by_the_body_limit(
        console: Console, demo_url: str) -> None:
    # Straight to the app (no HTTP parser in between to refuse the pair): the body limit must not trust the length.
    sid = await console.connected_http(demo_url)
    limit = console.settings.max_request_body_bytes
    chunks = [b"tool=echo&arg.text=", b"x" * (limit // 2), b"x" * (limit // 2 + 10)]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        body = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    path = f"/sessions/{sid}/tools/call"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 50000), "server": (console.public_host, 80),
             "headers": [(b"host", console.public_host.encode()),
                         (b"authorization", console.http.headers["authorization"].encode()),
                         (b"accept", b"application/json"), (b"content-type", b"application/x-www-form-urlencoded"),
                         (b"content-length", b"24"), (b"transfer-encoding", b"chunked")]}
    await console.app(scope, receive, send)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 413, sent[:1]
