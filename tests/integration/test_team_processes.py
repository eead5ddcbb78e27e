"""Console processes of one team as real `python -m app serve` subprocesses on one PostgreSQL and one Redis,
driven over real HTTP and websockets with the owner token (Bearer): delete everywhere, a websocket on a process
that does not own the session, the owner's name and death shown on pages before any action."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from app.console.events import Notice, SessionCreated, TimelineEvent
from tests.integration.conftest import JSON, LINK_COOKIE, link_token, ws_closed, ws_collect
from tests.integration.conftest import eventually as _eventually
from tests.team_processes import ConsoleProcess, Team, TeamSpec

pytestmark = pytest.mark.slow
WAIT_S = 20.0


@pytest.fixture
async def clients(team: Team) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    made: dict[str, httpx.AsyncClient] = {}
    yield made
    for client in made.values():
        await client.aclose()


def client_for(clients: dict[str, httpx.AsyncClient], member: ConsoleProcess) -> httpx.AsyncClient:
    if member.name not in clients:
        clients[member.name] = httpx.AsyncClient(
            base_url=member.internal, timeout=30, headers={"Authorization": f"Bearer {member.spec.token}", **JSON})
    return clients[member.name]


async def twin(client: httpx.AsyncClient, session_id: str) -> dict[str, Any] | None:
    response = await client.get(f"/sessions/{session_id}.json")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def connected_session(client: httpx.AsyncClient, demo_url: str) -> str:
    response = await client.post("/sessions", data={"kind": "http", "url": demo_url, "headers": ""})
    assert response.status_code == 200, response.text
    session_id = str(response.json()["id"])

    async def listed() -> bool:
        s = await twin(client, session_id)
        return s is not None and s["status"] == "connected" and any(
            e.get("method") == "tools/list" and e.get("status") == "ok" for e in s["timeline"])

    await _eventually(listed, WAIT_S, "the session to connect and list its tools")
    return session_id


async def test_a_delete_sent_to_b_removes_the_session_on_the_owner_and_on_every_other_process(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str) -> None:
    a, b, c = (client_for(clients, team.start(name)) for name in ("a", "b", "c"))
    session_id = await connected_session(a, demo_url)
    for replica in (b, c):
        await _eventually(lambda r=replica: twin(r, session_id), WAIT_S, "the replica on another process")  # type: ignore[misc]

    deleted = await b.post(f"/sessions/{session_id}/delete", follow_redirects=False)
    assert deleted.status_code == 303, deleted.text  # forwarded to A, which deleted it

    for name, client in (("a", a), ("b", b), ("c", c)):
        async def gone(cl: httpx.AsyncClient = client) -> bool:
            return await twin(cl, session_id) is None

        await _eventually(gone, WAIT_S, f"the session to be gone on process {name}")
    listing = await c.get("/sessions.json")
    assert session_id not in listing.text


async def test_a_websocket_on_a_process_that_does_not_own_the_session_is_accepted_and_fed_live(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str) -> None:
    owner, other = team.start("a"), team.start("b")
    a, b = client_for(clients, owner), client_for(clients, other)
    session_id = await connected_session(a, demo_url)
    seen = await _eventually(lambda: twin(b, session_id), WAIT_S, "the replica on B")
    url = f"ws://127.0.0.1:{other.port}/sessions/{session_id}/ws"
    async with connect(url, additional_headers={"Authorization": f"Bearer {owner.spec.token}"}) as ws:
        await ws.send(json.dumps({"last_seq": seen["seq"]}))
        reply = await a.post(f"/sessions/{session_id}/tools/call",
                             data={"tool": "echo", "arg.text": "via the other socket"})
        assert reply.status_code == 200, reply.text
        await ws_collect(ws, lambda frames: any("via the other socket" in f for f in frames),
                         "the echo call made on A", timeout=WAIT_S)


async def test_a_replica_page_names_the_owner_before_any_action_and_says_when_the_owner_died(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str) -> None:
    owner, other = team.start("a"), team.start("b")
    a, b = client_for(clients, owner), client_for(clients, other)
    session_id = await connected_session(a, demo_url)
    seen = await _eventually(lambda: twin(b, session_id), WAIT_S, "the replica on B")
    assert seen["owned_by"] and seen["owned_by"].startswith("console process ") and not seen["owner_gone"]
    page = await b.get(f"/sessions/{session_id}", headers={"Accept": "text/html"})
    assert "Connection held by console process" in page.text

    owner.kill()

    async def gone() -> dict[str, Any] | None:
        s = await twin(b, session_id)
        return s if s is not None and s["owner_gone"] else None

    after = await _eventually(gone, WAIT_S, "B to say the owner process is gone")
    assert after["owned_by"] is None
    page = await b.get(f"/sessions/{session_id}", headers={"Accept": "text/html"})
    assert "has stopped" in page.text and "next action here takes the session over" in page.text


async def test_an_action_sent_to_b_after_the_owner_was_killed_takes_the_session_over_at_once(
        tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str, demo_url: str) -> None:
    """The owner's lease outlives it (30 s here): a refused connection to its signed address is proof enough that
    it is dead, so the process that received the action takes the session over on that very action, instead of
    answering 503 until the lease runs out."""
    made = Team(TeamSpec(pg_database, redis_url, redis_prefix, lease_ttl_s=30.0), tmp_path)
    try:
        owner, other = made.start("a"), made.start("b")
        auth = {"Authorization": f"Bearer {owner.spec.token}", **JSON}
        async with httpx.AsyncClient(base_url=owner.internal, headers=auth, timeout=30) as a, \
                httpx.AsyncClient(base_url=other.internal, headers=auth, timeout=30) as b:
            session_id = await connected_session(a, demo_url)
            await _eventually(lambda: twin(b, session_id), WAIT_S, "the replica on B")
            owner.kill()
            started = time.monotonic()
            reply = await b.post(f"/sessions/{session_id}/tools/call",
                                 data={"tool": "echo", "arg.text": "taken over at once"})
            took = time.monotonic() - started
            assert reply.status_code == 200, reply.text
            assert "taken over at once" in reply.text
            assert took < 10.0, f"{took:.1f} s: the action waited for the lease"
            seen = await twin(b, session_id)
            assert seen is not None and seen["owned_by"] is None and not seen["owner_gone"], "B holds it now"
    finally:
        made.stop()


# -- On a real team (two `python -m app serve` processes, PostgreSQL, Redis): a viewer link's websocket on
# the process that does not own the session, after the owner revoked the link.
#
# The open socket on B must be cut, and a new one on B refused, as on the owner; the viewer's page on B says the
# link was revoked. A browser's view: Host is the team's public name and B's port, the link's cookie rides along.

def _as_viewer(member: ConsoleProcess, token: str) -> dict[str, str]:
    return {"Origin": member.base, "Cookie": f"{LINK_COOKIE}={token}"}


def _page_as_viewer(member: ConsoleProcess, token: str) -> dict[str, str]:
    """A browser's GET on B: the public name and B's port as Host, the link's cookie, no owner token."""
    return {**_as_viewer(member, token), "Host": f"{member.spec.public_host}:{member.port}"}


