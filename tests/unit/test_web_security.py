"""Host allow-list, Origin checks and the owner token comparison."""

from __future__ import annotations

import pytest

from app.web.security import COOKIE, Guard, hostname, token_matches


@pytest.mark.parametrize("header, host", [
    ("127.0.0.1", "127.0.0.1"),
    ("127.0.0.1:8765", "127.0.0.1"),
    ("LocalHost:80", "localhost"),
    (" localhost ", "localhost"),
    ("[::1]", "[::1]"),
    ("[::1]:8765", "[::1]"),
    ("::1", "::1"),
    ("example.com:443", "example.com"),
    ("[::1", "[::1"),
])
def test_hostname_strips_the_port_and_lower_cases(header: str, host: str) -> None:
    assert hostname(header) == host


@pytest.fixture
def guard() -> Guard:
    return Guard("s3cret", extra_hosts={"Console.Internal", ""})


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8765", "localhost", "localhost:1", "[::1]", "[::1]:8765",
                                  "console.internal:8765"])
def test_host_ok_accepts_local_hosts_and_configured_extra_hosts(guard: Guard, host: str) -> None:
    assert guard.host_ok(host)


@pytest.mark.parametrize("host", ["evil.com", "127.0.0.1.evil.com", "127.0.0.1.evil.com:8765", "localhost.evil.com",
                                  "127.0.0.2", "0.0.0.0", "", None, "[::2]:8765", "[::1]evil.example", "[::1]:80:81"])
def test_host_ok_refuses_foreign_and_rebinding_hosts(guard: Guard, host: str | None) -> None:
    assert not guard.host_ok(host)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8765", "http://127.0.0.1", "http://localhost:3000",
                                    "https://localhost", "http://[::1]:9999", "http://console.internal:1"])
def test_origin_ok_accepts_only_the_consoles_own_origin(guard: Guard, origin: str) -> None:
    host = origin.split("://", 1)[1]
    scheme = origin.split("://", 1)[0]
    assert guard.origin_ok(origin, None, host, scheme)
    assert guard.origin_ok(origin, "same-origin", host, scheme)


def test_origin_ok_refuses_another_port_on_the_same_host(guard: Guard) -> None:
    # A dev server on :3000 is same-site to the browser and would carry the owner's cookie.
    assert not guard.origin_ok("http://127.0.0.1:3000", None, "127.0.0.1:8765", "http")
    assert not guard.origin_ok("http://localhost:3000", "same-site", "localhost:8765", "http")
    assert not guard.origin_ok("http://localhost:8765", None, "127.0.0.1:8765", "http")


@pytest.mark.parametrize("origin", ["http://evil.com", "http://127.0.0.1.evil.com:8765", "http://localhost.evil.com",
                                    "null", "file://localhost/x", "ws://127.0.0.1:8765", ""])
def test_origin_ok_refuses_foreign_origins(guard: Guard, origin: str) -> None:
    assert not guard.origin_ok(origin, None, "127.0.0.1:8765", "http")


def test_origin_ok_refuses_a_cross_site_fetch_even_with_a_local_origin(guard: Guard) -> None:
    assert not guard.origin_ok("http://127.0.0.1:8765", "cross-site", "127.0.0.1:8765", "http")
    assert not guard.origin_ok(None, "cross-site", "127.0.0.1:8765", "http")


def test_origin_ok_allows_a_request_without_origin(guard: Guard) -> None:
    assert guard.origin_ok(None, None, "127.0.0.1:8765", "http")
    assert guard.origin_ok(None, "none", "127.0.0.1:8765", "http")


def test_token_matches_only_the_exact_token() -> None:
    assert token_matches("s3cret", "s3cret")
    assert not token_matches("s3cre", "s3cret")
    assert not token_matches("s3cret ", "s3cret")
    assert not token_matches("S3CRET", "s3cret")
    assert not token_matches(None, "s3cret")
    assert not token_matches("", "s3cret")
    assert not token_matches("sécret", "s3cret")


def test_caller_token_prefers_a_bearer_header_over_the_cookie(guard: Guard) -> None:
    assert guard.caller_token({"authorization": "Bearer  abc "}, {COOKIE: "cookie"}) == "abc"
    assert guard.caller_token({"authorization": "bearer abc"}, {}) == "abc"
    assert guard.caller_token({"authorization": "Basic abc"}, {COOKIE: "cookie"}) == "cookie"
    assert guard.caller_token({}, {}) is None


def test_origin_ok_refuses_the_right_host_and_port_under_the_wrong_scheme(guard: Guard) -> None:
    assert not guard.origin_ok("https://127.0.0.1:8765", None, "127.0.0.1:8765", "http")
    assert not guard.origin_ok("http://127.0.0.1:8765", None, "127.0.0.1:8765", "https")
    assert guard.origin_ok("http://127.0.0.1:8765", None, "127.0.0.1:8765", "ws")  # a websocket over plain HTTP


def test_is_public_needs_the_public_name_and_the_consoles_own_port() -> None:
    guard = Guard("a-long-enough-owner-token", public_host="mcp-abc.localhost")
    assert guard.is_public("mcp-abc.localhost:8765", 8765)
    assert guard.is_public("MCP-ABC.localhost:8765", 8765)
    assert guard.is_public("mcp-abc.localhost", 80)
    assert not guard.is_public("mcp-abc.localhost:9999", 8765)
    assert not guard.is_public("127.0.0.1:8765", 8765)
    assert not guard.is_public("localhost:8765", 8765)
    assert not guard.is_public(None, 8765)
    assert guard.host_ok("mcp-abc.localhost:8765"), "the public host is on the allow-list"


def test_public_url_is_built_from_the_configured_host_and_port_only() -> None:
    guard = Guard("a-long-enough-owner-token", public_host="mcp-abc.localhost")
    assert guard.public_url("/s/x", 8765) == "http://mcp-abc.localhost:8765/s/x"
    assert guard.public_url("/s/x", 80) == "http://mcp-abc.localhost/s/x"


@pytest.mark.parametrize("token", ["t", "short-token", "x" * 15])
def test_a_set_owner_token_shorter_than_16_characters_is_refused(token: str) -> None:
    from app.web.security import token_problem

    problem = token_problem(token)
    assert problem is not None and "16" in problem
    assert token_problem("x" * 16) is None
    assert token_problem(None) is None


@pytest.mark.parametrize(("name", "status"), [(b"host", 400), (b"origin", 403)])
def test_a_request_with_two_host_or_two_origin_headers_is_refused_whichever_comes_first(
        guard: Guard, name: bytes, status: int) -> None:
    good = {b"host": b"127.0.0.1:8765", b"origin": b"http://127.0.0.1:8765"}[name]
    evil = {b"host": b"evil.example", b"origin": b"http://evil.example"}[name]
    for pair in ((evil, good), (good, evil)):
        headers = [(b"host", b"127.0.0.1:8765")] if name == b"origin" else []
        scope = {"type": "http", "method": "POST", "scheme": "http", "server": ("127.0.0.1", 8765),
                 "headers": headers + [(name.upper() if i else name, value) for i, value in enumerate(pair)]}
        assert guard.screen(scope).status == status
