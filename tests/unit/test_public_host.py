"""The console's public host name: random and persisted for a loopback bind, the bind host otherwise."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.settings import Settings
from app.web.public_host import GENERATED, NAME_FILE, resolve_public_host, validated


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0", "::"])
def test_a_loopback_or_wildcard_bind_gets_a_random_localhost_name_kept_in_the_data_dir(
        tmp_path: Path, host: str) -> None:
    name = resolve_public_host(Settings(host=host, data_dir=str(tmp_path)))
    assert GENERATED.match(name), name
    kept = tmp_path / NAME_FILE
    assert kept.read_text().strip() == name
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert resolve_public_host(Settings(host=host, data_dir=str(tmp_path))) == name, "it survives a restart"


def test_two_data_dirs_get_different_names(tmp_path: Path) -> None:
    first = resolve_public_host(Settings(data_dir=str(tmp_path / "a")))
    assert first != resolve_public_host(Settings(data_dir=str(tmp_path / "b")))


def test_a_non_loopback_bind_uses_the_bind_host_and_a_set_public_host_wins(tmp_path: Path) -> None:
    assert resolve_public_host(Settings(host="192.0.2.10", data_dir=str(tmp_path))) == "192.0.2.10"
    assert resolve_public_host(Settings(host="2001:db8::1", data_dir=str(tmp_path))) == "[2001:db8::1]"
    assert resolve_public_host(Settings(host="192.0.2.10", public_host="Console.Example",
                                        data_dir=str(tmp_path))) == "console.example"
    assert not (tmp_path / NAME_FILE).exists()


@pytest.mark.parametrize("bad", ["http://x.localhost", "x.localhost:8765", "a/b", "0.0.0.0", "-x.example", "a b"])
def test_a_public_host_that_is_not_a_bare_name_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        validated(bad)
