"""Hand-made answers and walks for the OAuth machine's tests (tests/unit/test_oauth_machine.py)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from app.mcp.oauth.challenge import bearer_challenge
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import Answer, Authorize, Fetch, Settings

MCP = "https://mcp.ex.com/mcp"
AS = "https://as.ex.com"
REDIRECT = "http://127.0.0.1:33418/callback"
PRM_URL = "https://mcp.ex.com/.well-known/oauth-protected-resource/mcp"


def ok(doc: dict[str, Any], status: int = 200) -> Answer:
    return Answer(status, [("Content-Type", "application/json")], json.dumps(doc))


def prm(**extra: Any) -> dict[str, Any]:
    return {"resource": MCP, "authorization_servers": [AS], **extra}


def as_meta(issuer: str = AS, **extra: Any) -> dict[str, Any]:
    return {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register", "code_challenge_methods_supported": ["S256"], **extra}


def challenge(status: int = 401, value: str = f'Bearer resource_metadata="{PRM_URL}"') -> Any:
    return bearer_challenge(status, [("WWW-Authenticate", value)])


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def form(command: Fetch) -> dict[str, str]:
    assert command.form is not None
    return dict(command.form)


def to_metadata(machine: AuthMachine) -> None:
    """A 401 and the protected resource metadata: the machine asks for the authorization server's next."""
    machine.challenged(challenge())
    assert isinstance(machine.fetched(ok(prm())), Fetch)


def to_authorize(machine: AuthMachine, meta: dict[str, Any] | None = None, prm_doc: dict[str, Any] | None = None,
                 first: Any = None) -> Authorize:
    """A 401 → PRM → AS metadata → (DCR) → the Authorize command."""
    command = machine.challenged(first or challenge())
    command = machine.fetched(ok(prm_doc or prm()))
    command = machine.fetched(ok(meta or as_meta()))
    if isinstance(command, Fetch) and command.step == "registration":
        command = machine.fetched(ok({"client_id": "dyn-client"}, 201))
    assert isinstance(command, Authorize), command
    return command


def to_token(machine: AuthMachine, **kw: Any) -> Fetch:
    authorize = to_authorize(machine, **kw)
    command = machine.called_back({"code": "the-code", "state": authorize.state})
    assert isinstance(command, Fetch) and command.step == "token", command
    return command


def bearer(access: str = "at-1", **extra: Any) -> Answer:
    return ok({"access_token": access, "token_type": "Bearer", **extra})


def machine(**settings: Any) -> AuthMachine:
    return AuthMachine(MCP, Settings(redirect_uri=REDIRECT, **settings))
