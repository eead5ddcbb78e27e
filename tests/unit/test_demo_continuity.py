"""`mcp-console demo` keeps the demo server's requestState key and port in the data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.cli import DEMO_KEY_FILE, DEMO_PORT_FILE, demo_continuity


@pytest.mark.parametrize("kept", ["", "not hex", "ab" * 8])
def test_a_key_file_that_holds_no_key_is_replaced_by_one_and_said(tmp_path: Path, kept: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / DEMO_KEY_FILE).write_text(kept)
    key_file, _ = demo_continuity(tmp_path, 0)
    assert len(bytes.fromhex(key_file.read_text())) == 32
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert "was not a key" in capsys.readouterr().err


def test_a_key_is_kept_across_starts_and_made_the_owner_s_alone(tmp_path: Path) -> None:
    key_file, _ = demo_continuity(tmp_path, 0)
    first = key_file.read_text()
    os.chmod(key_file, 0o644)
    again, _ = demo_continuity(tmp_path, 0)
    assert again.read_text() == first and again.stat().st_mode & 0o777 == 0o600


def test_the_port_of_last_time_is_asked_for_again_and_a_port_given_wins(tmp_path: Path) -> None:
    (tmp_path / DEMO_PORT_FILE).write_text("0")
    assert demo_continuity(tmp_path, 0)[1] == 0
    (tmp_path / DEMO_PORT_FILE).write_text("65000")
    assert demo_continuity(tmp_path, 0)[1] in (65000, 0)  # 0 when something else holds it now
    assert demo_continuity(tmp_path, 5555)[1] == 5555
