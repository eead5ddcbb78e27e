"""Attack: the events a call holds (Timeline.hold) against deletes, closes, shutdowns and restarts in the middle
of the call: nothing may be stored for a session that is gone, and nothing that was live may be missing after."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tests.integration.conftest import JSON, eventually

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts


async def test_a_session_deleted_while_a_call_is_in_flight_leaves_nothing_in_the_store(
        console: Console, demo_url: str) -> None:
    s = await console.connect(kind="http", url=demo_url, headers="")
    sid = s["id"]
    session = console.manager.get(sid)
    assert session is not None
    call = asyncio.ensure_future(console.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                                   data={"tool": "long_job", "arg.seconds": "5"}))

    async def started() -> bool:
        return any(e.get("method") == "tools/call" for e in session.state.entries.values()) or bool(
            session.timeline._pending)

    await eventually(started)
    deleted = await console.http.post(f"/sessions/{sid}/delete", headers=JSON)
    assert deleted.status_code in (200, 303), deleted.text
    answer = await asyncio.wait_for(call, 30)
    assert answer.status_code in (200, 404, 409), answer.text
    session.timeline.flush()  # what a held event's timer would do HOLD_S later
    console.manager.store.flush()
    left = [(e.seq, e.kind) for e in console.manager.store.events(sid)]
    assert left == [], left
    assert sid not in {row["id"] for row in console.manager.store.list_sessions()}


async def test_a_restart_right_after_a_call_folds_exactly_what_was_live(
        restarts: ConsoleRestarts, demo_url: str) -> None:
    console = restarts.first()
    s = await console.connect(kind="http", url=demo_url, headers="")
    sid = s["id"]
    for text in ("one", "two", "three"):
        assert (await console.call_tool(sid, "echo", text=text))["ok"]
    session = console.manager.get(sid)
    assert session is not None
    session.timeline.flush()  # what any reader (a page, a twin, a socket) does first
    live_entries = {k: {f: v for f, v in e.items() if f not in ("at0",)} for k, e in session.state.entries.items()
                    if e.get("method") == "tools/call"}
    live_ops = {k: op.to_json() for k, op in session.state.operations.items()}
    again = await restarts.restart(console)
    restored = again.manager.get(sid)
    assert restored is not None
    folded = {k: {f: v for f, v in e.items() if f not in ("at0",)} for k, e in restored.state.entries.items()
              if e.get("method") == "tools/call"}
    for key, entry in live_entries.items():
        assert folded.get(key) == entry, (key, {f: (v, folded.get(key, {}).get(f)) for f, v in entry.items()
                                               if folded.get(key, {}).get(f) != v})
    assert folded == live_entries
    assert {k: op.to_json() for k, op in restored.state.operations.items()} == live_ops
