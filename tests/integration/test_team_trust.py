"""A team trusts only what it has authenticated: the attacks on a team deployment, each made by a client of the
team's Redis that holds Redis's password but not the team secret (on the compose network that was every stdio
server a console starts), against two real console processes on real PostgreSQL and Redis, both with passwords.

- A forged ownership lease (`proc:evil` naming the attacker's server, `owner:<sid>` = evil) used to make the next
  action on the session, a viewer's too, go to that server with the owner token as Bearer.
- A forged bus message used to be folded into the other process's replica and pushed to its tabs (a URL-mode
  dialog pointing anywhere); a forged seq of 10**12 froze that replica.
- Forwarding between processes no longer rests on the owner token: a process with another token still forwards,
  a process with another team secret never does, and a viewer's action is refused where it arrives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import redis
import redis.asyncio as aioredis

from app.console.events import TimelineEvent
from app.console.live_events import ServerRequestSnapshot
from tests.integration.conftest import JSON, LINK_COOKIE, Catcher, link_token
from tests.integration.conftest import eventually as _eventually
from tests.integration.test_team_processes import WAIT_S, client_for, clients, connected_session, twin
from tests.services_redis import RedisServer
from tests.team_processes import ConsoleProcess, Team, TeamSpec

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
__all__ = ["clients"]  # a fixture, shared with test_team_processes
PROMPT_S = 3.0  # what "answered where it arrived" means while the owner process is frozen


@pytest.fixture
def catcher() -> Iterator[Catcher]:
    made = Catcher()
    yield made
    made.close()


def viewer_headers(member: ConsoleProcess, token: str) -> dict[str, str]:
    """A browser holding a viewer link, on `member`: the public name and its port, the link's cookie, its Origin."""
    return {"Host": f"{member.spec.public_host}:{member.port}", "Origin": member.base,
            "Cookie": f"{LINK_COOKIE}={token}", **JSON}


async def test_a_forged_lease_receives_no_action_and_no_credential(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str, redis_url: str, redis_prefix: str,
        catcher: Catcher) -> None:
    owner, other = team.start("a"), team.start("b")
    a, b = client_for(clients, owner), client_for(clients, other)
    sid = await connected_session(a, demo_url)
    await _eventually(lambda: twin(b, sid), WAIT_S, "the replica on B")
    link = (await a.post(f"/sessions/{sid}/links", data={"role": "viewer"})).json()
    intruder = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await intruder.set(f"{redis_prefix}proc:evil", json.dumps({"url": catcher.url}))
        await intruder.set(f"{redis_prefix}owner:{sid}", "evil")
        async with httpx.AsyncClient(base_url=other.internal, timeout=30) as browser:
            viewer = await browser.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "v"},
                                        headers=viewer_headers(other, link_token(link)))
        assert viewer.status_code == 403 and "read-only" in viewer.text, viewer.text
        # The owner's action on B: never sent to the forged address. Until A writes its record back (its next
        # heartbeat) B cannot tell who owns the session and says so; then it forwards to A.
        async def forwarded_to_a() -> httpx.Response | None:
            reply = await b.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "after the lease"})
            assert reply.status_code in (200, 503), reply.text
            return reply if reply.status_code == 200 else None

        reply = await _eventually(forwarded_to_a, WAIT_S, "A to write its ownership record back")
        assert "after the lease" in reply.text
        assert await intruder.get(f"{redis_prefix}owner:{sid}") != "evil"
    finally:
        await intruder.aclose()
    assert catcher.requests == [], "the forged registration received a request"


