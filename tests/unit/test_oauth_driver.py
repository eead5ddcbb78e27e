"""The OAuth driver (app/mcp/oauth/driver.py), the command line's agents (agents.py) and what a grant shows
(grant.py): an httpx MockTransport for the authorization server, a real loopback listener for the callback."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from app.mcp.errors import AuthChallenged
from app.mcp.oauth.agents import FollowRedirects, LoopbackCallback
from app.mcp.oauth.challenge import bearer_challenge
from app.mcp.oauth.driver import AuthAborted, Authorizer, masked_body, masked_url
from app.mcp.oauth.grant import Grant, Registration, decoded_jwt
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import Authorize, Done, Failed, Settings
from app.mcp.secret import MASK
from app.mcp.wire import WireEvent

MCP = "https://mcp.ex.com/mcp"
AS = "https://as.ex.com"
REDIRECT = "http://127.0.0.1:33418/callback"
SECRETS = ("AT-SECRET", "RT-SECRET", "CLIENT-SECRET", "THE-CODE")


# --- grant ------------------------------------------------------------------------------------------------------

def a_jwt(claims: dict[str, Any]) -> str:
    return jwt.encode({"alg": "HS256"}, claims, OctKey.generate_key(256))


def test_decoded_jwt_gives_header_and_claims_of_a_real_jwt() -> None:
    assert decoded_jwt(a_jwt({"sub": "u1", "aud": MCP})) == {
        "header": {"alg": "HS256", "typ": "JWT"}, "claims": {"sub": "u1", "aud": MCP}}


@pytest.mark.parametrize("token", ["opaque-token", "a.b.c", "...", "e30.e30", "W10.e30.sig", "e30.bm90IGpzb24.x",
                                   "\u00e9\u00e9.\u00e9.x", "e30.%%%.sig"])
def test_decoded_jwt_is_none_for_opaque_tokens_and_garbage(token: str) -> None:
    assert decoded_jwt(token) is None


def test_decoded_jwt_is_none_for_claims_nested_too_deep_to_parse() -> None:
    # a 3 KB token from a hostile authorization server raised RecursionError out of the flow: the connect died
    deep = base64.urlsafe_b64encode(('{"a":' + "[" * 1500 + "]" * 1500 + "}").encode()).decode().rstrip("=")
    assert decoded_jwt(f"e30.{deep}.sig") is None


def test_shown_never_contains_a_token_string_or_a_signature() -> None:
    access, id_token = a_jwt({"sub": "u1", "scope": "a b"}), a_jwt({"sub": "u1", "email": "u@ex.com"})
    grant = Grant(AS, MCP, access, refresh_token="RT-SECRET", id_token=id_token, scope="a b", expires_at=10.0)
    shown = json.dumps(grant.shown())
    for secret in (access, id_token, "RT-SECRET", access.split(".")[2], id_token.split(".")[2]):
        assert secret not in shown
    assert grant.shown()["refresh_token"] is True
    assert grant.shown()["access_token"]["claims"] == {"sub": "u1", "scope": "a b"}
    assert grant.shown()["id_token"]["claims"]["email"] == "u@ex.com"


def test_an_opaque_grant_shows_no_token_at_all() -> None:
    shown = Grant(AS, MCP, "AT-SECRET").shown()
    assert shown["access_token"] is None and shown["id_token"] is None and shown["refresh_token"] is False
    assert "AT-SECRET" not in json.dumps(shown)


def test_grant_and_registration_round_trip_through_dicts() -> None:
    grant = Grant(AS, MCP, "at", refresh_token="rt", expires_at=5.0, scope="a", requested="a b", id_token="x.y.z",
                  token_endpoint=f"{AS}/token", obtained_at=1.0)
    assert Grant.from_dict(json.loads(json.dumps(grant.to_dict()))) == grant
    registration = Registration(AS, "cid", "sec", "dynamic registration", "client_secret_post", REDIRECT)
    assert Registration.from_dict(registration.to_dict() | {"unknown": 1}) == registration
    assert grant.expires_in(now=2.0) == 3.0 and Grant(AS, MCP, "at").expires_in() is None


# --- masking ----------------------------------------------------------------------------------------------------

def test_masked_body_masks_every_secret_field_of_a_json_answer_and_keeps_the_rest() -> None:
    body = json.dumps({"access_token": "AT-SECRET", "refresh_token": "RT-SECRET", "id_token": "x.y.z",
                       "client_secret": "CLIENT-SECRET", "token_type": "Bearer", "expires_in": 60})
    assert json.loads(masked_body(body)) == {"access_token": MASK, "refresh_token": MASK, "id_token": MASK,
                                             "client_secret": MASK, "token_type": "Bearer", "expires_in": 60}


def test_masked_body_masks_a_form_body_and_keeps_plain_text() -> None:
    shown = masked_body("grant_type=authorization_code&code=THE-CODE&code_verifier=V&client_id=cid")
    assert dict(parse_qsl(shown)) == {"grant_type": "authorization_code", "code": MASK, "code_verifier": MASK,
                                      "client_id": "cid"}
    assert masked_body("<html>no</html>") == "<html>no</html>"
    assert masked_body("[1, 2]") == "[1, 2]"


def test_masked_url_masks_state_and_code_and_keeps_everything_else() -> None:
    url = f"{REDIRECT}?code=THE-CODE&state=STATE&iss={AS}&scope=a+b&redirect_uri=https%3A%2F%2Fx%2Fcb"
    shown = masked_url(url)
    assert "THE-CODE" not in shown and "STATE" not in shown
    assert shown.startswith(REDIRECT + "?")
    assert {k: v[0] for k, v in parse_qs(urlsplit(shown).query).items()} == {
        "code": MASK, "state": MASK, "iss": AS, "scope": "a b", "redirect_uri": "https://x/cb"}
    assert masked_url(REDIRECT) == REDIRECT


# --- the authorizer -----------------------------------------------------------------------------------------------

class FakeTransport:
    def __init__(self) -> None:
        self.bearer_version = 0
        self.tokens: list[str | None] = []

    def use_bearer(self, token: str | None) -> None:
        self.tokens.append(token)
        self.bearer_version += 1


class CallbackAgent:
    """Stands in for the person: the authorization server approves and redirects back at once."""

    def __init__(self) -> None:
        self.seen: list[Authorize] = []

    async def authorize(self, command: Authorize) -> dict[str, str]:
        self.seen.append(command)
        return {"code": "THE-CODE", "state": command.state, "iss": AS}


class FakeServer:
    """The MCP server's metadata and the authorization server, as one MockTransport handler."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.methods = ["client_secret_post"]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        url = str(request.url)
        if url == "https://mcp.ex.com/.well-known/oauth-protected-resource/mcp":
            return httpx.Response(200, json={"resource": MCP, "authorization_servers": [AS]})
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return httpx.Response(200, json={
                "issuer": AS, "authorization_endpoint": f"{AS}/authorize", "token_endpoint": f"{AS}/token",
                "registration_endpoint": f"{AS}/register", "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": self.methods,
                "authorization_response_iss_parameter_supported": True})
        if url == f"{AS}/register":
            return httpx.Response(201, json={"client_id": "cid", "client_secret": "CLIENT-SECRET",
                                             "token_endpoint_auth_method": "client_secret_post"})
        if url == f"{AS}/token":
            return httpx.Response(200, json={"access_token": "AT-SECRET", "token_type": "Bearer",
                                             "refresh_token": "RT-SECRET", "expires_in": 60},
                                  headers={"Set-Cookie": "sid=COOKIE-SECRET"})
        return httpx.Response(404)

    def sent_to(self, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path == path]


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def http(server: FakeServer) -> Iterator[httpx.AsyncClient]:
    yield httpx.AsyncClient(transport=httpx.MockTransport(server))


