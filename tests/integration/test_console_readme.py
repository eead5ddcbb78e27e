"""Every setting has a help line (one typed settings object), and the settings reference the docs site is built with
documents each one: it is generated from the settings object (scripts/gen_docs.py), and the README points at it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from app.cli import parser
from app.settings import documented_fields

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _settings_page() -> str:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.settings_page(parser()))


def test_settings_have_help_lines() -> None:
    fields = documented_fields()
    assert fields
    assert all(help_text.strip() for _name, help_text in fields), [name for name, text in fields if not text]


@pytest.mark.parametrize("name", [name for name, _help in documented_fields()])
def test_the_settings_reference_documents_the_setting_and_the_readme_points_at_it(name: str) -> None:
    assert "settings reference" in README.read_text(encoding="utf-8")
    assert f"## `{name}`" in _settings_page(), f"the generated settings reference has no section for `{name}`"
