"""Command-line runner: `python -m app.demo [--port N [--oauth-issuer URL] | --stdio]`.

HTTP mode serves Streamable HTTP at http://127.0.0.1:N/mcp and prints exactly one
readiness line to stderr once the socket is bound, which tests and the console's
"start demo server" button wait for. stdio mode prints nothing to stdout besides
protocol messages (stdout is the JSON-RPC channel); diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Callable

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from app.demo.protect import BearerGate
from app.demo.server import build_server, close_listen_streams
from app.demo.tools_basic import TOOL_SCOPES

DEFAULT_PORT = 8766
HOST = "127.0.0.1"
MCP_PATH = "/mcp"

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _AnnouncingServer(uvicorn.Server):
    """uvicorn server that announces readiness after its listening socket is bound.

    `startup()` returns only after the app lifespan (the SDK's session manager) has
    started and the sockets are listening, so a client that connects as soon as it
    reads the line will be served. With `--port 0` the line names the real port.
    """

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit or not self.started:
            return  # bind failed; uvicorn has already logged why
        port = self._bound_port()
        host = self.config.host
        print(f"demo server listening on http://{host}:{port}{MCP_PATH}", file=sys.stderr, flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Before uvicorn starts waiting for connections to drain: listen streams never
        # drain on their own.
        self._on_shutdown()
        await super().shutdown(sockets=sockets)

    def _bound_port(self) -> int:
        for server in getattr(self, "servers", []):
            for sock in server.sockets:
                address = sock.getsockname()
                if isinstance(address, tuple) and len(address) >= 2:
                    return int(address[1])
        return self.config.port


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.demo", description="MCP Console demo server (2026-07-28).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port on {HOST} (default {DEFAULT_PORT}; 0 = any)"
    )
    mode.add_argument("--stdio", action="store_true", help="serve newline-delimited JSON-RPC on stdin/stdout")
    parser.add_argument("--host", default=HOST, help=f"interface to bind in HTTP mode (default {HOST})")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="extra Host header value to accept, e.g. demo:8766 (repeatable; for container networks)",
    )
    parser.add_argument(
        "--state-key-file",
        help="file holding the hex key that seals requestState, so an operation waiting for input can be answered "
             "after this server restarts (default: a key for this process only)",
    )
    parser.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help="protect /mcp with OAuth: accept only JWT access tokens from this issuer for this server's URL, and "
             "serve its protected resource metadata (HTTP mode only)",
    )
    parser.add_argument(
        "--oauth-scope",
        default="mcp:read",
        help="the scope every request needs with --oauth-issuer (default mcp:read); write_note needs mcp:write too",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=_LOG_LEVELS,
        help="server-side log level on stderr (default WARNING)",
    )
    return parser.parse_args(argv)


def read_state_key(path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        return bytes.fromhex(open(path, encoding="ascii").read().strip())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Cannot read the requestState key from {path}: {exc}") from None


def serve_http(port: int, log_level: str, host: str = HOST, allowed_hosts: list[str] | None = None,
               state_key: bytes | None = None, oauth_issuer: str | None = None, oauth_scope: str = "mcp:read") -> None:
    server = build_server(state_key, protected=bool(oauth_issuer))
    logging.getLogger().setLevel(log_level)
    security = None
    if allowed_hosts:
        # Inside a container network the console reaches us as e.g. "demo:8766": name it explicitly,
        # keeping DNS-rebinding protection on rather than switching it off.
        security = TransportSecuritySettings(allowed_hosts=[*allowed_hosts, f"{HOST}:*", "localhost:*"])
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host, transport_security=security)
    if oauth_issuer:
        app = BearerGate(app, issuer=oauth_issuer, required_scope=oauth_scope, tool_scopes=TOOL_SCOPES)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        access_log=False,
        # Open SSE streams (listen subscriptions, long jobs) would otherwise hold
        # shutdown forever; tests and the console stop the process with SIGTERM.
        timeout_graceful_shutdown=2,
    )
    _AnnouncingServer(config, on_shutdown=lambda: close_listen_streams(server)).run()


def serve_stdio(log_level: str, state_key: bytes | None = None) -> None:
    server = build_server(state_key)
    logging.getLogger().setLevel(log_level)
    # The SDK's stdio transport claims fd 1 for protocol output; nothing else may print there.
    anyio.run(server.run_stdio_async)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        key = read_state_key(args.state_key_file)
        if args.stdio:
            if args.oauth_issuer:
                raise SystemExit("--oauth-issuer protects the HTTP endpoint; over stdio, credentials come from the "
                                 "environment")
            serve_stdio(args.log_level, key)
        else:
            serve_http(args.port, args.log_level, args.host, args.allowed_host, key, args.oauth_issuer,
                       args.oauth_scope)
    except KeyboardInterrupt:
        # Ctrl-C is the normal way to stop a demo server; no traceback.
        pass
