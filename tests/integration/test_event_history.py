"""Event history: databases written by the version-1 and version-2 consoles restore through today's loader,
and a live session is exactly the fold of its stored events, flow by flow, against the real demo server."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.console.state import fold, projection
from app.settings import Settings
from tests.integration.conftest import JSON, TOKEN, Console, eventually

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.integration.conftest import ConsoleRestarts
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.conftest import Console, ConsoleRestarts


V1_DB = Path(__file__).resolve().parents[1] / "fixtures" / "v1-session.sqlite3"
V2_DB = Path(__file__).resolve().parents[1] / "fixtures" / "v2-session.sqlite3"


def restored_from(database: Path, tmp_path: Path) -> Console:
    """A console on a copy of a database an older version wrote, its one session restored."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(database, data / "console.sqlite3")
    console = Console(Settings(data_dir=str(data), token=TOKEN, allowed_hosts="testserver"))
    assert console.manager.restore() == 1
    return console


async def test_a_database_written_by_the_v1_console_restores_with_its_operations_and_settings(
        tmp_path: Path) -> None:
    console = restored_from(V1_DB, tmp_path)
    try:
        (listed,) = (await console.http.get("/sessions.json")).json()["sessions"]
        s = await console.session(listed["id"])
        assert s["status"] == "closed" and s["target"].startswith("http://127.0.0.1:")
        assert s["server"]["info"]["name"] and "added_in_v1" in {t["name"] for t in s["lists"]["tools"]}
        assert s["client_capabilities"] == {"elicitation": {"form": {}}, "roots": {}}
        assert s["roots"] == [{"uri": "file:///tmp/v1", "name": "The v1 root"}]
        assert s["request_settings"] == {"log_level": "info", "progress": True, "auto_refresh": False,
                                     "idle_timeout_s": 60.0, "max_s": 3600.0}
        ops = {op["name"]: op for op in s["operations"]}
        assert [r["status"] for r in ops["two_step"]["rounds"]] == ["input_required", "input_required",
                                                                    "complete"]
        assert ops["two_step"]["status"] == "complete" and ops["two_step"]["rounds"][0]["state_info"]
        assert ops["echo"]["status"] == "complete"
        (sub,) = s["subscriptions"]
        assert sub["state"] == "stopped" and sub["total"] >= 1 and sub["notifications"]
        kinds = {e["kind"] for e in s["timeline"]}
        assert kinds == {"exchange", "operation", "notice"} or kinds == {"exchange", "operation"}
        page = await console.http.get(f"/sessions/{listed['id']}")
        assert page.status_code == 200 and "two_step" in page.text
        # The v1 log is carried forward once: what v1 kept only in its row is now in events.
        events = console.manager.store.events(listed["id"])
        assert [e.kind for e in events].count("session_created") == 1
        assert projection(fold(listed["id"], events))["lists"] == s["lists"]
    finally:
        await console.close()


async def test_a_database_written_by_the_v2_console_folds_its_operation_snapshots_and_keeps_one_waiting(
        tmp_path: Path) -> None:
    """Version 2 recorded a full snapshot of an operation at each change (`operation`); version 3 reads them as
    `op_snapshot` and folds each as the whole operation at that point. The operation left waiting for its answer
    still waits, with its question, after the restore (tests/fixtures/make_v2_db.py wrote the file)."""
    console = restored_from(V2_DB, tmp_path)
    try:
        (listed,) = (await console.http.get("/sessions.json")).json()["sessions"]
        sid = listed["id"]
        s = await console.session(sid)
        assert s["status"] == "closed" and "added_in_v2" in {t["name"] for t in s["lists"]["tools"]}
        assert s["roots"] == [{"uri": "file:///tmp/v2", "name": "The v2 root"}]
        done, waiting = [op for op in s["operations"] if op["name"] == "two_step"]
        assert done["status"] == "complete" and [r["status"] for r in done["rounds"]] == [
            "input_required", "input_required", "complete"]
        assert done["rounds"][0]["human_ms"] is not None and done["errors"] == {}
        assert waiting["status"] == "awaiting_input" and len(waiting["rounds"]) == 1
        (question,) = waiting["pending_requests"].values()
        assert question["method"] == "elicitation/create"
        assert {op["name"]: op["status"] for op in s["operations"]}["echo"] == "complete"
        (sub,) = s["subscriptions"]
        assert sub["state"] == "stopped" and sub["total"] >= 1

        stored = console.manager.store.events(sid)
        kinds = {e.kind for e in stored}
        assert "op_snapshot" in kinds and "operation" not in kinds  # read under its version-3 name
        assert projection(fold(sid, stored))["operations"] == projection(console.manager.get(sid).state)["operations"]
        page = await console.http.get(f"/sessions/{sid}")
        assert page.status_code == 200 and "Step 1 of 2: what is your name?" in page.text

        # Its file (version 3: the snapshots under their new name) imports into the same operations.
        exported = await console.http.get(f"/sessions/{sid}/export.json", params={"secrets": "1"})
        assert exported.status_code == 200
        assert {e["v"] for e in exported.json()["events"]} == {3}
        imported = await console.http.post("/sessions/import", content=exported.content, headers=JSON)
        assert imported.status_code in (200, 303), imported.text
        copy = await console.session(imported.json()["id"])
        assert [(op["op"], op["rounds"]) for op in copy["operations"]] == \
            [(op["op"], op["rounds"]) for op in s["operations"]]
        # A read-only copy answers nothing: the question it was waiting on is over there.
        assert {op["op"]: op["status"] for op in copy["operations"]} == {
            op["op"]: "interrupted" if op["op"] == waiting["op"] else op["status"] for op in s["operations"]}
    finally:
        await console.close()


