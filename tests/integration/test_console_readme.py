"""The guide documents every setting (one typed settings object; each field has a help line), and the README
links to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import documented_fields

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"


def test_settings_have_help_lines() -> None:
    fields = documented_fields()
    assert fields
    assert all(help_text.strip() for _name, help_text in fields), [name for name, text in fields if not text]


@pytest.mark.parametrize("name", [name for name, _help in documented_fields()])
def test_the_guide_documents_the_setting_and_the_readme_links_to_the_guide(name: str) -> None:
    assert "docs/guide.md" in README.read_text(encoding="utf-8")
    text = GUIDE.read_text(encoding="utf-8")
    assert f"`{name}`" in text, f"docs/guide.md does not mention the setting `{name}`"
