"""The command line's OAuth: its options, the agent they pick, and the steps said on stderr.

The flow is the console's (app/mcp/oauth): the same machine, the same driver, the same steps; only the agent
differs. `--oauth follow` follows the authorization redirects itself (CI, the conformance runner: no person),
`--oauth interactive` prints the authorization URL and waits for the browser's callback on the loopback redirect
URI, `--oauth off` leaves a 401 or 403 as the answer (exit 2), as before. `auto`: interactive when stderr is a
terminal, else off.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from app.mcp.oauth.steps import Settings

# Fixed, so that a client can be pre-registered with it; --redirect-uri takes another.
DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
MODES = ("auto", "interactive", "follow", "off")


@dataclass(slots=True)
class OAuthOptions:
    mode: str  # interactive | follow
    settings: Settings = field(default_factory=lambda: Settings(DEFAULT_REDIRECT_URI))


def add_oauth_options(common: argparse.ArgumentParser) -> None:
    group = common.add_argument_group("OAuth (a server that answers 401 or 403 insufficient_scope)")
    group.add_argument("--oauth", choices=MODES, default="auto",
                       help="How to authorize when the server asks: follow (follow the authorization server's "
                            "redirects with no person, for CI), interactive (print the authorization URL and wait "
                            "for the browser's callback on the redirect URI, at most --max-time seconds), off (a "
                            "401 or 403 ends the run, exit 2), auto (interactive on a terminal, else off). Every "
                            "step is said on stderr.")
    group.add_argument("--client-id", default="", metavar="ID",
                       help="A client id registered with the authorization server beforehand (else: a client id "
                            "metadata document where --client-metadata-url is given and supported, else dynamic "
                            "registration).")
    group.add_argument("--client-secret", default="", metavar="SECRET",
                       help="The pre-registered client's secret (or set MCP_CONSOLE_CLIENT_SECRET, which keeps it out "
                            "of the process list). Never printed.")
    group.add_argument("--client-metadata-url", default="", metavar="URL",
                       help="An https URL of this client's metadata document, used as the client id where the "
                            "authorization server supports client id metadata documents.")
    group.add_argument("--scope", default="", metavar="'S1 S2'",
                       help="The scopes to ask for (default: the challenge's, else every scope the resource "
                            "metadata lists, else none).")
    group.add_argument("--redirect-uri", default=DEFAULT_REDIRECT_URI, metavar="URI",
                       help=f"The redirect URI (default {DEFAULT_REDIRECT_URI}; interactive mode listens on it).")
    group.add_argument("--auth-param", action="append", default=[], metavar="NAME=VALUE",
                       help="An extra authorization request parameter (repeatable), e.g. audience=… or login_hint=…")
    group.add_argument("--authorization-endpoint", default="", metavar="URL",
                       help="Use this authorization endpoint instead of the metadata's.")
    group.add_argument("--token-endpoint", default="", metavar="URL",
                       help="Use this token endpoint instead of the metadata's.")


def oauth_of(args: argparse.Namespace) -> OAuthOptions | None:
    mode = getattr(args, "oauth", "off")
    if mode == "auto":
        mode = "interactive" if sys.stderr.isatty() else "off"
    if mode == "off":
        return None
    extra: dict[str, str] = {}
    for item in args.auth_param or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--auth-param wants NAME=VALUE, not {item!r}")
        extra[name] = value
    settings = Settings(redirect_uri=args.redirect_uri, client_id=args.client_id,
                        client_secret=args.client_secret or os.environ.get("MCP_CONSOLE_CLIENT_SECRET", ""),
                        client_metadata_url=args.client_metadata_url, scope=args.scope, extra_params=extra,
                        authorization_endpoint=args.authorization_endpoint, token_endpoint=args.token_endpoint,
                        client_name="mcp-console (command line)")
    return OAuthOptions(mode, settings)


def oauth_from_config(options: OAuthOptions, settings: dict[str, Any]) -> None:
    """A config entry's OAuth settings (the Inspector's `oauth`, app/workspace/configs.py), each where the command
    line left the field empty: an option given wins."""
    for name, value in settings.items():
        if name == "extra_params" and isinstance(value, dict):
            options.settings.extra_params = {**value, **options.settings.extra_params}
        elif isinstance(value, str) and hasattr(options.settings, name) and not getattr(options.settings, name):
            setattr(options.settings, name, value)
