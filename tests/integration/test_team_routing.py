"""Two console processes on one store: replicas, actions routed to the owner, takeover when the owner dies.

Both "processes" are console apps in this test process, each with its own SqliteStore on one database FILE
(WAL lets them share it), joined by `Bus` (what the Redis hub does between processes: the owner flushes its
store, then every other process folds the event into its replica and fans it out) and by one
`MemoryDirectory` (each process a `MemoryCluster` on it; no heartbeat runs, and a long TTL keeps the living
registered, so `lapse` alone decides who died). Process A is served by a real uvicorn so B forwards to it
over real HTTP; the demo server is the target.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.console.cluster import MemoryCluster, MemoryDirectory
from app.console.events import Notice, SessionCreated, TimelineEvent
from app.console.hub import Serialized
from app.console.manager import SessionManager
from app.console.replica import STDIO_NOTE
from app.console.state import TAKEOVER_ERROR
from app.console.store import ImportRow, SqliteStore
from app.settings import Settings
from app.web.app import create_app
from tests.integration.conftest import (
    AUTH,
    JSON,
    LINK_COOKIE,
    TEAM_SECRET,
    TOKEN,
    Catcher,
    Console,
    Served,
    create_link,
    eventually,
    link_token,
)

Message = tuple[SessionManager, str, int, Serialized]
LEASE_TTL_S = 3600.0  # the living stay registered for the whole test without a heartbeat


class Bus:
    """The hub between processes, in one process: publish on one manager reaches every other one's replica."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message] = asyncio.Queue()
        self.local: dict[SessionManager, Callable[[str, int, Serialized], None]] = {}
        self.task = asyncio.get_running_loop().create_task(self._send(), name="test-bus")

    def join(self, manager: SessionManager) -> None:
        hub = manager.hub
        original = hub.publish_serialized
        self.local[manager] = original

        def publish_serialized(session_id: str, seq: int, message: Serialized) -> None:
            original(session_id, seq, message)
            self.queue.put_nowait((manager, session_id, seq, message))

        hub.publish_serialized = publish_serialized  # type: ignore[method-assign]

    def leave(self, manager: SessionManager) -> None:
        self.local.pop(manager, None)

    async def _send(self) -> None:
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty():
                batch.append(self.queue.get_nowait())
            for source in {m for m, *_ in batch if m in self.local}:
                await asyncio.to_thread(source.before_publish)  # the store holds what the bus carries
            for source, session_id, seq, message in batch:
                if source not in self.local:
                    continue  # a dead process publishes nothing
                for manager, fan_out in list(self.local.items()):
                    if manager is not source:
                        manager.on_remote(session_id, seq, message)
                        fan_out(session_id, seq, message)


class Member(Console):
    """One console process of the team: its own app, store connection and lease holder."""

    def __init__(self, settings: Settings, db: Path, cluster: MemoryCluster) -> None:
        self.settings = settings
        self.cluster = cluster
        self.app = create_app(settings, store=SqliteStore(db), cluster=cluster)
        self.public_host = settings.public_host
        self.base = f"http://{self.public_host}"
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=self.base,
                                      headers=AUTH, timeout=30)


class InProcessTeam:
    def __init__(self, tmp_path: Path, serve: Callable[..., Awaitable[Served]]) -> None:
        self.tmp_path, self.serve = tmp_path, serve
        self.db = tmp_path / "team.db"
        self.directory = MemoryDirectory()
        self.bus = Bus()
        self.members: list[Member] = []
        self.dead: list[Member] = []

    async def member(self, name: str, served: bool = False) -> Member:
        settings = Settings(data_dir=str(self.tmp_path / name), token=TOKEN, allowed_hosts="testserver",
                            team_secret=TEAM_SECRET,
                            request_idle_timeout_s=20.0, stdio_shutdown_grace_s=2.0)
        cluster = MemoryCluster(name, "", self.directory, ttl_s=LEASE_TTL_S)
        member = Member(settings, self.db, cluster)
        self.members.append(member)
        self.bus.join(member.manager)
        if served:
            where = await self.serve(member)
            cluster.url = f"http://{where.host}"
        await cluster.register()  # once: no heartbeat runs, so nothing registers a killed member again
        return member

    def kill(self, member: Member) -> None:
        """The process vanishes: it writes and publishes nothing more, and its heartbeat stops."""
        store = member.manager.store
        store.append = lambda event: None  # type: ignore[method-assign]
        store.save_session = lambda *args: None  # type: ignore[method-assign]
        self.bus.leave(member.manager)
        self.directory.lapse(member.cluster.process_id)

    async def close(self) -> None:
        for member in self.members:
            with contextlib.suppress(Exception):
                await member.close()
        self.bus.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.bus.task


