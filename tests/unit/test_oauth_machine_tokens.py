"""The OAuth machine's later steps, step by step: the callback (state, RFC 9207 iss), the token, refresh,
step-up, a new authorization server, pending() after an edit, abort."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.mcp.oauth.grant import Grant, Registration
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import Authorize, Done, Failed, Fetch, Settings
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


@pytest.mark.parametrize(("advertised", "iss", "outcome"), [
    (True, AS, "token"), (True, None, "oauth.iss-missing"), (True, "https://evil.example.com", "oauth.iss-mismatch"),
    (None, AS, "token"), (False, None, "token"), (None, None, "token"),
    (False, "https://evil.example.com", "oauth.iss-mismatch"), (True, AS + "/", "oauth.iss-mismatch"),
    (None, "https://AS.ex.com", "oauth.iss-mismatch")])
def test_the_rfc_9207_iss_table(advertised: bool | None, iss: str | None, outcome: str) -> None:
    m = machine()
    meta = as_meta() if advertised is None else as_meta(authorization_response_iss_parameter_supported=advertised)
    authorize = to_authorize(m, meta=meta)
    params = {"code": "c", "state": authorize.state} | ({"iss": iss} if iss is not None else {})
    command = m.called_back(params)
    if outcome == "token":
        assert isinstance(command, Fetch) and command.step == "token"
    else:
        assert isinstance(command, Failed) and command.rule == outcome


def test_an_error_response_with_a_wrong_iss_never_surfaces_the_error_text() -> None:
    m = machine()
    authorize = to_authorize(m)
    failed = m.called_back({"state": authorize.state, "iss": "https://evil.example.com", "error": "access_denied",
                            "error_description": "EVIL-TEXT"})
    assert isinstance(failed, Failed) and failed.rule == "oauth.iss-mismatch"
    assert "EVIL-TEXT" not in json.dumps([s.to_dict() for s in m.steps]) + failed.message + failed.fix
    assert "access_denied" not in failed.message


def test_an_error_response_with_the_right_iss_is_reported() -> None:
    m = machine()
    authorize = to_authorize(m)
    failed = m.called_back({"state": authorize.state, "iss": AS, "error": "access_denied"})
    assert isinstance(failed, Failed) and failed.rule == "oauth.authorization-refused"
    assert "access_denied" in failed.message


@pytest.mark.parametrize("state", [None, "", "another"])
def test_a_callback_with_another_state_is_refused(state: str | None) -> None:
    m = machine()
    to_authorize(m)
    failed = m.called_back({"code": "c"} | ({"state": state} if state is not None else {}))
    assert isinstance(failed, Failed) and failed.rule == "oauth.state-mismatch"


@pytest.mark.parametrize("token_type", ["mac", "DPoP", None])
def test_a_token_that_is_not_bearer_is_refused(token_type: str | None) -> None:
    m = machine()
    to_token(m)
    failed = m.fetched(ok({"access_token": "at", "token_type": token_type}))
    assert isinstance(failed, Failed) and failed.rule == "oauth.token-invalid"


def test_a_refused_token_request_fails_with_the_servers_error() -> None:
    m = machine()
    to_token(m)
    failed = m.fetched(ok({"error": "invalid_grant", "error_description": "expired"}, 400))
    assert isinstance(failed, Failed) and failed.rule == "oauth.token-refused" and "invalid_grant: expired" in \
        failed.message


def held_grant(**extra: Any) -> Grant:
    return Grant(**({"issuer": AS, "resource": MCP, "access_token": "old-at", "refresh_token": "rt-old",
                     "token_endpoint": f"{AS}/token", "scope": "a b", "requested": "a b"} | extra))


def test_a_401_with_a_refresh_token_held_refreshes_and_keeps_the_old_refresh_token() -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=REDIRECT),
                    {AS: Registration(AS, "cid", redirect_uri=REDIRECT)}, held_grant())
    refresh = m.challenged(challenge())
    assert isinstance(refresh, Fetch) and refresh.step == "refresh" and refresh.url == f"{AS}/token"
    assert form(refresh) == {"grant_type": "refresh_token", "refresh_token": "rt-old", "resource": MCP,
                             "client_id": "cid"}
    done = m.fetched(bearer("new-at"))
    assert isinstance(done, Done)
    assert (done.grant.access_token, done.grant.refresh_token) == ("new-at", "rt-old")


def test_a_refresh_sends_the_resource_the_grant_was_issued_for() -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=REDIRECT), grant=held_grant(resource="https://mcp.ex.com"))
    refresh = m.challenged(challenge())
    assert isinstance(refresh, Fetch) and form(refresh)["resource"] == "https://mcp.ex.com"


def test_a_refresh_answer_without_scope_keeps_the_granted_scope() -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=REDIRECT), grant=held_grant())
    m.challenged(challenge())
    done = m.fetched(bearer("new-at"))
    assert isinstance(done, Done) and done.grant.scope == "a b" and done.grant.requested == "a b"


def test_a_refused_refresh_starts_discovery_again() -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=REDIRECT), grant=held_grant())
    m.challenged(challenge())
    command = m.fetched(ok({"error": "invalid_grant"}, 400))
    assert isinstance(command, Fetch) and command.step == "resource metadata" and command.url == PRM_URL
    assert m.grant is None


def test_step_ups_ask_for_the_union_and_stop_at_the_limit_when_nothing_new_is_asked() -> None:
    m = machine(max_step_ups=2)
    to_token(m, first=challenge(value='Bearer scope="a"'))
    m.fetched(bearer())
    forbidden = 'Bearer error="insufficient_scope", scope="{}", resource_metadata="' + PRM_URL + '"'
    # "b" is new (step-up 1 of 2), then "b" again adds nothing (2 of 2), then "b" once more is past the limit.
    for extra, expected in (("b", "a b"), ("b", "a b")):
        command = m.challenged(challenge(403, forbidden.format(extra)))
        assert isinstance(command, Fetch) and command.url == PRM_URL
        m.fetched(ok(prm()))
        authorize = m.fetched(ok(as_meta()))
        assert isinstance(authorize, Authorize) and query(authorize.url)["scope"] == expected
        m.called_back({"code": "c", "state": authorize.state})
        assert isinstance(m.fetched(bearer()), Done)
    failed = m.challenged(challenge(403, forbidden.format("b")))
    assert isinstance(failed, Failed) and failed.rule == "oauth.step-up-limit"


def test_a_step_up_that_asks_for_a_new_scope_starts_the_count_again() -> None:
    m = machine(max_step_ups=1)
    to_token(m, first=challenge(value='Bearer scope="a"'))
    m.fetched(bearer())
    forbidden = 'Bearer error="insufficient_scope", scope="{}", resource_metadata="' + PRM_URL + '"'
    for extra in ("b", "c"):  # each adds a scope: progress, so the limit of 1 is never reached
        assert isinstance(m.challenged(challenge(403, forbidden.format(extra))), Fetch)
        m.fetched(ok(prm()))
        authorize = m.fetched(ok(as_meta()))
        assert isinstance(authorize, Authorize)
        m.called_back({"code": "c", "state": authorize.state})
        assert isinstance(m.fetched(bearer()), Done)


def test_a_new_authorization_server_in_the_prm_means_registering_anew() -> None:
    m = machine()
    to_token(m)
    m.fetched(bearer())
    other = "https://as2.ex.com"
    m.challenged(challenge())
    m.fetched(ok(prm(authorization_servers=[other])))
    command = m.fetched(ok(as_meta(other)))
    assert isinstance(command, Fetch) and command.url == f"{other}/register"
    authorize = m.fetched(ok({"client_id": "as2-client"}, 201))
    assert isinstance(authorize, Authorize) and query(authorize.url)["client_id"] == "as2-client"
    assert authorize.url.startswith(f"{other}/authorize?")
    assert {k: r.client_id for k, r in m.registrations.items()} == {AS: "dyn-client", other: "as2-client"}


def test_a_registration_kept_for_the_issuer_is_reused_without_registering() -> None:
    m = AuthMachine(MCP, Settings(redirect_uri=REDIRECT), {AS: Registration(AS, "kept", redirect_uri=REDIRECT)})
    to_metadata(m)
    authorize = m.fetched(ok(as_meta()))
    assert isinstance(authorize, Authorize) and query(authorize.url)["client_id"] == "kept"


def test_pending_after_a_scope_edit_reflects_it_and_changes_nothing() -> None:
    m = machine()
    before = to_authorize(m, prm_doc=prm(scopes_supported=["a"]))
    m.settings.scope = "edited"
    snapshot = (m.phase, m._state, m._verifier, len(m.steps))
    again = m.pending()
    assert isinstance(again, Authorize) and query(again.url)["scope"] == "edited"
    assert again.state == before.state
    assert query(again.url)["code_challenge"] == query(before.url)["code_challenge"]
    assert (m.phase, m._state, m._verifier, len(m.steps)) == snapshot
    assert m.pending() == again
    m.called_back({"code": "c", "state": again.state})
    done = m.fetched(bearer())
    assert isinstance(done, Done) and done.grant.requested == "edited" and done.grant.scope == "edited"


def test_extra_params_cannot_change_what_the_token_request_must_repeat() -> None:
    m = machine(extra_params={"resource": "https://other.ex.com", "redirect_uri": "https://evil/cb",
                              "audience": "api"})
    params = query(to_authorize(m).url)
    assert params["resource"] == MCP and params["redirect_uri"] == REDIRECT and params["audience"] == "api"


def test_abort_marks_the_current_step_failed() -> None:
    m = machine()
    m.challenged(challenge())
    failed = m.abort("stopped by you")
    assert failed == Failed("resource metadata", "stopped by you")
    assert m.phase == "failed" and m.steps[-1].status == "failed"


def test_a_server_that_names_another_authorization_server_never_gets_the_refresh_token_of_the_first() -> None:
    m = machine()
    to_token(m)
    m.fetched(bearer(refresh_token="rt-of-as1"))
    assert m.grant is not None and m.grant.refresh_token == "rt-of-as1"
    evil = "https://evil.ex.com"
    # a step-up whose metadata names another authorization server: the grant of the first is dropped
    m.challenged(challenge(403, f'Bearer error="insufficient_scope", scope="x", resource_metadata="{PRM_URL}"'))
    command = m.fetched(ok(prm(authorization_servers=[evil])))
    assert isinstance(command, Fetch) and command.url.startswith(evil)
    assert m.grant is None
    m.fetched(ok(as_meta(evil, registration_endpoint=None)))  # it offers no registration: the run fails there
    refresh = m.challenged(challenge())  # the next 401: no grant, so no refresh to anyone
    assert not (isinstance(refresh, Fetch) and refresh.step == "refresh")


def test_a_refresh_goes_to_the_token_endpoint_of_the_grants_own_issuer_with_its_own_client() -> None:
    m = machine()
    to_token(m)
    m.fetched(bearer(refresh_token="rt"))
    m.metadata = as_meta("https://other.ex.com")  # whatever was read last
    m.issuer = "https://other.ex.com"
    refresh = m.challenged(challenge())
    assert isinstance(refresh, Fetch) and refresh.step == "refresh"
    assert refresh.url == f"{AS}/token" and form(refresh)["client_id"] == "dyn-client"


def test_a_pre_registered_client_id_is_bound_to_its_issuer_across_a_restart() -> None:
    m = machine(client_id="corp-client", client_secret="corp-secret")
    to_token(m)
    m.fetched(bearer())
    again = machine(client_id="corp-client", client_secret="corp-secret")
    again.registrations.update(m.registrations)  # what the store kept
    again.challenged(challenge())
    again.fetched(ok(prm(authorization_servers=["https://as2.ex.com"])))
    failed = again.fetched(ok(as_meta("https://as2.ex.com")))
    assert isinstance(failed, Failed) and failed.rule == "oauth.no-client"
