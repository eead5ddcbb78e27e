"""The README documents every setting (one typed settings object; each field has a help line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import documented_fields

README = Path(__file__).resolve().parents[2] / "README.md"


def test_settings_have_help_lines() -> None:
    fields = documented_fields()
    assert fields
    assert all(help_text.strip() for _name, help_text in fields), [name for name, text in fields if not text]


@pytest.mark.parametrize("name", [name for name, _help in documented_fields()])
def test_the_readme_documents_the_setting(name: str) -> None:
    assert README.is_file(), "README.md is missing"
    text = README.read_text(encoding="utf-8")
    assert f"`{name}`" in text, f"README.md does not mention the setting `{name}`"
