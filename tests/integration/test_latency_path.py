"""The request path of a plain tools/call through the JSON API does only what the call needs (issue 13 item 1).

These assert mechanisms (counts of per-call work), never wall-clock time: `bench/latency.py` measures that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import fastapi.dependencies.utils
import fastapi.routing
import httpx
import pytest

from app.console import timeline as timeline_module
from app.console.events import TimelineEvent
from app.mcp import lean_http
from app.web import wire_writes
from tests.integration.conftest import JSON, Console, Served


@pytest.fixture
def thread_hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every time FastAPI hands a dependency or endpoint to a worker thread, by name."""
    hops: list[str] = []
    real = fastapi.dependencies.utils.run_in_threadpool

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(fastapi.dependencies.utils, "run_in_threadpool", counted)
    return hops


async def test_a_tools_call_through_the_json_api_runs_nothing_in_a_worker_thread(
        console: Console, demo_url: str, thread_hops: list[str]) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    thread_hops.clear()
    reply = await console.call_tool(s["id"], "echo", text="hi")
    assert reply["ok"] and reply["result"]["content"][0]["text"] == "hi"
    assert thread_hops == []


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


async def test_a_tools_call_resolves_no_fastapi_dependencies_and_a_viewer_is_still_refused(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    solved: list[str] = []
    real = fastapi.routing.solve_dependencies

    async def counted(*args: Any, **kwargs: Any) -> Any:
        solved.append(str(kwargs.get("request", "")))
        return await real(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    reply = await console.call_tool(s["id"], "echo", text="hi")
    assert reply["ok"] and solved == []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url=console.base) as stranger:
        refused = await stranger.post(f"/sessions/{s['id']}/tools/call", data={"tool": "echo", "arg.text": "hi"},
                                      headers={"Accept": "application/json", "Origin": console.base})
    assert refused.status_code == 401


async def test_each_answer_leaves_the_console_in_one_socket_write(
        console: Console, demo_url: str, serve: Callable[..., Awaitable[Served]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[bytes] = []
    real = wire_writes.CoalescingTransport.flush

    def watched(self: wire_writes.CoalescingTransport) -> None:
        sent.append(b"".join(self._pending))
        real(self)

    monkeypatch.setattr(wire_writes.CoalescingTransport, "flush", watched)
    served = await serve(console)
    s = await console.connect(kind="http", url=demo_url, headers="")
    async with httpx.AsyncClient(base_url=f"http://{served.host}", headers={"Host": served.public, **served.headers()},
                                 timeout=30) as client:
        for _ in range(3):
            sent.clear()
            reply = await client.post(f"/sessions/{s['id']}/tools/call", data={"tool": "echo", "arg.text": "hi"},
                                      headers={"Accept": "application/json"})
            assert reply.status_code == 200 and reply.json()["ok"]
            answers = [w for w in sent if w]
            assert len(answers) == 1 and answers[0].startswith(b"HTTP/1.1 200") and answers[0].endswith(b"}")


async def test_a_calls_answer_goes_out_before_its_last_events_are_stored_and_the_next_read_finds_them_all(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timeline.hold: the call's events wait (here, for good: HOLD_S is an hour) until anything else reads."""
    monkeypatch.setattr(timeline_module, "HOLD_S", 3600.0)
    s = await console.connect(kind="http", url=demo_url, headers="")
    session = console.manager.get(s["id"])
    assert session is not None
    stored_before = console.manager.store.count(s["id"])
    reply = await console.call_tool(s["id"], "echo", text="held")
    assert reply["ok"] and reply["status"] == "complete" and reply["operation"]["status"] == "complete"
    held = [e.kind for e in session.timeline._pending if isinstance(e, TimelineEvent)]
    assert "exchange_finished" in held and "operation" in held, held  # answered, not yet recorded
    entry = await console.http.get(f"/sessions/{s['id']}/entries/{reply['key']}.json", headers=JSON)
    assert entry.status_code == 200, entry.text
    data = entry.json()
    assert [w["direction"] for w in data["wire"] if w["direction"] in ("out", "in")] == ["out", "in"]
    assert session.timeline._pending == []
    op = session.state.operations[reply["operation"]["op"]]
    # The answer was the fold's record: its operation, and (once, at the top) the final reply.
    assert op.status == "complete" and op.to_json(with_final=False) == reply["operation"]
    assert op.final is not None and {k: reply[k] for k in op.final.data} == op.final.data
    assert console.manager.store.count(s["id"]) > stored_before


async def test_a_call_refused_before_the_wire_beside_one_that_went_out_leaves_no_later_call_unpublished(
        console: Console, demo_url: str) -> None:
    """Two calls at once on one session, the second refused before the wire (a lone surrogate cannot be encoded):
    a later call's last events still reach the tabs HOLD_S after its answer, with no reader to flush them."""
    s = await console.connect(kind="http", url=demo_url, headers="")
    session = console.manager.get(s["id"])
    assert session is not None
    sent = console.http.post(f"/sessions/{s['id']}/tools/call", headers=JSON,
                             data={"tool": "echo", "arg.text": "goes out"})
    refused = console.http.post(f"/sessions/{s['id']}/tools/call", headers=JSON,
                                data={"tool": "echo", "mode": "json", "json": '{"text": "\\ud800"}'})
    first, second = await asyncio.gather(sent, refused)
    assert first.json()["ok"] and not second.json()["ok"], second.text
    published: list[TimelineEvent] = []
    done = asyncio.Event()
    publish = session.timeline._publish

    def watch(event: TimelineEvent) -> None:
        publish(event)
        published.append(event)
        done.set()

    session.timeline._publish = watch  # type: ignore[method-assign]
    reply = await console.call_tool(s["id"], "echo", text="later")
    assert reply["ok"]
    await asyncio.wait_for(done.wait(), timeout=5)
    while not any(e.kind == "exchange_finished" and e.record.key == reply["key"] for e in published):
        done.clear()
        await asyncio.wait_for(done.wait(), timeout=5)


async def test_a_calls_start_is_recorded_once_its_request_is_on_the_socket_and_still_before_its_first_frame(
        console: Console, demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exchange's start and the operation's round are recorded after the write (the target reads the request
    meanwhile), yet in the order they always had: start, the operation's round with its key, the request's frame."""
    s = await console.connect(kind="http", url=demo_url, headers="")
    session = console.manager.get(s["id"])
    assert session is not None
    on_socket = [False]
    real_request = lean_http.LeanPool.request

    async def request(self: lean_http.LeanPool, *args: Any, on_sent: Callable[[], None] | None = None,
                      **kwargs: Any) -> Any:
        def sent() -> None:
            on_socket[0] = True
            if on_sent is not None:
                on_sent()
        on_socket[0] = False
        return await real_request(self, *args, on_sent=sent, **kwargs)

    monkeypatch.setattr(lean_http.LeanPool, "request", request)
    order: list[tuple[str, bool]] = []
    timeline = session.timeline
    append, add_frame = timeline.append, timeline.add_frame

    def appended(record: Any) -> Any:
        order.append((type(record).__name__, on_socket[0]))
        return append(record)

    def framed(record: Any) -> Any:
        order.append((f"frame {record.direction}", on_socket[0]))
        return add_frame(record)

    monkeypatch.setattr(timeline, "append", appended)
    monkeypatch.setattr(timeline, "add_frame", framed)
    reply = await console.call_tool(s["id"], "echo", text="hi")
    assert reply["ok"] and reply["operation"]["rounds"][0]["key"] == reply["key"]
    before_answer = order[:order.index(("frame in", True))]
    assert before_answer[:3] == [("ExchangeStarted", True), ("OperationChanged", True), ("frame out", True)], order


def test_a_scripts_tools_call_runs_no_more_of_the_consoles_own_python_calls_than_its_path_needs() -> None:
    """The length of the call's path, counted (bench/call_path.py): under bench.latency each Python call on it
    costs about 1.5 µs with cold caches, so a call that grows the path by a few dozen shows as a slower console.
    Only calls in app/ are counted, so a library's update does not move the figure. When a change needs more,
    raise the bound in the same commit and say why."""
    from bench.call_path import run

    figures = run(at=30, top=1)
    # 106 and 118 on 2026-12-02, after the trims that took them from 121 and 130.
    assert figures["in"]["console"]["app_calls"] <= 115, figures["in"]
    assert figures["out"]["console"]["app_calls"] <= 128, figures["out"]
