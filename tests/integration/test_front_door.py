"""The action POSTs answered in one step (app/web/front_door.py) answer as the full middleware stack does."""

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


async def _session(console: Console, demo_url: str) -> str:
    s = await console.connect(kind="http", url=demo_url, headers="")
    assert s["status"] == "connected", s["status_message"]
    return str(s["id"])


async def test_a_call_with_a_declared_length_and_a_streamed_one_get_the_same_answer_and_headers(
        console: Console, demo_url: str) -> None:
    # A declared length is taken by the front door; a streamed body (no Content-Length) goes down the full stack.
    sid = await _session(console, demo_url)

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


async def test_a_call_through_the_front_door_is_recorded_like_any_other(console: Console, demo_url: str) -> None:
    sid = await _session(console, demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM, headers={**JSON, **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    entry = await console.http.get(f"/sessions/{sid}/entries/{answer.json()['key']}.json")
    assert entry.status_code == 200, entry.text
    directions = [w["direction"] for w in entry.json()["wire"]]
    assert directions[:1] == ["out"] and "in" in directions


async def test_an_html_call_from_a_tab_is_answered_in_one_step_with_its_card(console: Console, demo_url: str) -> None:
    sid = await _session(console, demo_url)
    answer = await console.http.post(f"/sessions/{sid}/tools/call", content=FORM,
                                     headers={"HX-Request": "true", **FORM_TYPE})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "front" in answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"