@pytest.fixture
async def in_process_team(tmp_path: Path, serve: Callable[..., Awaitable[Served]]) -> AsyncIterator[InProcessTeam]:
    made = InProcessTeam(tmp_path, serve)
    yield made
    await made.close()


async def replica_entry(member: Member, session_id: str, key: str) -> dict[str, Any] | None:
    session = member.manager.get(session_id)
    return session.timeline.entries.get(key) if session is not None else None


async def test_a_call_on_the_owner_folds_into_the_other_process_replica(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a")
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    await a.call_tool(sid, "echo", text="from A")
    owner = a.manager.get(sid)

    async def folded() -> bool:
        replica = b.manager.get(sid)
        return replica is not None and replica.timeline.entry_count == owner.timeline.entry_count and all(
            e.get("status") not in ("pending", "running") for e in replica.timeline.entries.values())

    await eventually(folded, what="B's replica to hold every entry A recorded")
    assert b.manager.replicas.is_replica(sid) and not a.manager.replicas.is_replica(sid)
    shown = await b.session(sid)  # a GET is read where it arrives: from the replica
    calls = [e for e in shown["timeline"] if e.get("method") == "tools/call"]
    assert calls and calls[0]["status"] == "complete", calls
    assert shown["status"] == "connected"
    # The replica wrote nothing: every event in the store is A's, each seq once.
    assert b.manager.store.count(sid) == a.manager.store.count(sid)


async def test_a_replica_loading_from_the_store_ignores_what_it_already_folded(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    await a.call_tool(sid, "echo", text="before B existed")
    b = await in_process_team.member("b")  # knows nothing of the session until the next event arrives
    await a.call_tool(sid, "echo", text="after")
    owner = a.manager.get(sid)

    async def same() -> bool:
        replica = b.manager.get(sid)
        return replica is not None and replica.timeline.entry_count == owner.timeline.entry_count
    await eventually(same, what="B's replica, loaded from the store, to match A")
    replica = b.manager.get(sid)
    before = replica.timeline.entry_count
    old = a.manager.store.events(sid, kinds=("exchange_started",))[-1]
    b.manager.on_remote(sid, old.seq, Serialized(old.to_json()))  # late duplicate: already in the store
    assert replica.timeline.entry_count == before


async def test_an_action_posted_to_the_other_process_runs_on_the_owner(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica")
    response = await b.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "via B"},
                                 headers=JSON)
    assert response.status_code == 200, response.text
    assert "via B" in response.text
    assert b.manager.replicas.is_replica(sid), "B must not have taken the session: A is alive"
    assert (await b.session(sid))["owned_by"] == "console process a"
    assert "Connection held by console process a" in (await b.http.get(f"/sessions/{sid}")).text
    assert b.manager.get(sid).client is None, "B opened no connection of its own"
    assert any(e.get("method") == "tools/call" for e in a.manager.get(sid).timeline.entries.values())

    async def shown_on_b() -> bool:
        calls = [e for e in (await b.session(sid))["timeline"] if e.get("method") == "tools/call"]
        return bool(calls) and calls[0]["status"] == "complete"
    await eventually(shown_on_b, what="the forwarded call's entry on B")


async def test_a_viewer_link_forwarded_to_the_owner_stays_a_viewer(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica")
    link = await create_link(b, sid, "viewer")  # made on A (the owner), through B
    token = link["url"].rsplit("/", 1)[1]
    assert a.manager.links.find(token) is not None
    await eventually(lambda: asyncio.sleep(0, b.manager.links.find(token)), what="B to learn of the link")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base,
                                 cookies={LINK_COOKIE: token}) as viewer:
        assert (await viewer.get(f"/sessions/{sid}.json")).status_code == 200
        refused = await viewer.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "no"},
                                    headers=JSON)
    assert refused.status_code == 403, refused.text
    assert not any(e.get("method") == "tools/call" for e in a.manager.get(sid).timeline.entries.values())


