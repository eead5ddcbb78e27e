"""Console processes of one team as real `python -m app serve` subprocesses on one PostgreSQL and one Redis,
driven over real HTTP and websockets with the owner token (Bearer): delete everywhere, a websocket on a process
that does not own the session, the owner's name and death shown on pages before any action."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import JSON, ws_collect
from tests.integration.conftest import eventually as _eventually
from tests.team_processes import ConsoleProcess, Team, TeamSpec

pytestmark = pytest.mark.slow
WAIT_S = 20.0


@pytest.fixture
def team(tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str) -> Iterator[Team]:
    made = Team(TeamSpec(pg_database, redis_url, redis_prefix), tmp_path)
    yield made
    made.stop()


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