def authorizer(http: httpx.AsyncClient, events: list[WireEvent], agent: Any = None, **kw: Any) -> Authorizer:
    keys = iter(range(1000))
    return Authorizer(AuthMachine(MCP, Settings(redirect_uri=REDIRECT)), http, events.append,
                      agent or CallbackAgent(), lambda: f"k{next(keys)}", **kw)


def refused(generation: int = 0) -> AuthChallenged:
    return AuthChallenged("401", bearer_challenge(401, [("WWW-Authenticate", "Bearer")]), "x0", generation)


async def test_a_run_records_oauth_events_without_any_secret_and_puts_the_token_on_the_transport(
        server: FakeServer, http: httpx.AsyncClient) -> None:
    events: list[WireEvent] = []
    auth = authorizer(http, events)
    transport = FakeTransport()
    auth.bind(transport)
    assert await auth(refused()) is True
    assert transport.tokens == ["AT-SECRET"] and auth.grant is not None and auth.grant.refresh_token == "RT-SECRET"
    token_request = server.sent_to("/token")[0]
    sent = dict(parse_qsl(token_request.content.decode()))
    assert sent["client_secret"] == "CLIENT-SECRET" and sent["code"] == "THE-CODE"
    state = auth.agent.seen[0].state
    recorded = json.dumps([e.to_dict() for e in events])
    for secret in (*SECRETS, "COOKIE-SECRET", sent["code_verifier"], state):
        assert secret not in recorded
    assert {e.signal for e in events} == {"oauth"}
    assert {e.exchange for e in events} >= {"k0", "k1"}
    steps = json.dumps([s.to_dict() for s in auth.machine.steps])
    for secret in (*SECRETS, sent["code_verifier"], state):
        assert secret not in steps