async def test_a_forwarded_principal_is_not_believed_without_the_team_signature(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    link = await create_link(a, sid, "viewer")
    token = link["url"].rsplit("/", 1)[1]
    url = f"{a.cluster.url}/sessions/{sid}/tools/call"
    async with httpx.AsyncClient(cookies={LINK_COOKIE: token}) as outsider:
        forged = await outsider.post(url, data={"tool": "echo", "arg.text": "x"},
                                     headers={**JSON, "X-MCP-Console-Principal": "owner"})
        assert forged.status_code == 403, forged.text
        # Not with the owner token either: only the team secret proves a forwarding process.
        as_viewer = await outsider.post(url, data={"tool": "echo", "arg.text": "x"},
                                        headers={**JSON, **AUTH, "X-MCP-Console-Principal": f"link:{link['id']}"})
        assert as_viewer.status_code == 403, as_viewer.text
    assert not any(e.get("method") == "tools/call" for e in a.manager.get(sid).timeline.entries.values())


async def test_an_answer_from_the_owners_address_without_the_team_signature_never_reaches_the_caller(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    """Whatever answers at an owner's address (a process that took the port of one that left) gets the action, but
    its answer (a cookie, an htmx redirect, a page of its own) is not passed on: owners sign their answers."""
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica")
    impostor = Catcher({"Set-Cookie": "mcp_console_link=chosen", "HX-Redirect": "http://x.test/",
                        "Content-Type": "text/html"}, b"<p>all is well</p>")
    try:
        in_process_team.directory.registered["a"] = (impostor.url, in_process_team.directory.clock() + LEASE_TTL_S)
        response = await b.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                     headers=JSON)
    finally:
        impostor.close()
    seen = [{k.lower(): v for k, v in headers.items()} for _method, _path, headers in impostor.requests]
    assert seen and "authorization" not in seen[0], "the owner token never travels between processes"
    assert response.status_code == 502 and "signature" in response.text, response.text
    assert "set-cookie" not in response.headers and "hx-redirect" not in response.headers
    assert "all is well" not in response.text


async def test_takeover_fails_the_dead_owners_request_and_continues_from_the_store(in_process_team: InProcessTeam,
                                                                                   demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    owner = a.manager.get(sid)
    slow = asyncio.create_task(a.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                           data={"tool": "long_job", "arg.seconds": "30"}))

    async def in_flight() -> str | None:
        return next((k for k, e in owner.timeline.entries.items() if e.get("name") == "long_job"
                     and e.get("status") in ("pending", "running")), None)
    key = await eventually(in_flight, what="A's long_job in flight")
    await eventually(lambda: replica_entry(b, sid, key), what="B's replica to show the call in flight")
    a.manager.store.flush()
    in_process_team.kill(a)
    stored = b.manager.store.count(sid)
    assert b.manager.get(sid).timeline.seq < stored, "the replica never saw frames: its seq is behind the store"

    reply = await b.call_tool(sid, "echo", text="after takeover")
    assert reply["ok"] is True, reply
    assert not b.manager.replicas.is_replica(sid) and in_process_team.directory.owners[sid] == "b"
    taken = b.manager.get(sid)
    failed = taken.timeline.entries[key]
    assert failed["status"] == "error" and failed["error"] == TAKEOVER_ERROR, failed
    new = b.manager.store.events(sid, after_seq=stored)
    assert new and new[0].kind == "taken_over", [e.kind for e in new[:3]]
    assert len(b.manager.store.events(sid, before_seq=stored + 1)) == stored, "A's events were overwritten"
    slow.cancel()
    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
        await slow


async def test_takeover_does_not_restart_a_stdio_server(in_process_team: InProcessTeam) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="demo-stdio"))["id"]
    assert (await a.session(sid))["status"] == "connected"
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica")
    a.manager.store.flush()
    in_process_team.kill(a)
    response = await b.http.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                 headers=JSON)
    assert response.status_code == 409, response.text
    taken = b.manager.get(sid)
    assert taken.transport is None, "takeover must not start a stdio process"
    shown = await b.session(sid)
    assert shown["status"] == "closed" and shown["status_message"] == STDIO_NOTE
    reconnect = await b.http.post(f"/sessions/{sid}/reconnect", headers=JSON)  # the owner's deliberate act
    assert reconnect.status_code < 400, reconnect.text
    assert (await b.settled(sid))["status"] == "connected"


