"""The connection doctor: when a connect fails, an ordered check list that says which step failed and what to do.

HTTP: name resolution → TCP → TLS → the HTTP answer to a real first request (status, content type, a 401/403's
challenge) → CORS for browser hosts (a warning at most) → `server/discover` → `initialize` → the era the console
would choose. stdio: the command found → the process started → its first stdout line → stderr → the exit code →
`server/discover` → `initialize` → the era. Each step is a small function (net.py, stdio.py, protocol.py) returning
a `Check`; once one fails the rest are skipped with the reason (checks.py). The requests go through the console's
own client, transports and connect machine: the doctor implements no protocol of its own.

It sends only what a connect sends (plus the CORS step's preflight), records every wire event in its `Visit`, and
leaves nothing running: every client it made is closed before `diagnose` returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

import httpx

from app.mcp.doctor import net, protocol, stdio
from app.mcp.doctor.checks import Check, Planned, Report, Status, Visit, run_steps
from app.mcp.http import redact_url
from app.mcp.secret import Secret, reveal
from app.mcp.stdio import StdioTransport
from app.mcp.upstream import upstream_client
from app.mcp.wire import WireEvent

__all__ = ["HTTP_PLAN", "STDIO_PLAN", "Check", "Report", "Status", "diagnose"]
DEFAULT_TIMEOUT_S = 10.0

_PROTOCOL = [Planned(protocol.DISCOVER, protocol.discover), Planned(protocol.INITIALIZE, protocol.initialize),
             Planned(protocol.ERA, protocol.era)]
HTTP_PLAN = [Planned(net.RESOLVE, net.resolve), Planned(net.TCP, net.tcp), Planned(net.TLS, net.tls),
             Planned(net.HTTP, net.http_answer), Planned(net.CORS, net.cors), *_PROTOCOL]
STDIO_PLAN = [Planned(stdio.COMMAND, stdio.command), Planned(stdio.STARTED, stdio.started),
              Planned(stdio.FIRST_LINE, stdio.first_line), Planned(stdio.STDERR, stdio.stderr, always=True),
              Planned(stdio.EXIT, stdio.exit_code, always=True), *_PROTOCOL]


async def diagnose(*, url: str | Secret = "", argv: Sequence[str | Secret] = (),
                   headers: Mapping[str, str | Secret] | None = None, cwd: str | Secret | None = None,
                   env: dict[str, str] | None = None, era: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S,
                   http: httpx.AsyncClient | None = None, events: list[WireEvent] | None = None) -> Report:
    """Run the check list against an HTTP `url` or a stdio `argv`. `http`: the upstream client to send with (the
    console passes its own; None: one made for this run). `events`: where the run's wire events go, when the caller
    wants them."""
    is_stdio = bool(argv)
    own = http is None and not is_stdio
    client = upstream_client() if own else http
    visit = Visit(stdio=is_stdio, timeout_s=timeout_s, url=url, headers=dict(headers or {}), http=client,
                  argv=list(argv), cwd=None if cwd is None else reveal(cwd), env=env, era=era,
                  events=events if events is not None else [])
    try:
        checks = await run_steps(visit, STDIO_PLAN if is_stdio else HTTP_PLAN)
    finally:
        for made in reversed(visit.clients):
            with contextlib.suppress(Exception):
                await made.close()
        if own and client is not None:
            await client.aclose()
    shown = StdioTransport(argv, visit.record).target if is_stdio else redact_url(reveal(url))
    return Report(shown, "stdio" if is_stdio else "http", tuple(checks))
