"""Settings: one typed object read from MCP_CONSOLE_* variables, with overrides on top."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from app.settings import Settings, documented_fields


def test_from_env_with_an_empty_environment_gives_the_defaults() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert (settings.host, settings.port, settings.token) == ("127.0.0.1", 8765, None)
    assert settings.allow_all_interfaces is False


def test_from_env_reads_mcp_console_variables_with_their_types() -> None:
    settings = Settings.from_env({
        "MCP_CONSOLE_HOST": "localhost",
        "MCP_CONSOLE_PORT": "9000",
        "MCP_CONSOLE_TOKEN": "tok",
        "MCP_CONSOLE_REQUEST_IDLE_TIMEOUT_S": "2.5",
        "MCP_CONSOLE_MAX_MESSAGE_BYTES": "1024",
        "MCP_CONSOLE_ALLOW_ALL_INTERFACES": "true",
        "MCP_CONSOLE_STDIO_SHUTDOWN_GRACE_S": "1",
    })
    assert settings.host == "localhost"
    assert settings.port == 9000 and type(settings.port) is int
    assert settings.token == "tok"
    assert settings.request_idle_timeout_s == 2.5 and type(settings.request_idle_timeout_s) is float
    assert settings.max_message_bytes == 1024
    assert settings.allow_all_interfaces is True
    assert settings.stdio_shutdown_grace_s == 1.0 and type(settings.stdio_shutdown_grace_s) is float


@pytest.mark.parametrize("raw, value", [("1", True), ("TRUE", True), ("yes", True), (" on ", True),
                                        ("0", False), ("false", False), ("no", False), ("", False)])
def test_from_env_reads_booleans_from_common_words(raw: str, value: bool) -> None:
    assert Settings.from_env({"MCP_CONSOLE_ALLOW_ALL_INTERFACES": raw}).allow_all_interfaces is value


def test_from_env_ignores_variables_without_the_prefix_or_for_unknown_fields() -> None:
    settings = Settings.from_env({"PORT": "1", "MCP_CONSOLE_NOPE": "x", "mcp_console_port": "2"})
    assert settings == Settings()


def test_from_env_raises_on_a_value_of_the_wrong_type() -> None:
    with pytest.raises(ValueError):
        Settings.from_env({"MCP_CONSOLE_PORT": "eighty"})


def test_overrides_win_over_the_environment() -> None:
    settings = Settings.from_env({"MCP_CONSOLE_PORT": "9000", "MCP_CONSOLE_HOST": "localhost"}, port=1234)
    assert settings.port == 1234
    assert settings.host == "localhost"


def test_none_overrides_are_ignored() -> None:
    settings = Settings.from_env({"MCP_CONSOLE_PORT": "9000"}, port=None, token=None)
    assert settings.port == 9000
    assert settings.token is None


def test_from_env_reads_os_environ_when_no_mapping_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CONSOLE_TIMELINE_WINDOW", "50")
    assert Settings.from_env().timeline_window == 50


def test_db_path_lives_in_the_expanded_data_dir(tmp_path: Path) -> None:
    assert Settings(data_dir=str(tmp_path)).db_path == tmp_path / "console.sqlite3"
    assert "~" not in str(Settings(data_dir="~/x").db_path)


def test_every_field_has_a_help_line() -> None:
    documented = dict(documented_fields())
    assert set(documented) == {f.name for f in fields(Settings)}
    assert all(text.strip() for text in documented.values())
