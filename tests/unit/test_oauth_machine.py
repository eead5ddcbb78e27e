"""The OAuth machine (app/mcp/oauth/machine.py) driven step by step with hand-made answers, no sockets."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from app.mcp.oauth.challenge import bearer_challenge
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import Answer, Authorize, Done, Failed, Fetch, Settings
from tests.unit.oauth_answers import (
    AS,
    MCP,
    PRM_URL,
    REDIRECT,
    as_meta,
    bearer,
    challenge,
    form,
    machine,
    ok,
    prm,
    query,
    to_authorize,
    to_metadata,
    to_token,
)


def test_the_full_happy_path_takes_every_step_with_the_right_parameters() -> None:
    m = machine()
    command = m.challenged(challenge())
    assert command == Fetch("resource metadata", "GET", PRM_URL, (("Accept", "application/json"),))
    command = m.fetched(ok(prm(scopes_supported=["mcp:read"])))
    assert command == Fetch("server metadata", "GET", f"{AS}/.well-known/oauth-authorization-server",
                            (("Accept", "application/json"),))
    command = m.fetched(ok(as_meta()))
    assert isinstance(command, Fetch) and command.method == "POST" and command.url == f"{AS}/register"
    assert command.json is not None and command.json["redirect_uris"] == [REDIRECT]
    authorize = m.fetched(ok({"client_id": "dyn-client"}, 201))
    assert isinstance(authorize, Authorize) and authorize.redirect_uri == REDIRECT
    assert authorize.url.startswith(f"{AS}/authorize?")
    params = query(authorize.url)
    assert params == {"response_type": "code", "client_id": "dyn-client", "redirect_uri": REDIRECT,
                      "code_challenge": params["code_challenge"], "code_challenge_method": "S256",
                      "state": authorize.state, "scope": "mcp:read", "resource": MCP}
    token = m.called_back({"code": "the-code", "state": authorize.state})
    assert isinstance(token, Fetch) and token.method == "POST" and token.url == f"{AS}/token"
    sent = form(token)
    assert sent == {"grant_type": "authorization_code", "code": "the-code", "redirect_uri": REDIRECT,
                    "code_verifier": sent["code_verifier"], "resource": MCP, "client_id": "dyn-client"}
    digest = hashlib.sha256(sent["code_verifier"].encode()).digest()
    assert params["code_challenge"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert 43 <= len(sent["code_verifier"]) <= 128
    done = m.fetched(bearer(refresh_token="rt-1", expires_in=60, scope="mcp:read"))
    assert isinstance(done, Done)
    assert (done.grant.access_token, done.grant.refresh_token, done.grant.issuer) == ("at-1", "rt-1", AS)
    assert done.grant.resource == MCP and done.grant.token_endpoint == f"{AS}/token"
    assert m.registrations[AS].client_id == "dyn-client"
    assert [s.status for s in m.steps] == ["done"] * len(m.steps)


def test_prm_falls_back_through_the_header_url_the_path_one_and_the_root_one_in_order() -> None:
    m = machine()
    first = m.challenged(challenge(value='Bearer resource_metadata="https://mcp.ex.com/custom.json"'))
    assert isinstance(first, Fetch) and first.url == "https://mcp.ex.com/custom.json"
    second = m.fetched(Answer(404))
    assert isinstance(second, Fetch) and second.url == PRM_URL
    third = m.fetched(ok({"resource": MCP}))  # 200 without authorization_servers: not metadata
    assert isinstance(third, Fetch) and third.url == "https://mcp.ex.com/.well-known/oauth-protected-resource"
    assert "oauth.prm-invalid" in [f.rule for f in m.steps[-1].findings]
    fourth = m.fetched(ok(prm()))
    assert isinstance(fourth, Fetch) and fourth.step == "server metadata"


def test_no_prm_anywhere_falls_back_to_the_server_origin_as_the_authorization_server() -> None:
    m = machine()
    m.challenged(challenge(value="Bearer"))
    m.fetched(Answer(404))
    command = m.fetched(Answer(problem="refused"))
    assert isinstance(command, Fetch) and command.url == "https://mcp.ex.com/.well-known/oauth-authorization-server"
    m.fetched(Answer(404))
    command = m.fetched(Answer(404))
    assert isinstance(command, Fetch) and command.url == "https://mcp.ex.com/register"
    assert "oauth.default-endpoints" in [f.rule for f in m.steps[-2].findings]


def test_a_resource_naming_another_server_is_refused_before_any_authorization() -> None:
    m = machine()
    m.challenged(challenge())
    failed = m.fetched(ok(prm(resource="https://evil.example.com/mcp")))
    assert isinstance(failed, Failed) and failed.rule == "oauth.resource-mismatch"
    assert m.phase == "failed" and m.issuer is None


def test_an_origin_resource_is_sent_exactly_as_the_metadata_publishes_it() -> None:
    m = machine()
    authorize = to_authorize(m, prm_doc=prm(resource="https://MCP.ex.com/"))
    assert query(authorize.url)["resource"] == "https://MCP.ex.com/"
    token = m.called_back({"code": "c", "state": authorize.state})
    assert isinstance(token, Fetch) and form(token)["resource"] == "https://MCP.ex.com/"


def test_a_path_issuer_tries_the_three_metadata_urls_in_order() -> None:
    m = machine()
    m.challenged(challenge())
    urls = [m.fetched(ok(prm(authorization_servers=[f"{AS}/tenant1"])))]
    urls += [m.fetched(Answer(404)), m.fetched(Answer(200, [], "[1, 2]"))]
    assert [c.url for c in urls if isinstance(c, Fetch)] == [
        f"{AS}/.well-known/oauth-authorization-server/tenant1", f"{AS}/.well-known/openid-configuration/tenant1",
        f"{AS}/tenant1/.well-known/openid-configuration"]
    assert isinstance(m.fetched(ok(as_meta(f"{AS}/tenant1"))), Fetch)  # registration
    assert m.issuer == f"{AS}/tenant1"


def test_metadata_for_all_urls_missing_fails_naming_the_issuer() -> None:
    m = machine()
    to_metadata(m)
    m.fetched(Answer(404))
    failed = m.fetched(Answer(500))
    assert isinstance(failed, Failed) and failed.rule == "oauth.server-metadata-missing" and AS in failed.message


@pytest.mark.parametrize(("change", "rule"), [
    ({"issuer": AS + "/"}, "oauth.metadata-issuer"), ({"issuer": "https://AS.ex.com"}, "oauth.metadata-issuer"),
    ({"issuer": "https://other.ex.com"}, "oauth.metadata-issuer"),
    ({"code_challenge_methods_supported": None}, "oauth.pkce-unsupported"),
    ({"code_challenge_methods_supported": []}, "oauth.pkce-unsupported"),
    ({"code_challenge_methods_supported": ["plain"]}, "oauth.pkce-unsupported"),
    ({"authorization_endpoint": None}, "oauth.server-metadata-missing"),
    ({"token_endpoint": "http://as.ex.com/token"}, "oauth.insecure-endpoint"),
    ({"authorization_endpoint": "http://as.ex.com/authorize"}, "oauth.insecure-endpoint"),
    ({"registration_endpoint": "http://as.ex.com/register"}, "oauth.insecure-endpoint"),
    # a loopback host does not make any scheme acceptable: the owner clicks this link in the console's page
    ({"authorization_endpoint": "javascript://127.0.0.1/%0Aalert(document.domain)//"}, "oauth.insecure-endpoint"),
    ({"authorization_endpoint": "data://localhost/text/html,<script>alert(1)</script>"}, "oauth.insecure-endpoint"),
])
def test_metadata_that_breaks_a_rule_is_refused_with_that_rule(change: dict[str, Any], rule: str) -> None:
    m = machine()
    to_metadata(m)
    meta = {k: v for k, v in (as_meta() | change).items() if v is not None}
    failed = m.fetched(ok(meta))
    assert isinstance(failed, Failed) and failed.rule == rule
    assert m.phase == "failed" and m.registration is None


def test_a_plain_http_loopback_issuer_is_a_note_not_a_stop() -> None:
    m = AuthMachine("http://127.0.0.1:9000/mcp", Settings(redirect_uri=REDIRECT))
    local = "http://localhost:9001"
    command = m.challenged(challenge())
    m.fetched(ok({"resource": "http://127.0.0.1:9000/mcp", "authorization_servers": [local]}))
    command = m.fetched(ok(as_meta(local)))
    assert isinstance(command, Fetch) and command.step == "registration"
    assert {f.rule: f.severity for f in m.steps[-2].findings} == {"oauth.loopback-http": "note"}


@pytest.mark.parametrize(("supported", "how"), [
    (None, "basic"), (["client_secret_basic", "client_secret_post"], "basic"), (["client_secret_post"], "post")])
def test_a_pre_registered_client_with_a_secret_authenticates_as_the_server_lists(supported: Any, how: str) -> None:
    m = machine(client_id="id with:colon", client_secret="s&cret:/")
    meta = as_meta()
    del meta["registration_endpoint"]
    if supported is not None:
        meta["token_endpoint_auth_methods_supported"] = supported
    token = to_token(m, meta=meta)
    headers = dict(token.headers)
    if how == "basic":
        assert base64.b64decode(headers["Authorization"].removeprefix("Basic ")).decode() == \
            "id%20with%3Acolon:s%26cret%3A%2F"
        assert "client_id" not in form(token) and "client_secret" not in form(token)
    else:
        assert "Authorization" not in headers
        assert form(token)["client_id"] == "id with:colon" and form(token)["client_secret"] == "s&cret:/"


def test_a_pre_registered_public_client_sends_its_id_in_the_body_only() -> None:
    m = machine(client_id="public-id")
    token = to_token(m, meta=as_meta(token_endpoint_auth_methods_supported=["none"]))
    assert form(token)["client_id"] == "public-id" and "client_secret" not in form(token)
    assert "Authorization" not in dict(token.headers)


def test_a_client_id_metadata_document_is_used_when_supported_and_set() -> None:
    url = "https://console.ex.com/client.json"
    authorize = to_authorize(machine(client_metadata_url=url),
                             meta=as_meta(client_id_metadata_document_supported=True))
    assert query(authorize.url)["client_id"] == url


@pytest.mark.parametrize(("supported", "url"), [(True, ""), (False, "https://console.ex.com/client.json")])
def test_without_both_support_and_a_document_url_registration_is_dynamic(supported: bool, url: str) -> None:
    m = machine(client_metadata_url=url)
    to_metadata(m)
    command = m.fetched(ok(as_meta(client_id_metadata_document_supported=supported)))
    assert isinstance(command, Fetch) and command.step == "registration"


@pytest.mark.parametrize(("redirect", "kind"), [(REDIRECT, "native"), ("https://console.ex.com/cb", "web")])
def test_dynamic_registration_sends_application_type_and_asks_for_refresh_tokens(redirect: str, kind: str) -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=redirect))
    to_metadata(m)
    command = m.fetched(ok(as_meta(token_endpoint_auth_methods_supported=["none", "client_secret_basic"])))
    assert isinstance(command, Fetch) and command.json is not None
    assert command.json["application_type"] == kind
    assert command.json["grant_types"] == ["authorization_code", "refresh_token"]
    assert command.json["token_endpoint_auth_method"] == "none"


def test_a_refused_registration_is_retried_once_with_the_other_application_type() -> None:
    m = machine()
    to_metadata(m)
    m.fetched(ok(as_meta()))
    again = m.fetched(ok({"error": "invalid_redirect_uri"}, 400))
    assert isinstance(again, Fetch) and again.json is not None and again.json["application_type"] == "web"
    failed = m.fetched(ok({"error": "invalid_redirect_uri"}, 400))
    assert isinstance(failed, Failed) and failed.rule == "oauth.registration-refused"


def test_a_later_registration_may_retry_with_the_other_type_again() -> None:
    m = machine()
    to_metadata(m)
    m.fetched(ok(as_meta()))
    m.fetched(ok({"error": "invalid_redirect_uri"}, 400))
    m.fetched(ok({"client_id": "as1-client"}, 201))
    m.challenged(challenge())
    m.fetched(ok(prm(authorization_servers=["https://as2.ex.com"])))
    m.fetched(ok(as_meta("https://as2.ex.com")))
    again = m.fetched(ok({"error": "invalid_client_metadata"}, 400))
    assert isinstance(again, Fetch) and again.json is not None and again.json["application_type"] == "web"


def test_no_way_to_get_a_client_id_fails_with_no_client() -> None:
    m = machine()
    to_metadata(m)
    meta = as_meta()
    del meta["registration_endpoint"]
    failed = m.fetched(ok(meta))
    assert isinstance(failed, Failed) and failed.rule == "oauth.no-client"


@pytest.mark.parametrize(("settings_scope", "header", "prm_scopes", "listed", "expected"), [
    ("mine", 'Bearer scope="challenged"', ["a", "b"], None, "mine"),
    ("", 'Bearer scope="challenged"', ["a", "b"], None, "challenged"),
    ("", "Bearer", ["a", "b"], None, "a b"),
    ("", "Bearer", None, None, None),
    ("", "Bearer", [], ["offline_access"], None),
    ("", "Bearer", ["a"], ["a", "offline_access"], "a offline_access"),
    ("a offline_access", "Bearer", None, ["offline_access"], "a offline_access"),
    ("", "Bearer", ["a", "offline_access"], ["a"], "a offline_access"),
])
def test_scope_selection_order(settings_scope: str, header: str, prm_scopes: Any, listed: Any,
                               expected: str | None) -> None:
    m = machine(scope=settings_scope)
    meta = as_meta() if listed is None else as_meta(scopes_supported=listed)
    prm_doc = prm() if prm_scopes is None else prm(scopes_supported=prm_scopes)
    authorize = to_authorize(m, meta=meta, prm_doc=prm_doc, first=challenge(value=header))
    assert query(authorize.url).get("scope") == expected


def test_offline_access_is_not_added_when_turned_off() -> None:
    authorize = to_authorize(machine(offline_access=False), meta=as_meta(scopes_supported=["offline_access"]),
                             prm_doc=prm(scopes_supported=["a"]))
    assert query(authorize.url)["scope"] == "a"


@pytest.mark.parametrize(("resource", "issuer", "token_endpoint", "rule"), [
    ("https://mcp.ex.com:bad/mcp", AS, f"{AS}/token", "oauth.resource-mismatch"),
    ("https://[mcp/mcp", AS, f"{AS}/token", "oauth.resource-mismatch"),
    (MCP, AS, "https://[as/token", "oauth.insecure-endpoint"),
    (MCP, AS, "https://as.ex.com:x/token", "oauth.insecure-endpoint"),
    (MCP, "https://[as", None, "oauth.server-metadata-missing"),
])
def test_malformed_urls_from_the_server_fail_a_step_instead_of_raising(resource: str, issuer: str,
                                                                        token_endpoint: str | None, rule: str) -> None:
    m = machine()
    m.challenged(challenge())
    command = m.fetched(ok(prm(resource=resource, authorization_servers=[issuer])))
    while isinstance(command, Fetch):  # metadata URLs built from a broken issuer cannot answer
        command = m.fetched(ok(as_meta(token_endpoint=token_endpoint)) if token_endpoint else Answer(problem="bad"))
    assert isinstance(command, Failed) and command.rule == rule


@pytest.mark.parametrize(("headers", "rule"), [
    ([("WWW-Authenticate", 'Basic realm="x"')], "oauth.challenge-missing"),
    ([("WWW-Authenticate", "Bearer")], "oauth.cors-expose"),
    ([("WWW-Authenticate", "Bearer"), ("Access-Control-Expose-Headers", "WWW-Authenticate")], None)])
def test_the_challenge_step_notes_a_missing_or_unreadable_challenge(headers: list[tuple[str, str]],
                                                                    rule: str | None) -> None:
    m = machine()
    command = m.challenged(bearer_challenge(401, headers), exchange="x1")
    assert isinstance(command, Fetch) and command.step == "resource metadata"
    assert [f.rule for f in m.steps[0].findings] == ([rule] if rule else [])
    assert m.steps[0].exchanges == ["x1"]