# --- the live session is the fold of its stored events -------------------------------------------------


async def answer(console: Console, sid: str, op: dict[str, Any], **form: str) -> dict[str, Any]:
    key = next(iter(op["pending_requests"]))
    response = await console.http.post(f"/sessions/{sid}/operations/{op['op']}/answer", data={"key": key, **form},
                                       headers=JSON)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def sub_where(console: Console, sid: str, sub: str, check: Callable[[dict[str, Any]], bool],
                    what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        [found] = [x for x in (await console.session(sid))["subscriptions"] if x["sub"] == sub]
        return found if check(found) else None

    found: dict[str, Any] = await eventually(probe, 30.0, f"subscription {sub} {what}")
    return found


async def run_every_flow(console: Console, sid: str, demo: Any) -> None:
    """Plain call, MRTR with rounds, URL elicitation, sampling, roots, a subscription with list changes and a
    drop, progress, cancel, replay, share links and every client setting."""
    echo = await console.call_tool(sid, "echo", text="folded")
    assert echo["status"] == "complete", echo
    first = (await console.call_tool(sid, "two_step"))["operation"]
    second = await answer(console, sid, first, action="accept", **{"arg.name": "Ada"})
    assert (await answer(console, sid, second, action="accept", **{"arg.confirm": "on"}))["status"] == "complete"
    url = (await console.call_tool(sid, "open_link"))["operation"]
    assert (await answer(console, sid, url, action="accept"))["status"] == "complete"
    llm = (await console.call_tool(sid, "ask_llm"))["operation"]
    assert (await answer(console, sid, llm, reply="four", model="me"))["status"] == "complete"
    roots = (await console.call_tool(sid, "list_roots"))["operation"]
    assert (await answer(console, sid, roots))["status"] == "complete"
    progress = await console.call_tool(sid, "progress_slow", steps="3", delay_s="0.02")
    assert progress["status"] == "complete", progress

    started = await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                                      headers=JSON)
    sub = started.json()["sub"]
    await sub_where(console, sid, sub, lambda x: x["state"] == "active", "to be acknowledged")
    await console.call_tool(sid, "add_tool", name=f"folded_{uuid.uuid4().hex[:8]}")
    await sub_where(console, sid, sub, lambda x: x["total"] >= 1, "to see the list change")
    demo.kill()  # a drop: the listen stream ends without a response
    await sub_where(console, sid, sub, lambda x: x["state"] != "active", "to notice the drop")
    await demo.start()
    await sub_where(console, sid, sub, lambda x: x["state"] == "active" and x["reconnects"] >= 1,
                    "to listen again")

    job = asyncio.create_task(console.call_tool(sid, "long_job", seconds="30"))

    async def running() -> dict[str, Any] | None:
        ops = [o for o in (await console.session(sid))["operations"] if o["name"] == "long_job"]
        return ops[0] if ops and ops[0]["status"] == "running" and ops[0]["rounds"][0]["key"] else None

    op = await eventually(running, what="long_job to run")
    await console.http.post(f"/sessions/{sid}/operations/{op['op']}/cancel", headers=JSON)
    assert (await job)["status"] == "cancelled"
    replayed = await console.http.post(f"/sessions/{sid}/replay", data={"key": echo["key"], "mode": "as-is"},
                                       headers=JSON)
    assert replayed.status_code == 200, replayed.text

    link = (await console.http.post(f"/sessions/{sid}/links", data={"role": "viewer"}, headers=JSON)).json()
    await console.http.post(f"/sessions/{sid}/links", data={"role": "operator", "ttl_minutes": "5"}, headers=JSON)
    await console.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
    await console.http.post(f"/sessions/{sid}/capabilities", data={"cap": ["elicitation.form", "roots"]})
    await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/folded Folded"})
    await console.http.post(f"/sessions/{sid}/request-settings", data={"log_level": "debug", "progress": "on"})
    await console.http.post(f"/sessions/{sid}/subscriptions/{sub}/stop", headers=JSON)


