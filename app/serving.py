"""`mcp-console serve` and `demo`: the console's web app under uvicorn, its launch URL printed once it is bound.

Apart from app/cli.py so that the headless commands (`call`, `check`) and the argument checks load no web stack.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn

from app.console.oauth import stop_waiting_flows
from app.console.session import Target
from app.console.store import mask_url
from app.hardening import keep_secrets_from_children
from app.process_tuning import tune_for_serving
from app.settings import Settings
from app.web.app import create_app
from app.web.render import compile_all
from app.web.wire_writes import CoalescingHttpToolsProtocol

# A tab sends its websocket one message, a hello of a few bytes (app/web/ws.py); uvicorn's default of 16 MiB let
# every socket make the console buffer and decode that much, twenty sockets per share link.
WS_MAX_MESSAGE_BYTES = 4096


class LaunchingServer(uvicorn.Server):
    """Prints the launch URL once the socket is bound, so nobody opens a URL that does not answer yet."""

    def __init__(self, config: uvicorn.Config, launch: Any) -> None:
        super().__init__(config)
        self._launch = launch

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Before waiting for the requests in flight: those that wait on a person (an OAuth flow paused before a
        # step, an authorization page left open) end now, as the sessions' close would end them after the wait.
        stop_waiting_flows()
        await super().shutdown(sockets=sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            port = next((s.getsockname()[1] for srv in getattr(self, "servers", []) for s in srv.sockets),
                        self.config.port)
            self._launch(port)


GRACEFUL_SHUTDOWN_S = 10


def serve(settings: Settings, initial: list[Target] | None = None) -> None:
    keep_secrets_from_children()  # before anything is started: see app/hardening.py
    app = create_app(settings, initial_targets=initial)

    def launch(port: int) -> None:
        # The real port (with --port 0 only the bound socket knows it): share links are built from it.
        settings.port = app.state.web.guard.port = port
        first = app.state.initial_sessions[0] if app.state.initial_sessions else None
        suffix = f"&next=/sessions/{first}" if first else ""
        url = app.state.web.guard.public_url(f"/?token={settings.token}{suffix}", port)
        if settings.database_url:
            print(f"Store: PostgreSQL at {mask_url(settings.database_url)}", flush=True)
        # Started up: every template compiled now, not on its first use mid-flood (app/web/render.py), and
        # then what exists lives as long as the process (app/process_tuning.py).
        compile_all(app.state.web.env)
        tune_for_serving()
        print(f"MCP Console is running. Open: {url}", flush=True)

    # proxy_headers off: nothing sits in front of the console, so X-Forwarded-* from a local client must not
    # change the scheme or client address the security checks see.
    # http: uvicorn's httptools protocol with each answer's header and body writes joined (app/web/wire_writes.py).
    # access_log off: at log level warning its lines are never shown, but uvicorn still formatted the client address
    # and path for each of them on every answer.
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning", ws="websockets-sansio",
                            ws_max_size=WS_MAX_MESSAGE_BYTES, lifespan="on", proxy_headers=False,
                            http=CoalescingHttpToolsProtocol, access_log=False,
                            # Whatever else a request waits on, SIGTERM stops the console after this long.
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    LaunchingServer(config, launch).run()
