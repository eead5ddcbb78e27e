"""Attack, on a real team (two `python -m app serve` processes, PostgreSQL, Redis): a viewer link's websocket on
the process that does not own the session, after the owner revoked the link.

The open socket on B must be cut, and a new one on B refused, as on the owner; the viewer's page on B says the
link was revoked. A browser's view: Host is the team's public name and B's port, the link's cookie rides along.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.integration.conftest import JSON, LINK_COOKIE, link_token, ws_closed
from tests.integration.conftest import eventually as _eventually
from tests.integration.test_team_processes import WAIT_S, connected_session, twin
from tests.team_processes import ConsoleProcess, Team, TeamSpec

pytestmark = pytest.mark.slow


@pytest.fixture
def team(tmp_path: Path, pg_database: str, redis_url: str, redis_prefix: str) -> Iterator[Team]:
    made = Team(TeamSpec(pg_database, redis_url, redis_prefix), tmp_path)
    yield made
    made.stop()


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