def live_and_folded(console: Console, sid: str) -> tuple[Any, Any]:
    """Both projections at one instant: nothing runs between reading the live state and the store."""
    console.manager.get(sid).timeline.flush()  # read straight from the store: its last frames first
    session = console.manager.get(sid)
    live = json.loads(json.dumps(projection(session.state), default=str))
    events = console.manager.store.events(sid)
    folded = json.loads(json.dumps(projection(fold(sid, events, session.state.window)), default=str))
    return live, folded


async def test_folding_the_stored_events_from_scratch_gives_the_live_state_of_every_demo_flow(
        make_console: Callable[..., Console], demo_process: Any) -> None:
    demo = await demo_process()
    console = make_console()
    s = await console.connect(kind="http", url=demo.url, headers="")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    await run_every_flow(console, sid, demo)

    async def settled() -> bool:
        s = await console.session(sid)
        return not [e for e in s["timeline"] if e.get("status") in ("pending", "running", "awaiting_input")]

    await eventually(settled, what="every entry to finish")
    live, folded = live_and_folded(console, sid)
    assert live["operations"] and live["subscriptions"] and len(live["links"]) == 2
    assert {o["name"] for o in live["operations"]} >= {"two_step", "open_link", "ask_llm", "list_roots", "long_job"}
    for key in live:
        assert folded[key] == live[key], key


# --- a restart is the fold: the same operations, subscriptions, settings and links ---------------------


def without_live_state(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in sub.items() if k != "state"} for sub in subs]


async def test_after_a_graceful_restart_the_json_twin_shows_the_same_operations_subscriptions_and_settings(
        restarts: ConsoleRestarts, demo_process: Any) -> None:
    demo = await demo_process()
    console = restarts.first()
    s = await console.connect(kind="http", url=demo.url, headers="")
    sid = s["id"]
    await run_every_flow(console, sid, demo)
    listening = (await console.http.post(f"/sessions/{sid}/subscriptions", data={"toolsListChanged": "1"},
                                         headers=JSON)).json()["sub"]
    await sub_where(console, sid, listening, lambda x: x["state"] == "active", "to be acknowledged")
    before = await console.session(sid)

    again = await restarts.restart(console)
    after = await again.session(sid)
    assert after["operations"] == before["operations"]
    assert without_live_state(after["subscriptions"]) == without_live_state(before["subscriptions"])
    assert [x["state"] for x in after["subscriptions"]] == ["stopped", "interrupted"]
    for key in ("client_capabilities", "roots", "request_settings", "links", "lists", "server", "target"):
        assert after[key] == before[key], key
    assert after["status"] == "closed"

    await again.http.post(f"/sessions/{sid}/reconnect", headers=JSON)
    resumed = await sub_where(again, sid, listening, lambda x: x["state"] == "active", "to listen again")
    assert resumed["reconnects"] == 1
    # The stopped one stays stopped: only what was live when the console went down listens again.
    assert (await again.session(sid))["subscriptions"][0]["state"] == "stopped"


async def test_the_metadata_row_is_a_cache_restore_believes_the_events(
        restarts: ConsoleRestarts, demo_url: str) -> None:
    console = restarts.first()
    s = await console.connect(kind="http", url=demo_url, headers="")
    sid = s["id"]
    await console.http.post(f"/sessions/{sid}/roots", data={"roots": "file:///tmp/truth Truth"})
    before = await console.session(sid)
    console.manager.store.flush()
    lie = {"target": {"kind": "http", "url": "http://127.0.0.1:9/elsewhere"}, "roots": [{"uri": "file:///lie"}],
           "capabilities": {}, "lists": {"tools": []}, "discover": None, "status": "connected"}
    console.manager.store.save_session(sid, lie, before["created"], before["last_activity"])

    again = restarts.after_crash(console)  # the row now disagrees with the log
    after = await again.session(sid)
    assert after["target"] == before["target"] and after["roots"] == [{"uri": "file:///tmp/truth", "name": "Truth"}]
    assert after["client_capabilities"] == before["client_capabilities"]
    assert after["lists"] == before["lists"] and after["server"] == before["server"]


async def test_a_stdio_session_with_logs_and_stderr_is_the_fold_of_its_events(console: Console) -> None:
    s = await console.connect(kind="demo-stdio")
    assert s["status"] == "connected", s["status_message"]
    sid = s["id"]
    await console.http.post(f"/sessions/{sid}/request-settings", data={"log_level": "debug", "progress": "on"})
    logged = await console.call_tool(sid, "log_demo", count="3")
    assert logged["status"] == "complete", logged
    await console.call_tool(sid, "echo", text="over stdio")
    live, folded = live_and_folded(console, sid)
    assert any(e.get("logs") for e in live["entries"])
    for key in live:
        assert folded[key] == live[key], key


# -- A call's events against deletes, closes, shutdowns and restarts in the middle of the call: nothing may be
# stored for a session that is gone, and nothing that was live may be missing after.

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
    assert answer.status_code == 410 and "deleted while this call ran" in answer.text, answer.text
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
