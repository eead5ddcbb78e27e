"""A real authorization server and a protected MCP server for OAuth tests, plus the steps of a client done by hand.

Fixtures (registered in tests/conftest.py, which marks their tests `services` and `slow`):
- `oidc_provider`: the npm package oidc-provider 9.13.3 from .cache/npm (scripts/test.sh installs it), run by
  app/demo/oauth_provider on 127.0.0.1. Access tokens live `oauth_token_ttl` seconds: override that fixture in a
  test module, or set MCP_CONSOLE_TEST_TOKEN_TTL. It accepts two resources: the protected demo's MCP URL and
  `.other_resource` (a server that does not exist, for tokens meant for someone else). It has a pre-registered
  confidential client (`.client_id`, `.client_secret`, native, any 127.0.0.1/localhost port). Without Node or
  the package, the test skips and says which is missing.
- `protected_demo`: the bundled demo server run with `--oauth-issuer` against that provider; its MCP URL.

Helpers for a client's steps, in plain httpx so a test does not lean on the code it tests: `register_client` (DCR),
`Pkce`, `authorization_url`, `login_with_httpx` (oidc-provider's development login and consent pages, no browser:
returns the callback URL with `code`, `state` and `iss`), `exchange_code`, `refresh`.
"""

from __future__ import annotations

import base64
import hashlib
import os
import queue
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import pytest

from app.demo.oauth_provider import ProviderProcess, ProviderUnavailable, find_node, start_provider
from tests.processes import stop

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / ".cache" / "npm" / "node_modules"
TTL_ENV = "MCP_CONSOLE_TEST_TOKEN_TTL"
DEFAULT_TOKEN_TTL_S = 10
START_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 10.0
MAX_HOPS = 12  # authorization → login → resume → consent → resume → callback, with room to spare
REDIRECT_PATH = "/oauth/callback"


@dataclass
class OidcProvider:
    """The running provider: its issuer, the resources it issues tokens for, its pre-registered client."""

    process: ProviderProcess
    resources: list[str]
    client_id: str
    client_secret: str

    @property
    def issuer(self) -> str:
        return self.process.issuer

    @property
    def other_resource(self) -> str:
        return self.resources[1]

    def metadata(self) -> dict[str, Any]:
        document: dict[str, Any] = httpx.get(f"{self.issuer}/.well-known/oauth-authorization-server",
                                             timeout=HTTP_TIMEOUT_S).raise_for_status().json()
        return document

    def stop(self) -> None:
        self.process.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def provider_missing() -> str | None:
    """Why the provider cannot run here, or None."""
    if not (NODE_MODULES / "oidc-provider" / "package.json").is_file():
        return "oidc-provider is not installed in .cache/npm (scripts/test.sh installs it with npm)"
    try:
        find_node()
    except ProviderUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture
def oauth_token_ttl() -> int:
    """Seconds an access token lives; a test module overrides this fixture for a shorter or longer life."""
    return int(os.environ.get(TTL_ENV, DEFAULT_TOKEN_TTL_S))


@pytest.fixture
def protected_demo_port() -> int:
    return free_port()


@pytest.fixture
def oidc_provider(oauth_token_ttl: int, protected_demo_port: int) -> Iterator[OidcProvider]:
    missing = provider_missing()
    if missing:
        pytest.skip(missing)
    resources = [f"http://127.0.0.1:{protected_demo_port}/mcp", f"http://127.0.0.1:{free_port()}/mcp"]
    client_id, client_secret = "mcp-console-test", secrets.token_urlsafe(24)
    try:
        process = start_provider(0, resources, oauth_token_ttl, NODE_MODULES, client_id=client_id,
                                 client_secret=client_secret, timeout=START_TIMEOUT_S)
    except ProviderUnavailable as exc:
        pytest.fail(str(exc))
    provider = OidcProvider(process, resources, client_id, client_secret)
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
def protected_demo(oidc_provider: OidcProvider, protected_demo_port: int) -> Iterator[str]:
    """The demo server protected by `oidc_provider`; its MCP URL (also `oidc_provider.resources[0]`)."""
    url = oidc_provider.resources[0]
    proc = subprocess.Popen([sys.executable, "-m", "app.demo", "--port", str(protected_demo_port),
                             "--oauth-issuer", oidc_provider.issuer], cwd=ROOT, env=_child_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_line(proc, f"demo server listening on {url}")
        yield url
    finally:
        stop(proc)


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "PYTHONUNBUFFERED": "1"}


def _wait_for_line(proc: subprocess.Popen[str], wanted: str) -> None:
    """Block until the process prints `wanted` on stderr (then keep draining it), or fail at the deadline."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, name="protected-demo-stderr", daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            pytest.fail(f"the protected demo server did not become ready; its stderr: {''.join(seen)!r}")
        seen.append(line)
        if line.strip() == wanted:
            return


# --- a client's steps, by hand --------------------------------------------------------------------------------


@dataclass
class Pkce:
    """A PKCE verifier and its S256 challenge (RFC 7636)."""

    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def redirect_uri(port: int | None = None) -> str:
    """The console's redirect URI shape; nothing needs to listen there, the helper stops at the redirect."""
    return f"http://127.0.0.1:{port or free_port()}{REDIRECT_PATH}"