async def test_a_basic_authorization_header_is_sent_but_recorded_masked(server: FakeServer,
                                                                         http: httpx.AsyncClient) -> None:
    server.methods = ["client_secret_basic"]
    events: list[WireEvent] = []
    auth = authorizer(http, events)
    auth.machine.settings.client_id, auth.machine.settings.client_secret = "pre", "CLIENT-SECRET"
    assert isinstance(await auth.run(refused().challenge), Done)
    assert server.sent_to("/token")[0].headers["Authorization"].startswith("Basic ")
    assert server.sent_to("/register") == []
    recorded = [dict(e.headers or []) for e in events if e.direction == "out"]
    assert {"Authorization": f"Basic {MASK}"}.items() <= recorded[-1].items()
    assert "CLIENT-SECRET" not in json.dumps([e.to_dict() for e in events])


async def test_requests_refused_together_run_one_flow(server: FakeServer, http: httpx.AsyncClient) -> None:
    events: list[WireEvent] = []
    auth = authorizer(http, events)
    transport = FakeTransport()
    auth.bind(transport)
    assert await asyncio.gather(auth(refused(0)), auth(refused(0))) == [True, True]
    assert len(server.sent_to("/token")) == 1 and len(server.sent_to("/register")) == 1
    assert transport.tokens == ["AT-SECRET"]


async def test_a_gate_that_aborts_stops_the_run_with_a_failure(server: FakeServer, http: httpx.AsyncClient) -> None:
    async def gate(_machine: AuthMachine) -> None:
        raise AuthAborted("stopped by you")

    auth = authorizer(http, [], gate=gate)
    assert await auth(refused()) is False
    assert auth.failure == Failed("resource metadata", "stopped by you")
    assert server.requests == [] and auth.running is False


async def test_what_the_person_edits_at_the_gate_goes_with_the_step(http: httpx.AsyncClient) -> None:
    async def gate(machine: AuthMachine) -> None:
        if machine.phase == "authorization":
            machine.settings.scope = "edited"

    changes: list[str] = []
    auth = authorizer(http, [], gate=gate, on_change=lambda a: changes.append(a.machine.phase))
    assert isinstance(await auth.run(refused().challenge), Done)
    assert parse_qs(urlsplit(auth.agent.seen[0].url).query)["scope"] == ["edited"]
    assert changes[-1] == "done"


async def test_an_agent_that_aborts_fails_the_authorization_step(http: httpx.AsyncClient) -> None:
    class Refusing:
        async def authorize(self, command: Authorize) -> dict[str, str]:
            raise AuthAborted("no browser")

    outcome = await authorizer(http, [], agent=Refusing()).run(refused().challenge)
    assert outcome == Failed("authorization", "no browser")