async def test_a_graceful_shutdown_releases_the_processs_leases(in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    assert in_process_team.directory.owners.get(sid) == "a"
    await a.manager.shutdown()
    in_process_team.members.remove(a)
    await a.http.aclose()
    assert sid not in in_process_team.directory.owners


async def test_taking_over_an_imported_session_connects_nothing_and_writes_nothing(in_process_team: InProcessTeam,
                                                                                   demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    exported = await a.http.get(f"/sessions/{sid}/export.json")
    imported = await a.http.post("/sessions/import", files={"file": ("s.json", exported.content)}, headers=JSON)
    assert imported.status_code == 200, imported.text
    copy = imported.json()["id"]
    a.manager.store.flush()
    in_process_team.kill(a)
    stored = b.manager.store.count(copy)
    response = await b.http.post(f"/sessions/{copy}/refresh", headers=JSON)
    assert response.status_code == 409, response.text
    taken = b.manager.get(copy)
    assert taken.read_only and taken.client is None
    assert b.manager.store.count(copy) == stored, "an imported session's log stays the file's"


async def test_a_tab_on_the_process_that_takes_over_is_pushed_the_failed_operation_without_reloading(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    slow = asyncio.create_task(a.http.post(f"/sessions/{sid}/tools/call", headers=JSON,
                                           data={"tool": "long_job", "arg.seconds": "30"}))

    async def running_op() -> str | None:
        replica = b.manager.get(sid)
        return next((op for op, rec in replica.state.operations.items() if rec.status == "running"), None) \
            if replica is not None else None
    op = await eventually(running_op, what="B's replica to show the long_job operation running")
    a.manager.store.flush()
    in_process_team.kill(a)
    tab, _ = b.manager.hub.subscribe(sid, None, b.manager.get(sid).timeline.seq)

    assert (await b.call_tool(sid, "echo", text="after takeover"))["ok"] is True
    pushed = []
    while not tab.queue.empty():
        pushed.append(tab.queue.get_nowait()[1])
    failed = [p for p in pushed if f'data-op="{op}"' in p and 'data-status="error"' in p]
    assert failed, "the takeover did not push the failed operation to the open tab"
    assert TAKEOVER_ERROR in failed[0]
    slow.cancel()
    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
        await slow


async def test_a_session_just_created_on_one_process_opens_at_once_on_another_and_stays_the_creators(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    # The create answered before the session's row was stored and before it was claimed: the page it redirects to,
    # asked of another process (a round-robin proxy), was a 404 until the first event crossed the hub, or the
    # other process found it unclaimed and took it over.
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    created = await a.http.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""}, headers=JSON)
    assert created.status_code == 200, created.text
    sid = created.json()["id"]
    seen = await b.http.get(f"/sessions/{sid}.json")
    assert seen.status_code == 200, seen.text
    assert b.manager.replicas.is_replica(sid) and not a.manager.replicas.is_replica(sid)
    owner = await b.cluster.owner_of(sid)
    assert owner is not None and owner.process_id == a.cluster.process_id
    assert (await b.http.get(f"/sessions/{sid}")).status_code == 200


async def test_a_session_id_nobody_created_is_still_a_404_on_a_team_process(in_process_team: InProcessTeam) -> None:
    b = await in_process_team.member("b")
    assert (await b.http.get("/sessions/nosuchsession.json")).status_code == 404
    assert "nosuchsession" not in b.manager.sessions


async def test_a_process_reads_no_session_from_its_store_for_a_caller_who_may_not_see_it(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    # A session another process made is read from the store on its first request here: only for the owner, a
    # link to that session, or a request forwarded with the team's token. A bare principal header, or a link to
    # another session, made the process read its store (a dozen queries a request, on its worker threads).
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    other = (await a.http.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""},
                               headers=JSON)).json()["id"]
    link = await create_link(a, other, "viewer")
    stranger = httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base, timeout=30)
    stranger.cookies.set(LINK_COOKIE, link_token(link))
    try:
        async def link_known() -> bool:  # the link reaches B with its event over the hub
            return (await stranger.get(f"/sessions/{other}.json")).status_code == 200
        await eventually(link_known, what="the link to work on B")
        in_process_team.bus.leave(b.manager)  # from now on B hears of nothing: what it has, it read itself
        sid = (await a.http.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""},
                                 headers=JSON)).json()["id"]
        elsewhere = await stranger.get(f"/sessions/{sid}.json")
        assert elsewhere.status_code in (403, 404), elsewhere.text
        forged = await stranger.get(f"/sessions/{sid}.json", headers={"X-MCP-Console-Principal": "owner"})
        assert forged.status_code in (401, 403), forged.text
    finally:
        await stranger.aclose()
    assert sid not in b.manager.sessions, "B read a session from its store for a caller who may not see it"
    assert (await b.http.get(f"/sessions/{sid}.json")).status_code == 200  # the owner's request reads it


