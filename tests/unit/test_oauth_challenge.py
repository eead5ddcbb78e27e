"""The WWW-Authenticate parser (app/mcp/oauth/challenge.py): what a server said, never an exception."""

from __future__ import annotations

import pytest

from app.mcp.oauth.challenge import MAX_HEADER, bearer_challenge, parse_challenges


def test_several_schemes_in_one_header_are_split_at_commas_outside_quotes() -> None:
    got = parse_challenges('Basic realm="a, b", Bearer scope="read write", error="invalid_token"')
    assert got == [("basic", {"realm": "a, b"}), ("bearer", {"scope": "read write", "error": "invalid_token"})]


def test_scheme_and_parameter_names_are_lowercased_but_values_kept() -> None:
    assert parse_challenges('BEARER Scope="Read", ERROR=Invalid_Token') == [
        ("bearer", {"scope": "Read", "error": "Invalid_Token"})]


def test_quoted_strings_keep_escaped_quotes_and_commas() -> None:
    got = parse_challenges(r'Bearer error_description="say \"hi\", then go", scope=x')
    assert got == [("bearer", {"error_description": 'say "hi", then go', "scope": "x"})]


def test_bare_values_and_spaces_around_equals_are_read() -> None:
    assert parse_challenges("Bearer realm = mcp , scope= a") == [("bearer", {"realm": "mcp", "scope": "a"})]


def test_a_token68_is_kept_under_the_empty_name() -> None:
    assert parse_challenges("Negotiate abc==, Bearer") == [("negotiate", {"": "abc=="}), ("bearer", {})]


def test_a_lone_scheme_opens_a_challenge_without_parameters() -> None:
    assert parse_challenges("Bearer") == [("bearer", {})]


@pytest.mark.parametrize("value", ['Bearer scope="unterminated', 'Bearer ="x"', ",,,", '"', "=", "Bearer a=\"\\",
                                   "\x00\xff Bearer", "Bearer scope=\"a\\", "  ", ""])
def test_malformed_headers_never_raise(value: str) -> None:
    assert isinstance(parse_challenges(value), list)
    assert bearer_challenge(401, [("WWW-Authenticate", value)]).status == 401


def test_an_unterminated_quoted_value_runs_to_the_end() -> None:
    assert parse_challenges('Bearer scope="a b') == [("bearer", {"scope": "a b"})]


def test_a_header_longer_than_8_kib_is_cut_before_parsing() -> None:
    value = 'Bearer scope="' + "s" * (MAX_HEADER * 2) + '"'
    params = parse_challenges(value)[0][1]
    assert len(params["scope"]) < MAX_HEADER
    challenge = bearer_challenge(401, [("WWW-Authenticate", value)])
    assert len(challenge.raw) == MAX_HEADER


def test_bearer_is_found_in_a_later_header_and_raw_joins_them_all() -> None:
    challenge = bearer_challenge(401, [("www-authenticate", 'Basic realm="x"'),
                                       ("WWW-Authenticate", 'Bearer resource_metadata="https://ex.com/prm"')])
    assert challenge.bearer
    assert challenge.resource_metadata == "https://ex.com/prm"
    assert challenge.raw == 'Basic realm="x", Bearer resource_metadata="https://ex.com/prm"'


def test_without_a_bearer_challenge_the_params_are_empty_but_the_raw_is_kept() -> None:
    challenge = bearer_challenge(401, [("WWW-Authenticate", 'Basic realm="x"')])
    assert not challenge.bearer
    assert challenge.params == {}
    assert challenge.raw == 'Basic realm="x"'
    assert "Basic" in challenge.describe()


def test_no_header_at_all_describes_itself_as_such() -> None:
    challenge = bearer_challenge(401, [])
    assert challenge.describe() == "HTTP 401 (no WWW-Authenticate challenge)"
    assert challenge.scope is None and challenge.error is None and challenge.resource_metadata is None


def test_a_blank_scope_reads_as_none() -> None:
    assert bearer_challenge(401, [("WWW-Authenticate", 'Bearer scope="  "')]).scope is None


@pytest.mark.parametrize(("expose", "exposed"), [
    ("Content-Type, WWW-Authenticate", True), ("*", True), ("www-authenticate", True),
    ("Content-Type", False), (None, False)])
def test_exposed_follows_access_control_expose_headers(expose: str | None, exposed: bool) -> None:
    headers = [("WWW-Authenticate", "Bearer")]
    if expose is not None:
        headers.append(("Access-Control-Expose-Headers", expose))
    assert bearer_challenge(401, headers).exposed is exposed


@pytest.mark.parametrize(("status", "expected"), [(403, True), (401, False), (400, False)])
def test_insufficient_scope_counts_only_on_a_403(status: int, expected: bool) -> None:
    challenge = bearer_challenge(status, [("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="a"')])
    assert challenge.insufficient_scope is expected


def test_a_403_with_another_error_is_not_insufficient_scope() -> None:
    assert not bearer_challenge(403, [("WWW-Authenticate", 'Bearer error="invalid_token"')]).insufficient_scope


@pytest.mark.parametrize("token68", ["abc=", "abc==", "YWxhZGRpbjpvcGVuc2VzYW1l", "a+b/c="])
def test_a_token68_with_any_padding_is_kept_whole(token68: str) -> None:
    assert parse_challenges(f"Negotiate {token68}") == [("negotiate", {"": token68})]
