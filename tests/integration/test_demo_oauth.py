"""The demo server's protected mode against a real OpenID provider (oidc-provider under Node), end to end.

No mocks: the provider issues real codes and RS256 JWT access tokens, the demo checks them against the provider's
published keys. The flows are done by hand in httpx (tests/oauth_services.py), so these tests do not lean on the
console's own OAuth client. Marked `services` and `slow` by tests/conftest.py through the fixtures they use.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import httpx
import pytest

from tests.oauth_services import (
    OidcProvider,
    Pkce,
    authorization_url,
    callback_params,
    exchange_code,
    login_with_httpx,
    obtain_token,
    redirect_uri,
    refresh,
    register_client,
)

PROTOCOL = "2026-07-28"
TOKEN_TTL_S = 5  # short, so the expiry test waits seconds; every other test uses its token at once
EXPIRY_TIMEOUT_S = 30.0
POLL_S = 0.2

_ids = itertools.count(1)


@pytest.fixture
def oauth_token_ttl() -> int:
    return TOKEN_TTL_S


def rpc(url: str, method: str, params: dict[str, Any] | None = None, token: str | None = None) -> httpx.Response:
    """One JSON-RPC request on the 2026-07-28 wire, with the token (if any) as a bearer header."""
    meta = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "oauth-test", "version": "0"}}
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {**(params or {}), "_meta": meta}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL, "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = body["params"]["name"]
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(url, json=body, headers=headers, timeout=10)


def result_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, (response.status_code, response.text)
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        import json

        text = next(line[5:].strip() for line in text.splitlines() if line.startswith("data:") and '"id"' in line)
        message: dict[str, Any] = json.loads(text)
    else:
        message = response.json()
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


def challenge(response: httpx.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer …` header."""
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def prm_url(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"


def test_the_demo_without_a_token_answers_401_with_a_challenge_naming_its_metadata(protected_demo: str) -> None:
    response = rpc(protected_demo, "tools/list")
    assert response.status_code == 401
    assert challenge(response) == {"resource_metadata": prm_url(protected_demo), "scope": "mcp:read"}
    assert response.json()["error"] == "unauthorized"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["access-control-expose-headers"] == "WWW-Authenticate"


def test_its_protected_resource_metadata_names_the_demo_and_the_provider(protected_demo: str,
                                                                         oidc_provider: OidcProvider) -> None:
    document = httpx.get(prm_url(protected_demo), timeout=10).raise_for_status().json()
    assert document["resource"] == protected_demo
    assert document["authorization_servers"] == [oidc_provider.issuer]
    assert document["scopes_supported"] == ["mcp:read", "mcp:write"]
    assert document["bearer_methods_supported"] == ["header"]


def test_the_provider_advertises_what_an_mcp_client_needs(oidc_provider: OidcProvider) -> None:
    metadata = oidc_provider.metadata()
    assert metadata["issuer"] == oidc_provider.issuer
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert {"openid", "offline_access", "mcp:read", "mcp:write"} <= set(metadata["scopes_supported"])
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert metadata["registration_endpoint"] == f"{oidc_provider.issuer}/reg"
    openid = httpx.get(f"{oidc_provider.issuer}/.well-known/openid-configuration", timeout=10).json()
    assert openid["issuer"] == oidc_provider.issuer


def test_a_token_obtained_end_to_end_is_accepted_and_lists_the_tools(protected_demo: str,
                                                                     oidc_provider: OidcProvider) -> None:
    redirect = redirect_uri()
    client = register_client(oidc_provider.issuer, redirect)
    assert client["application_type"] == "native" and client["redirect_uris"] == [redirect]
    pkce = Pkce()
    url = authorization_url(oidc_provider.issuer, client["client_id"], redirect, pkce, protected_demo,
                            "mcp:read offline_access")
    callback = login_with_httpx(url)
    assert callback.startswith(redirect + "?")
    params = callback_params(callback)
    assert params["iss"] == oidc_provider.issuer and params["state"] == "state-1"
    response = exchange_code(oidc_provider.issuer, client["client_id"], params["code"], redirect, pkce, protected_demo)
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["token_type"].lower() == "bearer" and tokens["scope"].split() >= ["mcp:read"]
    listed = rpc(protected_demo, "tools/list", token=tokens["access_token"])
    assert {"echo", "write_note"} <= {tool["name"] for tool in result_of(listed)["tools"]}
    assert listed.headers["access-control-allow-origin"] == "*"


def test_a_native_client_may_come_back_on_another_loopback_port(oidc_provider: OidcProvider) -> None:
    registered, used = redirect_uri(), redirect_uri()
    client = register_client(oidc_provider.issuer, registered)
    url = authorization_url(oidc_provider.issuer, client["client_id"], used, Pkce(), oidc_provider.resources[0],
                            "mcp:read")
    assert login_with_httpx(url).startswith(used + "?code=")


def test_a_refresh_token_is_issued_and_refreshing_gives_a_working_token(protected_demo: str,
                                                                        oidc_provider: OidcProvider) -> None:
    tokens = obtain_token(oidc_provider, protected_demo, "mcp:read")
    assert tokens.get("refresh_token")
    # Without `resource`: the provider keeps the granted one, as an MCP client's refresh expects.
    response = refresh(oidc_provider.issuer, tokens["client_id"], tokens["refresh_token"])
    assert response.status_code == 200, response.text
    renewed = response.json()
    assert renewed["access_token"] != tokens["access_token"]
    assert result_of(rpc(protected_demo, "tools/list", token=renewed["access_token"]))["tools"]


def test_an_expired_token_gets_401_invalid_token(protected_demo: str, oidc_provider: OidcProvider) -> None:
    token = obtain_token(oidc_provider, protected_demo, "mcp:read")["access_token"]
    assert rpc(protected_demo, "tools/list", token=token).status_code == 200
    deadline = time.monotonic() + EXPIRY_TIMEOUT_S
    while (response := rpc(protected_demo, "tools/list", token=token)).status_code == 200:
        assert time.monotonic() < deadline, f"the token was still accepted {EXPIRY_TIMEOUT_S:g} s later"
        time.sleep(POLL_S)  # a poll interval, not a wait for the outcome
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token" and "expired" in params["error_description"]
    assert params["resource_metadata"] == prm_url(protected_demo)


def test_write_note_with_only_mcp_read_gets_403_and_works_after_reauthorizing_with_mcp_write(
        protected_demo: str, oidc_provider: OidcProvider) -> None:
    note = {"name": "write_note", "arguments": {"text": "hello"}}
    reader = obtain_token(oidc_provider, protected_demo, "mcp:read")["access_token"]
    assert rpc(protected_demo, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, token=reader).is_success
    refused = rpc(protected_demo, "tools/call", note, token=reader)
    assert refused.status_code == 403
    assert challenge(refused) == {"error": "insufficient_scope", "scope": "mcp:read mcp:write",
                                  "resource_metadata": prm_url(protected_demo),
                                  "error_description": "this tool needs the scope mcp:write"}
    writer = obtain_token(oidc_provider, protected_demo, "mcp:read mcp:write")
    assert set(writer["scope"].split()) >= {"mcp:read", "mcp:write"}
    result = result_of(rpc(protected_demo, "tools/call", note, token=writer["access_token"]))
    assert result["content"][0]["text"].endswith(": hello")


def test_a_token_for_another_audience_is_refused(protected_demo: str, oidc_provider: OidcProvider) -> None:
    elsewhere = obtain_token(oidc_provider, oidc_provider.other_resource, "mcp:read")["access_token"]
    response = rpc(protected_demo, "tools/list", token=elsewhere)
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token" and "aud" in params["error_description"]


def test_a_token_that_is_not_a_jwt_is_refused_without_being_echoed(protected_demo: str) -> None:
    response = rpc(protected_demo, "tools/list", token="not-a-jwt-secret-value")
    assert response.status_code == 401 and challenge(response)["error"] == "invalid_token"
    assert "not-a-jwt-secret-value" not in response.text + response.headers["www-authenticate"]


def test_the_preregistered_confidential_client_gets_a_token(protected_demo: str, oidc_provider: OidcProvider) -> None:
    redirect, pkce = redirect_uri(), Pkce()
    url = authorization_url(oidc_provider.issuer, oidc_provider.client_id, redirect, pkce, protected_demo, "mcp:read")
    code = callback_params(login_with_httpx(url))["code"]
    response = exchange_code(oidc_provider.issuer, oidc_provider.client_id, code, redirect, pkce, protected_demo,
                             client_secret=oidc_provider.client_secret)
    assert response.status_code == 200, response.text
    assert result_of(rpc(protected_demo, "tools/list", token=response.json()["access_token"]))["tools"]