# -- A share link the owner revoked, used on another console process of the in_process_team.
#
# Process B learns of link changes from the events the owner publishes: folding a `link_revoked` into its replica
# re-reads the links. But a replica B loads from the store *because of* that event already holds it, and B used
# to return before re-reading the links: B's registry still held the link as active, and the revoked link kept
# opening the session (page, JSON, websocket) there. The forwarding checks are pinned too: a forged principal
# from a link holder (with no Bearer, or with a made-up one) is refused on the owner.

def _bus_idle(members: InProcessTeam) -> bool:
    """Every published event delivered: the queue is empty and its one reader is waiting on it again."""
    return members.bus.queue.empty() and len(getattr(members.bus.queue, "_getters", ())) == 1


async def _empty_session(member: Any) -> str:
    """An imported session: nothing happens in it but what the test does."""
    imported = await member.http.post("/sessions/import", headers={**JSON, "content-type": "application/json"},
                                      content=b'{"format": "mcp-console-session", "version": 2, "session": '
                                              b'{"id": "x", "created": 1, "meta": {}}, "events": []}')
    assert imported.status_code == 200, imported.text
    sid: str = imported.json()["id"]
    return sid


async def test_a_link_revoked_on_the_owner_stops_opening_the_session_on_another_process(
        in_process_team: InProcessTeam) -> None:
    a = await in_process_team.member("a", served=True)
    # An imported session: nothing happens in it but what the test does, so the revoke is the event that
    # makes B load its replica.
    sid = await _empty_session(a)
    link = await create_link(a, sid, "viewer")
    token = link_token(link)
    await eventually(lambda: asyncio.sleep(0, _bus_idle(in_process_team)), what="the bus to deliver the link's event")
    b = await in_process_team.member("b")  # B's registry knows the link; B holds no replica of the session yet
    assert b.manager.links.find(token) is not None and b.manager.get(sid) is None
    revoked = await a.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
    assert revoked.status_code < 400, revoked.text
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica, loaded by the revoke event")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base,
                                 cookies={LINK_COOKIE: token}) as holder:
        page = await holder.get(f"/sessions/{sid}.json")
    assert page.status_code == 401, page.text


async def test_a_link_holder_cannot_forge_the_principal_header_on_either_process(
        in_process_team: InProcessTeam, demo_url: str) -> None:
    a = await in_process_team.member("a", served=True)
    b = await in_process_team.member("b")
    sid = (await a.connect(kind="http", url=demo_url))["id"]
    link = await create_link(a, sid, "viewer")
    token = link_token(link)
    await eventually(lambda: asyncio.sleep(0, b.manager.links.find(token)), what="B to learn of the link")
    forgeries = [{"X-MCP-Console-Principal": "owner"},
                 {"X-MCP-Console-Principal": "owner", "Authorization": "Bearer not-the-owner-token-at-all"},
                 {"X-MCP-Console-Principal": f"link:{link['id']};presenter", "Authorization": "Bearer x"}]
    for app, base in ((b.app, b.base), (a.app, a.base)):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base,
                                     cookies={LINK_COOKIE: token}) as holder:
            for headers in forgeries:
                call = await holder.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "x"},
                                         headers={**JSON, **headers})
                assert call.status_code in (401, 403), (headers, call.text)
                share = await holder.get(f"/sessions/{sid}/drawers/share", headers=headers)
                assert share.status_code in (401, 403), (headers, share.text)
    assert not any(e.get("method") == "tools/call" for e in a.manager.get(sid).timeline.entries.values())


