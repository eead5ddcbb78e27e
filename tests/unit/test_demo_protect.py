"""The demo's bearer gate (app/demo/protect.py, app/demo/bearer.py) without Node: tokens signed here with joserfc,
the issuer's discovery document and key set served by a tiny real HTTP server on 127.0.0.1, the gate driven in
process over httpx's ASGI transport. tests/integration/test_demo_oauth.py does the same against the real provider."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from starlette.types import Receive, Scope, Send

from app.demo.bearer import IssuerKeys
from app.demo.protect import BearerGate
from app.demo.tools_basic import TOOL_SCOPES

RESOURCE = "http://127.0.0.1:9/mcp"
PRM = "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"


@dataclass
class Issuer:
    """A fake issuer that is real HTTP: discovery at the RFC 8414 URL and a key set whose keys a test can change."""

    url: str = ""
    keys: list[RSAKey] = field(default_factory=list)

    def new_key(self, kid: str) -> RSAKey:
        return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})

    def token(self, key: RSAKey | None = None, typ: str = "at+jwt", **claims: Any) -> str:
        key = key or self.keys[0]
        now = int(time.time())
        body = {"iss": self.url, "aud": RESOURCE, "sub": "alice", "iat": now, "exp": now + 60, "scope": "mcp:read",
                **claims}
        return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": typ}, body, key)


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    made = Issuer()
    made.keys.append(made.new_key("first"))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/oauth-authorization-server":
                document: dict[str, Any] = {"issuer": made.url, "jwks_uri": f"{made.url}/jwks"}
            elif self.path == "/jwks":
                document = KeySet(list(made.keys)).as_dict(private=False)
            else:
                self.send_error(404)
                return
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    made.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        server.shutdown()
        server.server_close()


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Stands in for the MCP app: answers with the body it was handed."""
    message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": message.get("body", b"")})


@pytest.fixture
async def gate(issuer: Issuer) -> AsyncIterator[httpx.AsyncClient]:
    app = BearerGate(echo_app, issuer=issuer.url, resource=RESOURCE, tool_scopes=TOOL_SCOPES)
    app.keys = IssuerKeys(issuer.url, refetch_interval=0)  # a test's rotation is seen at once
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:9") as client:
        yield client


def call(tool: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "x"}}}


async def post(client: httpx.AsyncClient, token: str | None, body: dict[str, Any] | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await client.post("/mcp", json=body or {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)


async def test_a_request_without_a_token_gets_401_naming_the_metadata_and_scope(gate: httpx.AsyncClient) -> None:
    response = await post(gate, None)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{PRM}", scope="mcp:read"'
    assert response.headers["access-control-expose-headers"] == "WWW-Authenticate"


async def test_the_metadata_document_names_the_resource_and_issuer(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    document = (await gate.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert document["resource"] == RESOURCE and document["authorization_servers"] == [issuer.url]


async def test_a_good_token_reaches_the_app_with_the_body_unchanged(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    body = call("echo")
    response = await post(gate, issuer.token(), body)
    assert response.status_code == 200 and response.json() == body
    assert response.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(("claims", "why"), [
    ({"exp": int(time.time()) - 5}, "expired"),
    ({"aud": "http://127.0.0.1:10/mcp"}, "aud"),
    ({"iss": "http://127.0.0.1:1"}, "iss"),
])
async def test_a_token_with_a_bad_claim_is_invalid_token(gate: httpx.AsyncClient, issuer: Issuer,
                                                         claims: dict[str, Any], why: str) -> None:
    response = await post(gate, issuer.token(**claims))
    assert response.status_code == 401
    header = response.headers["www-authenticate"]
    assert header.startswith('Bearer error="invalid_token", error_description="') and why in header


async def test_an_id_token_is_not_an_access_token(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    response = await post(gate, issuer.token(typ="JWT"))
    assert response.status_code == 401 and "at+jwt" in response.headers["www-authenticate"]


async def test_a_token_from_a_key_the_issuer_does_not_publish_is_refused(gate: httpx.AsyncClient,
                                                                         issuer: Issuer) -> None:
    response = await post(gate, issuer.token(key=issuer.new_key("stranger")))
    assert response.status_code == 401 and "does not publish" in response.headers["www-authenticate"]


async def test_a_key_the_issuer_rotated_in_is_fetched_again(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    assert (await post(gate, issuer.token())).status_code == 200  # the first key set is cached now
    issuer.keys.append(issuer.new_key("second"))
    assert (await post(gate, issuer.token(key=issuer.keys[1]))).status_code == 200


async def test_a_token_without_the_servers_scope_gets_403(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    response = await post(gate, issuer.token(scope="openid"))
    assert response.status_code == 403 and 'error="insufficient_scope"' in response.headers["www-authenticate"]


async def test_write_note_needs_mcp_write_and_other_tools_do_not(gate: httpx.AsyncClient, issuer: Issuer) -> None:
    reader = issuer.token()
    assert (await post(gate, reader, call("echo"))).status_code == 200
    refused = await post(gate, reader, call("write_note"))
    assert refused.status_code == 403
    assert 'scope="mcp:read mcp:write"' in refused.headers["www-authenticate"]
    assert (await post(gate, issuer.token(scope="mcp:read mcp:write"), call("write_note"))).status_code == 200


async def test_an_unreachable_issuer_is_503_not_a_refused_token() -> None:
    app = BearerGate(echo_app, issuer="http://127.0.0.1:1", resource=RESOURCE)
    header = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"at+jwt","kid":"k"}').decode().rstrip("=")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:9") as client:
        response = await post(client, header + ".e30.c2ln")  # a JWT's shape: checking it needs the keys
    assert response.status_code == 503 and response.json()["error"] == "temporarily_unavailable"


async def test_other_paths_pass_through_without_a_token(gate: httpx.AsyncClient) -> None:
    assert (await gate.post("/elsewhere", content=b"{}")).status_code == 200


async def test_a_preflight_is_answered_without_a_token_and_allows_the_authorization_header(
        gate: httpx.AsyncClient) -> None:
    response = await gate.options("/mcp", headers={"Origin": "http://example.test",
                                                   "Access-Control-Request-Method": "POST",
                                                   "Access-Control-Request-Headers": "authorization, content-type"})
    assert response.status_code == 204
    assert response.headers["access-control-allow-headers"] == "authorization, content-type"
    assert response.headers["access-control-allow-origin"] == "*"