async def test_forged_bus_messages_reach_no_replica_and_a_huge_seq_freezes_nothing(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str, redis_url: str,
        redis_prefix: str) -> None:
    owner, other = team.start("a"), team.start("b")
    a, b = client_for(clients, owner), client_for(clients, other)
    sid = await connected_session(a, demo_url)
    seen = await _eventually(lambda: twin(b, sid), WAIT_S, "the replica on B")
    dialog = ServerRequestSnapshot(id="forged-dialog", key="x", request_id=1, method="elicitation/create",
                                  params={"mode": "url", "message": "Your session expired, sign in again",
                                          "url": "http://127.0.0.1:9/login", "elicitationId": "e"})
    intruder = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        # The next seq the stream would take: the session may have gone on since the twin was read (its lists
        # arrive after connect), and Redis refuses an id at or below the stream's top.
        top = await intruder.xrevrange(f"{redis_prefix}ev:{sid}", count=1)
        last = max(int(seen["seq"]), int(top[0][0].split("-")[0]) if top else 0)
        forged = [(last + 1, last), (10**12, 10**12 - 1)]
        for seq, prev in forged:
            text = TimelineEvent(session_id=sid, seq=seq, record=dialog, at=time.time()).to_json()
            await intruder.xadd(f"{redis_prefix}ev:{sid}", {"m": text, "p": prev}, id=f"{seq}-0")
            await intruder.xadd(f"{redis_prefix}bus", {"o": "evil", "t": "ev", "s": sid, "q": seq, "p": prev,
                                                       "m": text})
    finally:
        await intruder.aclose()
    reply = await a.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "after the forgery"})
    assert reply.status_code == 200, reply.text

    async def real_call_arrived() -> dict[str, Any] | None:
        s = await twin(b, sid)
        done = [e for e in (s or {}).get("timeline", []) if e.get("method") == "tools/call"
                and e.get("status") == "complete"]
        return s if done else None

    replica = await _eventually(real_call_arrived, WAIT_S, "B's replica to show the real call after the forgeries")
    assert not any(sr.get("id") == "forged-dialog" for sr in replica["server_requests"])
    assert replica["seq"] < 10**12
    log = (team.root / "console-b.log").read_text(errors="replace")
    assert "not signed with this process's team secret" in log and "MCP_CONSOLE_TEAM_SECRET" in log
    assert "Your session expired" not in log, "what a dropped message carried is not logged"


async def test_a_viewers_action_is_refused_where_it_arrives_even_while_the_owner_is_frozen(
        team: Team, clients: dict[str, httpx.AsyncClient], demo_url: str) -> None:
    owner, other = team.start("a"), team.start("b")
    a, b = client_for(clients, owner), client_for(clients, other)
    sid = await connected_session(a, demo_url)
    await _eventually(lambda: twin(b, sid), WAIT_S, "the replica on B")
    link = (await a.post(f"/sessions/{sid}/links", data={"role": "viewer"})).json()
    async with httpx.AsyncClient(base_url=other.internal, timeout=30) as browser:
        await _eventually(lambda: _opens(browser, other, sid, link_token(link)), WAIT_S, "B to know the link")
        owner.proc.send_signal(signal.SIGSTOP)  # a forwarded request would now wait for A
        try:
            started = time.monotonic()
            viewer = await browser.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "v"},
                                        headers=viewer_headers(other, link_token(link)))
            took = time.monotonic() - started
        finally:
            owner.proc.send_signal(signal.SIGCONT)
    assert viewer.status_code == 403 and "read-only" in viewer.text, viewer.text
    assert took < PROMPT_S, f"the viewer's action took {took:.1f} s: it went to the frozen owner"


async def _opens(browser: httpx.AsyncClient, member: ConsoleProcess, sid: str, token: str) -> bool:
    page = await browser.get(f"/sessions/{sid}.json", headers=viewer_headers(member, token))
    return page.status_code == 200