async def test_a_revoked_viewer_links_websocket_on_the_other_process_is_cut_and_not_reopened(
        team: Team, demo_url: str) -> None:
    owner, other = team.start("a"), team.start("b")
    auth = {"Authorization": f"Bearer {owner.spec.token}", **JSON}
    async with httpx.AsyncClient(base_url=owner.internal, headers=auth, timeout=30) as a, \
            httpx.AsyncClient(base_url=other.internal, headers=auth, timeout=30) as b, \
            httpx.AsyncClient(base_url=other.internal, timeout=30) as browser:
        sid = await connected_session(a, demo_url)
        seen = await _eventually(lambda: twin(b, sid), WAIT_S, "the replica on B")
        link = (await a.post(f"/sessions/{sid}/links", data={"role": "viewer"})).json()
        token = link_token(link)
        url = f"ws://{other.spec.public_host}:{other.port}/sessions/{sid}/ws"
        via = {"host": "127.0.0.1", "port": other.port}  # Python does not resolve *.localhost

        async def opens_on_b() -> bool:
            page = await browser.get(f"/sessions/{sid}.json", headers=_page_as_viewer(other, token))
            return page.status_code == 200

        await _eventually(opens_on_b, WAIT_S, "B to know the new link")
        ws = await connect(url, additional_headers=_as_viewer(other, token), open_timeout=WAIT_S, **via)
        await ws.send(json.dumps({"last_seq": seen["seq"]}))
        revoked = await a.post(f"/sessions/{sid}/links/{link['id']}/revoke")
        assert revoked.status_code == 200, revoked.text
        _, closed = await ws_closed(ws, timeout=WAIT_S)
        assert closed is not None
        with pytest.raises((InvalidStatus, ConnectionClosed)):
            async with connect(url, additional_headers=_as_viewer(other, token), open_timeout=WAIT_S, **via) as again:
                await again.send(json.dumps({"last_seq": 0}))
                await again.recv()
        page = await browser.get(f"/sessions/{sid}.json", headers=_page_as_viewer(other, token))
        assert page.status_code == 401 and "revoked" in page.text


