"""Canonical resource URIs and the discovery URL orders (app/mcp/oauth/urls.py, oauth.md §2 and §4)."""

from __future__ import annotations

import pytest

from app.mcp.oauth.urls import (
    canonical_resource,
    is_loopback,
    prm_urls,
    resource_covers,
    server_metadata_urls,
    with_query,
)


@pytest.mark.parametrize(("url", "canonical"), [
    ("HTTPS://MCP.Ex.COM/Mcp", "https://mcp.ex.com/Mcp"),
    ("https://mcp.ex.com:443/mcp", "https://mcp.ex.com/mcp"),
    ("http://mcp.ex.com:80/mcp", "http://mcp.ex.com/mcp"),
    ("https://mcp.ex.com:8443", "https://mcp.ex.com:8443"),
    ("https://mcp.ex.com/", "https://mcp.ex.com"),
    ("https://mcp.ex.com", "https://mcp.ex.com"),
    ("https://mcp.ex.com/mcp?key=secret#frag", "https://mcp.ex.com/mcp"),
    ("https://user:pw@mcp.ex.com/mcp", "https://mcp.ex.com/mcp"),
    ("http://[::1]:8080/mcp", "http://[::1]:8080/mcp"),
    ("http://[::1]:80/", "http://[::1]"),
    ("  https://mcp.ex.com/mcp/  ", "https://mcp.ex.com/mcp/"),
])
def test_canonical_resource(url: str, canonical: str) -> None:
    assert canonical_resource(url) == canonical


def test_prm_urls_try_the_header_then_path_inserted_then_root() -> None:
    assert prm_urls("https://ex.com/public/mcp", "https://ex.com/custom/prm.json") == [
        "https://ex.com/custom/prm.json",
        "https://ex.com/.well-known/oauth-protected-resource/public/mcp",
        "https://ex.com/.well-known/oauth-protected-resource"]


def test_prm_urls_without_a_header_start_with_the_path_inserted_one() -> None:
    assert prm_urls("https://Ex.com/public/mcp/", None) == [
        "https://ex.com/.well-known/oauth-protected-resource/public/mcp",
        "https://ex.com/.well-known/oauth-protected-resource"]


def test_prm_urls_list_a_header_url_equal_to_a_well_known_one_once() -> None:
    header = "https://ex.com/.well-known/oauth-protected-resource/mcp"
    assert prm_urls("https://ex.com/mcp", header) == [header, "https://ex.com/.well-known/oauth-protected-resource"]


@pytest.mark.parametrize("url", ["https://ex.com", "https://ex.com/"])
def test_prm_urls_for_a_root_endpoint_are_the_root_one_only(url: str) -> None:
    assert prm_urls(url, None) == ["https://ex.com/.well-known/oauth-protected-resource"]


def test_server_metadata_urls_for_an_issuer_with_a_path_follow_the_three_step_order() -> None:
    assert server_metadata_urls("https://auth.ex.com/tenant1") == [
        ("https://auth.ex.com/.well-known/oauth-authorization-server/tenant1", "oauth"),
        ("https://auth.ex.com/.well-known/openid-configuration/tenant1", "oidc"),
        ("https://auth.ex.com/tenant1/.well-known/openid-configuration", "oidc")]


@pytest.mark.parametrize("issuer", ["https://auth.ex.com", "https://auth.ex.com/"])
def test_server_metadata_urls_for_an_issuer_without_a_path_are_the_two_root_ones(issuer: str) -> None:
    assert server_metadata_urls(issuer) == [
        ("https://auth.ex.com/.well-known/oauth-authorization-server", "oauth"),
        ("https://auth.ex.com/.well-known/openid-configuration", "oidc")]


@pytest.mark.parametrize(("advertised", "mcp_url", "covers"), [
    ("https://ex.com/mcp", "https://ex.com/mcp", True),
    ("HTTPS://EX.COM/mcp", "https://ex.com:443/mcp", True),
    ("https://ex.com", "https://ex.com/mcp", True),
    ("https://ex.com/", "https://ex.com/mcp", True),
    ("https://ex.com/public", "https://ex.com/public/mcp", True),
    ("https://ex.com/pub", "https://ex.com/public/mcp", False),
    ("https://ex.com/mcp/tools", "https://ex.com/mcp", False),
    ("https://evil.example.com/mcp", "https://ex.com/mcp", False),
    ("http://ex.com/mcp", "https://ex.com/mcp", False),
    ("https://ex.com:8443/mcp", "https://ex.com/mcp", False),
])
def test_resource_covers(advertised: str, mcp_url: str, covers: bool) -> None:
    assert resource_covers(advertised, mcp_url) is covers


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://localhost:3000/cb", True), ("http://LOCALHOST/cb", True), ("http://app.localhost/cb", True),
    ("http://127.0.0.1:9/cb", True), ("http://127.8.9.1/cb", True), ("http://[::1]:9/cb", True),
    ("http://localhost.evil.com/cb", False), ("https://ex.com/cb", False), ("http://10.0.0.1/cb", False),
    ("not a url", False)])
def test_is_loopback(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_with_query_appends_to_an_existing_query_and_drops_the_fragment() -> None:
    assert with_query("https://as.ex.com/auth?tenant=a#x", [("scope", "a b"), ("x", "&=")]) == \
        "https://as.ex.com/auth?tenant=a&scope=a+b&x=%26%3D"


def test_with_query_without_params_leaves_the_url_as_it_was() -> None:
    assert with_query("https://as.ex.com/auth?tenant=a", []) == "https://as.ex.com/auth?tenant=a"
    assert with_query("https://as.ex.com/auth", [("a", "1")]) == "https://as.ex.com/auth?a=1"