async def test_forwarding_rests_on_the_team_secret_not_on_the_owner_token(
        tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str, demo_url: str) -> None:
    """B with an owner token of its own still forwards to A (the owner token is no longer what proves a process to
    another); C with another team's secret never does: it cannot tell A's registration from a forgery."""
    spec = TeamSpec(pg_database, redis_url, redis_prefix)
    own_token = TeamSpec(pg_database, redis_url, redis_prefix, public_host=spec.public_host,
                         team_secret=spec.team_secret)
    other_team = TeamSpec(pg_database, redis_url, redis_prefix, token=spec.token, public_host=spec.public_host)
    teams = [Team(spec, tmp_path), Team(own_token, tmp_path), Team(other_team, tmp_path)]
    try:
        owner, b_member, c_member = teams[0].start("a"), teams[1].start("b"), teams[2].start("c")
        async with httpx.AsyncClient(base_url=owner.internal, timeout=30,
                                     headers={"Authorization": f"Bearer {spec.token}", **JSON}) as a, \
                httpx.AsyncClient(base_url=b_member.internal, timeout=30,
                                  headers={"Authorization": f"Bearer {own_token.token}", **JSON}) as b, \
                httpx.AsyncClient(base_url=c_member.internal, timeout=30,
                                  headers={"Authorization": f"Bearer {spec.token}", **JSON}) as c:
            sid = await connected_session(a, demo_url)
            await _eventually(lambda: twin(b, sid), WAIT_S, "the replica on B")
            via_b = await b.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "via b"})
            assert via_b.status_code == 200 and "via b" in via_b.text, via_b.text
            via_c = await c.post(f"/sessions/{sid}/tools/call", data={"tool": "echo", "arg.text": "via c"})
            assert via_c.status_code == 503, via_c.text
            calls = [e for e in (await twin(a, sid) or {})["timeline"] if e.get("method") == "tools/call"]
            assert len(calls) == 1, "only B's call reached the owner"
    finally:
        for made in teams:
            made.stop()


def test_the_teams_redis_refuses_a_client_without_its_password(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.open_url, socket_timeout=5)
    try:
        with pytest.raises(redis.AuthenticationError):
            client.set("mcp-console:proc:evil", "{}")
    finally:
        client.close()


def serve(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`mcp-console serve` as a team process would be started, with `env` on top; it is expected to refuse."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CONSOLE_")}
    team_env = {"MCP_CONSOLE_TOKEN": "trust-owner-token-0123456789", "MCP_CONSOLE_TEAM_SECRET": "t" * 40,
                "MCP_CONSOLE_PUBLIC_HOST": "mcp-trusttrusttrust.localhost", **env}
    return subprocess.run([sys.executable, "-m", "app", "serve", "--port", "0", "--data-dir", str(tmp_path / "d")],
                          cwd=ROOT, env={**base, **team_env}, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_a_team_process_refuses_a_redis_that_takes_clients_without_a_password(
        tmp_path: Path, pg_database: str) -> None:
    open_redis = RedisServer(password=False).start()
    try:
        refused = serve(tmp_path, MCP_CONSOLE_DATABASE_URL=pg_database,
                        MCP_CONSOLE_REDIS_URL=f"redis://:any-password@127.0.0.1:{open_redis.port}/0")
    finally:
        open_redis.close()
    assert refused.returncode != 0 and "has no password set" in refused.stderr, refused.stderr


def test_a_team_process_refuses_a_password_redis_or_postgresql_rejects_in_one_line(
        tmp_path: Path, pg_database: str, redis_server: RedisServer) -> None:
    wrong_pg = pg_database.replace(f":{urlsplit(pg_database).password}@", ":not-the-password@")
    refused = serve(tmp_path, MCP_CONSOLE_DATABASE_URL=wrong_pg,
                    MCP_CONSOLE_REDIS_URL=f"redis://:not-the-password@127.0.0.1:{redis_server.port}/0")
    assert refused.returncode != 0
    assert "Redis refused the password" in refused.stderr, refused.stderr
    assert "PostgreSQL at database_url did not let this process in" in refused.stderr
    assert "Traceback" not in refused.stderr and "not-the-password" not in refused.stderr


def test_a_process_started_without_the_teams_redis_refuses_the_teams_database(
        team: Team, tmp_path: Path, pg_database: str) -> None:
    """One forgotten export: a console on the team's database but with no Redis ran as if alone, and reconnecting
    a session another process owned made two owners of it (two operations under one id in the store)."""
    team.start("a")  # marks the database as a team's
    refused = serve(tmp_path, MCP_CONSOLE_DATABASE_URL=pg_database, MCP_CONSOLE_TEAM_SECRET="")
    assert refused.returncode != 0 and "This database is a team's" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