# -- On a real team (two `python -m app serve` processes, PostgreSQL, Redis): a replica of an import that
# was loaded while the import was still being stored.
#
# An import publishes none of its events (they go to the store a chunk at a time). Process B, starting while A
# stored a big file, loaded its replica from the part already there; the end of the import told nobody, so B showed
# a part of the file until it restarted. Here the import is held half way by a lock the test takes on the events
# table (reads go on, writes wait), B starts and loads the half, then the lock goes.

NOTICES = 20_000  # enough chunks (2,000 events each) that the test takes its lock long before the last one


def _file() -> bytes:
    target = {"kind": "http", "url": "http://127.0.0.1:9/mcp"}
    events = [TimelineEvent("x", 1, SessionCreated(target=target), at=1.0)]
    events += [TimelineEvent("x", seq, Notice(message=f"notice {seq}"), at=float(seq))
               for seq in range(2, NOTICES + 2)]
    head = {"format": "mcp-console-session", "version": 2, "session": {"id": "x", "created": 1.0, "meta": {}}}
    return (json.dumps(head)[:-1] + ', "events": [' + ", ".join(e.to_json() for e in events) + "]}").encode()


def _importing(database: str) -> str | None:
    """The id of the session whose import has stored some events and not finished, if there is one yet."""
    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute("SELECT s.id FROM sessions s WHERE s.meta LIKE '%\"importing\": true%' "
                           "AND EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id)").fetchone()
    return None if row is None else str(row[0])


def _seq(seen: dict[str, Any] | None) -> int | None:
    """How far into the file a process's copy of the session goes (the file's seqs run 1, 2, 3, ...)."""
    return None if seen is None else int(seen["seq"])


async def test_a_replica_loaded_half_way_through_an_import_is_whole_once_the_import_ends(
        team: Team, pg_database: str) -> None:
    a = team.start("a")
    auth = {"Authorization": f"Bearer {a.spec.token}", **JSON}
    body = _file()
    async with httpx.AsyncClient(base_url=a.internal, headers=auth, timeout=60) as to_a:
        upload = asyncio.create_task(to_a.post("/sessions/import", content=body,
                                               headers={"content-type": "application/json"}))
        sid = await _eventually(lambda: asyncio.to_thread(_importing, pg_database), WAIT_S, "the import half way")
        hold = await asyncio.to_thread(psycopg.connect, pg_database)
        try:
            # Writes to the events table wait from here; B's reads do not.
            await asyncio.to_thread(hold.execute, "LOCK TABLE events IN EXCLUSIVE MODE")
            b = await asyncio.to_thread(team.start, "b")  # loads every stored session as a replica at start
            async with httpx.AsyncClient(base_url=b.internal, headers=auth, timeout=60) as to_b:
                half = _seq(await twin(to_b, sid))
                assert half is not None and half < NOTICES + 1, f"B loaded up to seq {half}: the import was done"
                assert not upload.done(), "the import ended while it was held"
                await asyncio.to_thread(hold.rollback)
                done = await upload
                assert done.status_code == 200, done.text
                whole = _seq(await twin(to_a, sid))
                assert whole is not None and whole > half

                async def whole_on_b() -> bool:
                    return _seq(await twin(to_b, sid)) == whole

                await _eventually(whole_on_b, WAIT_S, f"B's replica to go up to seq {whole} as A's does")
        finally:
            await asyncio.to_thread(hold.close)