async def test_an_import_read_on_another_process_while_it_is_still_being_stored_is_read_only_there(
        in_process_team: InProcessTeam) -> None:
    """The file's events reach the store a chunk at a time; its read-only mark used to come only with the
    metadata row written at the end. B, loading the session in between, made a writable replica of it: on
    its next action it claimed the session, connected the target named in the file and wrote to its log."""
    a = await in_process_team.member("a")
    b = await in_process_team.member("b")
    target = {"kind": "http", "url": "http://127.0.0.1:9/mcp"}
    events = [TimelineEvent("x", 1, SessionCreated(target=target), at=1.0),
              TimelineEvent("x", 2, Notice(message="from the file"), at=2.0)]
    rows = [ImportRow(e.seq, e.kind, e.at, e.data, e.data_json) for e in events]
    before = {row["id"] for row in a.manager.store.list_sessions()}
    halfway: dict[str, Any] = {}

    def chunks() -> Iterator[list[ImportRow]]:
        yield rows[:1]
        a.manager.store.flush()  # the first chunk is in the store; the second is not read yet
        ids = set(a.manager.store.orphans()) | {row["id"] for row in a.manager.store.list_sessions()}
        (sid,) = ids - before
        halfway["replica"] = b.manager.replicas.load(sid)
        yield rows[1:]

    imported = a.manager.add(a.manager.imported({"target": target}, 1.0, chunks()))
    replica = halfway["replica"]
    assert replica is not None and replica.id == imported.id
    assert replica.read_only, "B's replica of an import in progress must be read-only"
    stored = b.manager.store.count(imported.id)
    response = await b.http.post(f"/sessions/{imported.id}/refresh", headers=JSON)
    assert response.status_code == 409, response.text
    taken = b.manager.get(imported.id)
    assert taken is not None and taken.read_only and taken.client is None
    assert b.manager.store.count(imported.id) == stored, "an imported session's log stays the file's"


async def _b_hears_no_more(in_process_team: InProcessTeam) -> tuple[Any, Any, str]:
    """A and B, and a session made on A that B knows; then B hears nothing more from the bus (what A does next is
    still on its way when it is asked for on B)."""
    a = await in_process_team.member("a")
    b = await in_process_team.member("b")
    sid = await _empty_session(a)
    await eventually(lambda: asyncio.sleep(0, _bus_idle(in_process_team)),
                     what="the bus to deliver the import's events")
    in_process_team.bus.leave(b.manager)
    return a, b, sid


async def test_a_link_made_on_one_process_opens_at_once_on_another_that_has_not_heard_of_it(
        in_process_team: InProcessTeam, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, sid = await _b_hears_no_more(in_process_team)
    reads: list[str] = []
    read = b.manager.store.link_by_hash
    monkeypatch.setattr(b.manager.store, "link_by_hash", lambda h: reads.append(h) or read(h))
    link = await create_link(a, sid, "viewer")
    token = link_token(link)
    assert b.manager.links.lookup(token) is None
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base) as holder:
        landed = await holder.get(f"/s/{token}")
        assert landed.status_code == 200, landed.text
        assert holder.cookies.get(LINK_COOKIE) == token
        page = await holder.get(f"/sessions/{sid}.json")
        assert page.status_code == 200, page.text
        assert page.json()["id"] == sid
        assert len(reads) == 1  # the link read once, then known (its cookie read nothing more)
        # A made-up token stays unknown, and asking again does not read the store again.
        for _ in range(2):
            made_up = await holder.get("/s/not-a-link-token-at-all")
            assert made_up.status_code == 404 and "unknown" in made_up.text
    assert len(reads) == 2


async def test_a_link_revoked_on_one_process_before_another_heard_of_it_does_not_open_there(
        in_process_team: InProcessTeam) -> None:
    a, b, sid = await _b_hears_no_more(in_process_team)
    link = await create_link(a, sid, "operator")
    token = link_token(link)
    revoked = await a.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
    assert revoked.status_code < 400, revoked.text
    await asyncio.to_thread(a.manager.store.flush)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base,
                                 cookies={LINK_COOKIE: token}) as holder:
        landed = await holder.get(f"/s/{token}")
        assert landed.status_code == 404 and "revoked" in landed.text
        page = await holder.get(f"/sessions/{sid}.json")
    assert page.status_code == 401, page.text