def register_client(issuer: str, redirect: str, **extra: Any) -> dict[str, Any]:
    """Dynamic client registration (RFC 7591) of a public native client, as an MCP client registers itself."""
    metadata = httpx.get(f"{issuer}/.well-known/oauth-authorization-server", timeout=HTTP_TIMEOUT_S).json()
    body = {"redirect_uris": [redirect], "client_name": "MCP Console tests", "application_type": "native",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", **extra}
    response = httpx.post(metadata["registration_endpoint"], json=body, timeout=HTTP_TIMEOUT_S)
    assert response.status_code == 201, response.text
    client: dict[str, Any] = response.json()
    return client


def authorization_url(issuer: str, client_id: str, redirect: str, pkce: Pkce, resource: str, scope: str,
                      state: str = "state-1") -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "scope": scope,
              "code_challenge": pkce.challenge, "code_challenge_method": "S256", "state": state, "resource": resource}
    return f"{issuer}/auth?{urlencode(params)}"


class _Form(HTMLParser):
    """The first form of a page: where it posts and its named inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.inputs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {key: value or "" for key, value in attrs}
        if tag == "form" and self.action is None:
            self.action = named.get("action", "")
        elif tag == "input" and self.action is not None and "name" in named:
            self.inputs[named["name"]] = named.get("value", "")


def login_with_httpx(authorization_url: str, login: str = "alice") -> str:
    """Walk oidc-provider's development login (any login and password) and consent ("Continue") pages for the
    authorization request at `authorization_url`; return the URL it finally redirects to (the client's callback,
    with `code`, `state` and `iss`, or an `error`) without requesting it."""
    provider = urlsplit(authorization_url)
    with httpx.Client(follow_redirects=False, timeout=HTTP_TIMEOUT_S) as http:
        response = http.get(authorization_url)
        for _ in range(MAX_HOPS):
            if response.is_redirect:
                target = urljoin(str(response.url), response.headers["location"])
                if urlsplit(target)[:2] != provider[:2]:
                    return target  # left the provider: the callback
                response = http.get(target)
                continue
            form = _Form()
            form.feed(response.text)
            if response.status_code != 200 or form.action is None:
                raise AssertionError(f"the provider answered {response.status_code} without a form to submit: "
                                     f"{response.text[:2000]}")
            fields = dict(form.inputs)
            if "login" in fields:
                fields.update(login=login, password="any password")
            response = http.post(urljoin(str(response.url), form.action), data=fields)
    raise AssertionError(f"no redirect to the client after {MAX_HOPS} steps")


def callback_params(callback_url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(callback_url).query).items()}


def exchange_code(issuer: str, client_id: str, code: str, redirect: str, pkce: Pkce, resource: str | None,
                  client_secret: str | None = None) -> httpx.Response:
    """The token request for a code; `resource` as the MCP spec requires (None to leave it out)."""
    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
            "code_verifier": pkce.verifier, **({"resource": resource} if resource else {})}
    return _token_request(issuer, client_id, client_secret, body)


def refresh(issuer: str, client_id: str, refresh_token: str, resource: str | None = None,
            client_secret: str | None = None) -> httpx.Response:
    body = {"grant_type": "refresh_token", "refresh_token": refresh_token,
            **({"resource": resource} if resource else {})}
    return _token_request(issuer, client_id, client_secret, body)


def _token_request(issuer: str, client_id: str, client_secret: str | None, body: dict[str, str]) -> httpx.Response:
    auth = httpx.BasicAuth(client_id, client_secret) if client_secret else None
    if auth is None:
        body = {**body, "client_id": client_id}  # a public client names itself in the body
    return httpx.post(f"{issuer}/token", data=body, auth=auth, timeout=HTTP_TIMEOUT_S)


def obtain_token(provider: OidcProvider, resource: str, scope: str, login: str = "alice") -> dict[str, Any]:
    """The whole flow as an MCP client runs it: DCR (native, 127.0.0.1 redirect), PKCE S256, `resource` in both
    requests, login, code exchange. The token response, with `client_id` added for a later refresh."""
    redirect = redirect_uri()
    client = register_client(provider.issuer, redirect)
    pkce = Pkce()
    url = authorization_url(provider.issuer, client["client_id"], redirect, pkce, resource, scope)
    params = callback_params(login_with_httpx(url, login))
    assert "code" in params, params
    response = exchange_code(provider.issuer, client["client_id"], params["code"], redirect, pkce, resource)
    assert response.status_code == 200, response.text
    tokens: dict[str, Any] = response.json()
    return {**tokens, "client_id": client["client_id"]}
