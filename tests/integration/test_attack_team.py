"""Attack: a share link the owner revoked, used on another console process of the team.

Process B learns of link changes from the events the owner publishes: folding a `link_revoked` into its replica
re-reads the links. But a replica B loads from the store *because of* that event already holds it, and B used
to return before re-reading the links: B's registry still held the link as active, and the revoked link kept
opening the session (page, JSON, websocket) there. The forwarding checks are pinned too: a forged principal
from a link holder (with no Bearer, or with a made-up one) is refused on the owner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.console.events import Notice, SessionCreated, TimelineEvent
from app.console.store import ImportRow
from tests.integration.conftest import JSON, LINK_COOKIE, create_link, eventually, link_token
from tests.integration.test_team_routing import Team, team  # noqa: F401  (the fixture)


def _bus_idle(members: Team) -> bool:
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
        team: Team) -> None:  # noqa: F811
    a = await team.member("a", served=True)
    # An imported session: nothing happens in it but what the test does, so the revoke is the event that
    # makes B load its replica.
    sid = await _empty_session(a)
    link = await create_link(a, sid, "viewer")
    token = link_token(link)
    await eventually(lambda: asyncio.sleep(0, _bus_idle(team)), what="the bus to deliver the link's event")
    b = await team.member("b")  # B's registry knows the link; B holds no replica of the session yet
    assert b.manager.links.find(token) is not None and b.manager.get(sid) is None
    revoked = await a.http.post(f"/sessions/{sid}/links/{link['id']}/revoke", headers=JSON)
    assert revoked.status_code < 400, revoked.text
    await eventually(lambda: asyncio.sleep(0, b.manager.get(sid)), what="B's replica, loaded by the revoke event")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=b.app), base_url=b.base,
                                 cookies={LINK_COOKIE: token}) as holder:
        page = await holder.get(f"/sessions/{sid}.json")
    assert page.status_code == 401, page.text


async def test_a_link_holder_cannot_forge_the_principal_header_on_either_process(
        team: Team, demo_url: str) -> None:  # noqa: F811
    a = await team.member("a", served=True)
    b = await team.member("b")
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
        team: Team) -> None:  # noqa: F811
    """The file's events reach the store a chunk at a time; its read-only mark used to come only with the
    metadata row written at the end. B, loading the session in between, made a writable replica of it: on
    its next action it claimed the session, connected the target named in the file and wrote to its log."""
    a = await team.member("a")
    b = await team.member("b")
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


async def _b_hears_no_more(team: Team) -> tuple[Any, Any, str]:  # noqa: F811
    """A and B, and a session made on A that B knows; then B hears nothing more from the bus (what A does next is
    still on its way when it is asked for on B)."""
    a = await team.member("a")
    b = await team.member("b")
    sid = await _empty_session(a)
    await eventually(lambda: asyncio.sleep(0, _bus_idle(team)), what="the bus to deliver the import's events")
    team.bus.leave(b.manager)
    return a, b, sid


async def test_a_link_made_on_one_process_opens_at_once_on_another_that_has_not_heard_of_it(
        team: Team, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    a, b, sid = await _b_hears_no_more(team)
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
        team: Team) -> None:  # noqa: F811
    a, b, sid = await _b_hears_no_more(team)
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
