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
from typing import TYPE_CHECKING

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.integration.conftest import JSON, TOKEN, create_link, eventually, free_port, link_token, ws_collect
from tests.integration.conftest import eventually as _eventually
from tests.integration.test_team_processes import connected_session, twin
from tests.processes import stop
from tests.services_pg import unavailable
from tests.team_processes import ROOT, Team

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    Serve = Callable[..., Awaitable[Served]]


pytestmark = pytest.mark.slow
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
        stop(process)


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


# -- The team profile's nginx (`deploy/nginx-team.conf`) writes an access log; what it must never write there.
#
# The compose file runs the official nginx image with this site, whose default log format is the request line and
# the Referer: the launch URL carries the owner token (`/?token=…`), a share link is `/s/<token>`, and every page
# opened from a share link's landing page is sent with that landing page as its Referer (same-origin policy).

LOG = "/var/log/nginx/access.log"  # the image's log (a link to its stdout: `docker compose logs proxy`)


async def test_the_team_proxys_access_log_never_holds_the_owner_token_or_a_share_links_token(
        console: Console, demo_url: str, serve: Serve, tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        unavailable("no nginx binary: install the Debian package nginx")
    s = await console.connect(kind="http", url=demo_url)
    link = await create_link(console, str(s["id"]), "viewer")
    served = await serve(console)
    root = tmp_path / "nginx"
    root.mkdir()
    log = root / "access.log"
    site = CONF.read_text()
    # The image's default (nginx.conf's http block) when the site says nothing; the site's own log when it does.
    wrapped = proxy_conf(site, root, port := free_port(), {"console-a": served.port, "console-b": served.port})
    if LOG in site:
        wrapped = wrapped.replace(LOG, str(log))
    else:
        wrapped = wrapped.replace("access_log off;", f"access_log {log};")  # nginx's default "combined" format
    conf = root / "nginx.conf"
    conf.write_text(wrapped)
    check = subprocess.run([nginx, "-t", "-c", str(conf), "-p", str(root)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    process = subprocess.Popen([nginx, "-c", str(conf), "-p", str(root)], stderr=subprocess.PIPE)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30,
                                     headers={"Host": served.public}) as browser:
            async def up() -> bool:
                try:
                    return (await browser.get("/static/console.css")).status_code == 200
                except httpx.TransportError:
                    return False

            await eventually(up, what="nginx to answer")
            launched = await browser.get(f"/?token={TOKEN}&next=/")
            assert launched.status_code == 303, launched.text
            landed = await browser.get(f"/s/{link_token(link)}")
            assert landed.status_code == 200, landed.text
            opened = await browser.get(f"/sessions/{s['id']}",
                                       headers={"Referer": f"http://{served.public}/s/{link_token(link)}"})
            assert opened.status_code == 200, opened.text

        async def logged() -> list[str] | None:  # nginx writes a line once its answer is out
            found = log.read_text().splitlines() if log.exists() else []
            return found if any(f"/sessions/{s['id']} " in line for line in found) else None

        lines = await eventually(logged, what="the requests in the access log")
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert len(lines) >= 4, lines  # the requests are still logged
    text = "\n".join(lines)
    assert TOKEN not in text and link_token(link) not in text, text
    assert not re.search(r"token=[^&\s\"]", text), text
