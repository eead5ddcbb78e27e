"""A target that fills the store: past the per-session quota the console keeps no more frames, says so once
(also across a restart), keeps what it recorded, and the session goes on working."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import JSON

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts

QUOTA = 300_000
QUOTA_TEXT = "stored data for this session reached the quota (setting max_session_store_bytes"


async def call(console: Console, sid: str, tool: str, **args: str) -> dict[str, Any]:
    reply = await console.call_tool(sid, tool, **args)
    assert reply["status"] == "complete", reply
    return reply


async def wire(console: Console, sid: str, key: str) -> list[dict[str, Any]]:
    response = await console.http.get(f"/sessions/{sid}/entries/{key}.json", headers=JSON)
    assert response.status_code == 200, response.text
    frames: list[dict[str, Any]] = response.json()["wire"]
    return frames


def quota_notices(s: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in s["timeline"] if e["kind"] == "notice" and QUOTA_TEXT in e["message"]]


async def test_past_the_store_quota_frames_are_no_longer_kept_said_once_and_the_session_goes_on(
        restarts: ConsoleRestarts, hostile_http: Callable[..., str]) -> None:
    url = hostile_http("store")
    console = restarts.first(max_session_store_bytes=QUOTA)
    s = await console.connect(kind="http", url=url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    early = await call(console, sid, "bulk", size="100000")
    assert any(len(f["raw"]) > 100_000 for f in await wire(console, sid, early["key"]))
    for _ in range(3):
        await call(console, sid, "bulk", size="100000")
    store = console.manager.store
    console.manager.get(sid).timeline.flush()  # read straight from the store: its last frames first
    grown_from = store.stored_bytes(sid)
    assert grown_from >= QUOTA
    late = await call(console, sid, "store_echo", text="still working")
    assert "still working" in str(late["result"])
    assert await wire(console, sid, late["key"]) == []  # no more frames kept
    assert any(len(f["raw"]) > 100_000 for f in await wire(console, sid, early["key"]))  # the old ones stay
    console.manager.get(sid).timeline.flush()  # read straight from the store: its last frames first
    assert store.stored_bytes(sid) - grown_from < 8_000  # the entry and operation, not the frames
    assert len(quota_notices(await console.session(sid))) == 1

    again = await restarts.restart(console)
    await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    s = await again.settled(sid)
    assert s["status"] == "connected", s["status_message"]
    after = await call(again, sid, "store_echo", text="after the restart")
    assert await wire(again, sid, after["key"]) == []  # the count survived the restart
    assert len(quota_notices(await again.session(sid))) == 1  # and the notice is not repeated