async def test_an_unreachable_server_is_recorded_as_a_transport_note(http: httpx.AsyncClient) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    events: list[WireEvent] = []
    auth = authorizer(httpx.AsyncClient(transport=httpx.MockTransport(down)), events)
    outcome = await auth.run(refused().challenge)
    # Nothing reachable is an outage, not a 2025-03-26 server: the flow stops at the metadata, saying so.
    assert isinstance(outcome, Failed) and outcome.step == "resource metadata" and "could not reach" in outcome.message
    assert [e.direction for e in events if "could not reach" in (e.note or "")] == ["transport"] * 2


# --- agents -------------------------------------------------------------------------------------------------------

def authorize_command(redirect: str = REDIRECT, state: str = "st") -> Authorize:
    return Authorize("authorization", f"{AS}/authorize?state={state}", redirect, state)


async def test_follow_redirects_follows_a_302_chain_to_the_redirect_uri() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/authorize":
            return httpx.Response(302, headers={"Location": "/consent?x=1"})
        return httpx.Response(302, headers={"Location": f"{REDIRECT}?code=c&state=st&iss={AS}"})

    said: list[str] = []
    agent = FollowRedirects(httpx.AsyncClient(transport=httpx.MockTransport(handler)), said.append)
    assert await agent.authorize(authorize_command()) == {"code": "c", "state": "st", "iss": AS}
    assert "after 2 request(s)" in said[0]


async def test_follow_redirects_stops_at_a_login_page_naming_interactive_mode() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, html="<form>login</form>")

    agent = FollowRedirects(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    with pytest.raises(AuthAborted, match="interactive") as caught:
        await agent.authorize(authorize_command())
    assert "HTTP 200 (text/html)" in str(caught.value)


async def test_follow_redirects_gives_up_after_too_many_hops() -> None:
    hops: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hops.append(str(request.url))
        return httpx.Response(302, headers={"Location": f"/again{len(hops)}"})

    agent = FollowRedirects(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    with pytest.raises(AuthAborted, match="more than 10 redirects"):
        await agent.authorize(authorize_command())
    assert len(hops) == 10


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_loopback_callback_takes_the_callback_with_the_right_state_only() -> None:
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    listening = asyncio.Event()
    agent = LoopbackCallback(lambda _url: listening.set(), wait_s=10.0)
    waiting = asyncio.create_task(agent.authorize(authorize_command(redirect, "right")))
    await asyncio.wait_for(listening.wait(), 5.0)
    async with httpx.AsyncClient() as client:
        wrong = await client.get(f"{redirect}?code=c&state=wrong", timeout=5.0)
        assert wrong.status_code == 404 and not waiting.done()
        elsewhere = await client.get(redirect.replace("/callback", "/other") + "?code=c&state=right", timeout=5.0)
        assert elsewhere.status_code == 404 and not waiting.done()
        right = await client.get(f"{redirect}?code=c&state=right", timeout=5.0)
    assert right.status_code == 200 and "close this tab" in right.text
    assert await asyncio.wait_for(waiting, 5.0) == {"code": "c", "state": "right"}


async def test_loopback_callback_refuses_a_redirect_uri_it_cannot_listen_on() -> None:
    with pytest.raises(AuthAborted, match="not a loopback http URI"):
        await LoopbackCallback(lambda _url: None).authorize(authorize_command("https://console.ex.com/cb"))



@pytest.mark.parametrize("location", ["https://as.ex.com:bad/next", "https://[as/next", "http://"])
async def test_follow_redirects_stops_on_a_malformed_location_with_auth_aborted(location: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": location})

    agent = FollowRedirects(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    with pytest.raises(AuthAborted):
        await agent.authorize(authorize_command())


def test_a_probe_refused_for_want_of_a_token_is_no_sign_of_an_older_server() -> None:
    from app.mcp.client import Reply
    from app.mcp.handshake import discover_not_served
    from app.mcp.oauth.challenge import bearer_challenge

    challenge = bearer_challenge(401, [("WWW-Authenticate", 'Bearer scope="a"')])
    reply = Reply(key="x1", id=1, method="server/discover", params={}, sent=0.0,
                  error=AuthChallenged("HTTP 401 Unauthorized from the server (it asks for authorization)", challenge))
    assert discover_not_served(reply, stdio=False) is None
