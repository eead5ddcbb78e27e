"""The team's reverse proxy for real: nginx with `deploy/nginx-team.conf` (the file docker-compose mounts)
in front of two console processes on one PostgreSQL and one Redis. No Docker engine runs in CI, so the same
configuration runs here with its upstream names pointed at the two processes on 127.0.0.1.

Round-robin sends consecutive requests to alternate processes: calls through the proxy reach the session's owner
whichever process nginx picks, and a websocket upgraded through the proxy is fed live.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import JSON, ws_collect
from tests.integration.conftest import eventually as _eventually
from tests.integration.test_team_processes import connected_session, team, twin
from tests.services_pg import unavailable
from tests.team_processes import ROOT, Team, free_port

pytestmark = pytest.mark.slow
__all__ = ["team"]  # the two-process fixture, shared with test_team_processes
WAIT_S = 20.0
CONF = ROOT / "deploy" / "nginx-team.conf"


def proxy_conf(site: str, root: Path, port: int, upstreams: dict[str, int]) -> str:
    """The compose file's nginx site, with its upstream names and listen port pointed at this machine."""
    for name, upstream_port in upstreams.items():
        site, count = re.subn(rf"\bserver {name}:8780\b", f"server 127.0.0.1:{upstream_port}", site)
        assert count == 1, f"{name} is not an upstream of {CONF}"
    site, count = re.subn(r"\blisten 8780;", f"listen 127.0.0.1:{port};", site)
    assert count == 1, f"{CONF} does not listen on 8780"
    temp = " ".join(f"{kind}_temp_path {root / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                     "scgi"))
    return (f"daemon off;\nworker_processes 1;\npid {root / 'nginx.pid'};\nerror_log {root / 'error.log'} warn;\n"
            f"events {{ worker_connections 256; }}\nhttp {{\naccess_log off;\n{temp}\n{site}\n}}\n")


@pytest.fixture
def proxy(team: Team, tmp_path: Path) -> Iterator[str]:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        unavailable("no nginx binary: install the Debian package nginx")
    a, b = team.start("a"), team.start("b")
    root = tmp_path / "nginx"
    root.mkdir()
    port = free_port()
    conf = root / "nginx.conf"
    conf.write_text(proxy_conf(CONF.read_text(), root, port, {"console-a": a.port, "console-b": b.port}))
    check = subprocess.run([str(nginx), "-t", "-c", str(conf), "-p", str(root)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    process = subprocess.Popen([str(nginx), "-c", str(conf), "-p", str(root)], stderr=subprocess.PIPE)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
async def via_proxy(team: Team, proxy: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"http://{proxy}", timeout=30,
                                 headers={"Authorization": f"Bearer {team.spec.token}", **JSON}) as client:
        async def up() -> bool:
            try:
                return (await client.get("/sessions.json")).status_code == 200
            except httpx.TransportError:
                return False

        await _eventually(up, WAIT_S, "nginx to answer for the consoles")
        yield client


async def test_calls_through_the_proxy_reach_the_owner_whichever_console_nginx_picks(
        team: Team, via_proxy: httpx.AsyncClient, demo_url: str) -> None:
    session_id = await connected_session(via_proxy, demo_url)
    for n in range(6):  # round-robin: half of these land on the process that does not own the session
        reply = await via_proxy.post(f"/sessions/{session_id}/tools/call",
                                     data={"tool": "echo", "arg.text": f"through nginx {n}"})
        assert reply.status_code == 200, reply.text
        assert f"through nginx {n}" in reply.text

    async def all_six() -> bool:  # the process nginx asks next may be a replica a few events behind the owner
        seen = await twin(via_proxy, session_id)
        calls = [e for e in (seen or {}).get("timeline", [])
                 if e.get("kind") == "operation" and e.get("method") == "tools/call" and e.get("status") == "complete"]
        return len(calls) == 6

    await _eventually(all_six, WAIT_S, "all six calls on the timeline, whichever process answers")


async def test_a_websocket_upgraded_through_the_proxy_is_fed_live(
        team: Team, proxy: str, via_proxy: httpx.AsyncClient, demo_url: str) -> None:
    session_id = await connected_session(via_proxy, demo_url)
    seen = await twin(via_proxy, session_id)
    assert seen is not None
    headers = {"Authorization": f"Bearer {team.spec.token}"}
    async with connect(f"ws://{proxy}/sessions/{session_id}/ws", additional_headers=headers) as ws:
        await ws.send(json.dumps({"last_seq": seen["seq"]}))
        reply = await via_proxy.post(f"/sessions/{session_id}/tools/call",
                                     data={"tool": "echo", "arg.text": "pushed through nginx"})
        assert reply.status_code == 200, reply.text
        await ws_collect(ws, lambda frames: any("pushed through nginx" in f for f in frames),
                         "the echo call's entry over the proxied websocket", timeout=WAIT_S)
