"""Credentials are masked wherever a target or a header is shown to someone who may not see them."""

from __future__ import annotations

from app.console.secrets import MASK, mask_argv, mask_headers, mask_url


def test_credential_looking_command_line_values_are_masked() -> None:
    shown = mask_argv(["server", "--api-key", "sk-123", "--token=abc", "DB_PASSWORD=hunter2", "--port", "80"])
    assert "sk-123" not in shown and "abc" not in shown and "hunter2" not in shown
    assert shown == f"server --api-key {MASK} --token={MASK} DB_PASSWORD={MASK} --port 80"


def test_userinfo_and_credential_query_parameters_are_masked_in_a_url() -> None:
    shown = mask_url("https://user:pw@example.com/mcp?api_key=k1&region=eu&token=t2")
    assert "pw" not in shown and "k1" not in shown and "t2" not in shown
    assert "region=eu" in shown and "example.com/mcp" in shown


def test_the_authorization_scheme_stays_visible_while_its_credential_is_masked() -> None:
    assert mask_headers([["Authorization", "Bearer s3cret"], ["Accept", "x"]]) == [
        ["Authorization", f"Bearer {MASK}"], ["Accept", "x"]]
