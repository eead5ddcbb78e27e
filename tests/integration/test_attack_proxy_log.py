"""The team profile's nginx (`deploy/nginx-team.conf`) writes an access log; what it must never write there.

The compose file runs the official nginx image with this site, whose default log format is the request line and
the Referer: the launch URL carries the owner token (`/?token=…`), a share link is `/s/<token>`, and every page
opened from a share link's landing page is sent with that landing page as its Referer (same-origin policy).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from tests.integration.conftest import TOKEN, create_link, eventually, free_port, link_token
from tests.integration.test_team_proxy import CONF, proxy_conf
from tests.services_pg import unavailable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Console, Served

    Serve = Callable[..., Awaitable[Served]]

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
