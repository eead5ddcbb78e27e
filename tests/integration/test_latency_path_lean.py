"""The second round of the tools/call hot path (issue 13 item 1): the lean upstream client and the hoisted routes.

Mechanisms, counted: which client carried the POST, how many connections it opened, which router matched.
"""

from __future__ import annotations

from typing import Any

import fastapi.routing
import httpx
import pytest
import starlette.formparsers

from app.mcp.netstream import AsyncioHTTPTransport
from tests.integration.conftest import Console


async def test_calls_to_an_http_target_share_one_lean_keep_alive_connection_and_skip_httpx(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    transport = console.app.state.web.manager.http._transport
    assert isinstance(transport, AsyncioHTTPTransport)
    through_httpx: list[str] = []
    real = httpx.AsyncClient.send

    async def counted(self: httpx.AsyncClient, request: httpx.Request, **kw: Any) -> httpx.Response:
        through_httpx.append(f"{request.method} {request.url}")
        return await real(self, request, **kw)

    monkeypatch.setattr(httpx.AsyncClient, "send", counted)
    opened = transport.lean.connections_opened
    for i in range(5):
        reply = await console.call_tool(s["id"], "echo", text=f"hi {i}")
        assert reply["ok"] and reply["result"]["content"][0]["text"] == f"hi {i}"
    assert [u for u in through_httpx if u.startswith(f"POST {demo_url}")] == []  # the test's own client aside
    assert transport.lean.connections_opened - opened <= 1  # the connection the connect made is reused
    entry = await console.entry(s["id"], reply["key"])
    out = next(w for w in entry["wire"] if w["direction"] == "out")
    names = [name for name, _ in out["headers"]]
    # What httpx recorded (and sent) before: its own headers first, ours, then the length.
    assert names[:4] == ["host", "accept-encoding", "connection", "user-agent"] and names[-1] == "content-length"
    assert ["mcp-protocol-version", "2026-07-28"] in [list(h) for h in out["headers"]]


async def test_a_tools_call_is_matched_by_its_own_route_before_any_included_router(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    matched: list[str] = []
    real = fastapi.routing._IncludedRouter.matches

    def counted(self: Any, scope: Any) -> Any:
        matched.append(scope.get("path", ""))
        return real(self, scope)

    monkeypatch.setattr(fastapi.routing._IncludedRouter, "matches", counted)
    reply = await console.call_tool(s["id"], "echo", text="hi")
    assert reply["ok"] and matched == []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base) as stranger:
        refused = await stranger.post(f"/sessions/{s['id']}/tools/call", data={"tool": "echo", "arg.text": "hi"},
                                      headers={"Accept": "application/json", "Origin": console.base})
    assert refused.status_code == 401  # the operator check is the same


async def test_a_tools_call_form_is_split_without_starlettes_callback_parser(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    parsed: list[int] = []
    real = starlette.formparsers.FormParser.parse

    async def counted(self: starlette.formparsers.FormParser) -> Any:
        parsed.append(1)
        return await real(self)

    monkeypatch.setattr(starlette.formparsers.FormParser, "parse", counted)
    reply = await console.call_tool(s["id"], "echo", text="a&b=c ✓")
    assert reply["ok"] and reply["result"]["content"][0]["text"] == "a&b=c ✓" and parsed == []
