"""The docs a newcomer reads: a README that fits on a screen and keeps its two commands, and a documentation site
whose CLI and settings references are generated from the code, so they cannot go stale."""

from __future__ import annotations

import argparse
import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from app.cli import parser
from app.settings import documented_fields

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RUN_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mcp-console demo"
TEST_COMMAND = "bash scripts/test.sh"


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def _subcommands(p: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...],
                                                                                      argparse.ArgumentParser]]:
    """Walked here on its own (not with the generator's walk), so a generator that skips one is caught."""
    found = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(((*words, name), sub))
                found += _subcommands(sub, (*words, name))
    return found


def test_the_readme_fits_in_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the detail into docs/"


@pytest.mark.parametrize("command", [RUN_COMMAND, TEST_COMMAND])
def test_the_readme_shows_each_of_the_two_commands_in_a_shell_block_of_its_own(command: str) -> None:
    blocks = re.findall(r"^```sh\n(.*?)\n```$", README.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    assert command in blocks, f"README.md has no ```sh block holding exactly {command!r}: {blocks}"


def test_every_relative_link_and_image_in_the_readme_points_at_a_file() -> None:
    targets = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    local = [t.split("#", 1)[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert local, "the README links into docs/"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_readme_keeps_the_security_section_and_links_the_security_model() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Security\n", 1)[1].split("\n## ", 1)[0]
    for fact in ("127.0.0.1", "Host", "Origin", "MCP_CONSOLE_TOKEN", "Secrets are values", "docs/security.md"):
        assert fact in section


def test_the_cli_reference_has_a_section_for_every_subcommand_of_the_parser() -> None:
    page = gen_docs.cli_page(parser())
    found = _subcommands(parser())
    assert {words[0] for words, _ in found} >= {"serve", "demo", "demo-server", "call", "check"}
    for words, sub in found:
        assert f"## `mcp-console {' '.join(words)}`" in page, f"no section for {' '.join(words)}"
        for action in sub._actions:
            for option in action.option_strings:
                assert option in page, f"mcp-console {' '.join(words)}: {option} is not in the CLI reference"


def test_a_subcommand_added_to_the_parser_appears_in_the_cli_reference_with_its_nested_commands() -> None:
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    listing = sub.add_parser("list-things", help="list what the server offers")
    kinds = listing.add_subparsers(dest="kind", required=True)
    kinds.add_parser("tools", help="the tools").add_argument("--json-output-here", action="store_true",
                                                             help="print JSON")
    page = gen_docs.cli_page(top)
    assert "## `mcp-console list-things` { #list-things }" in page
    assert "## `mcp-console list-things tools` { #list-things-tools }" in page
    assert "--json-output-here" in page and "print JSON" in page
    assert "[`mcp-console list-things tools`](#list-things-tools) | the tools |" in page


def test_the_settings_reference_documents_every_setting_with_its_variable_and_help_line() -> None:
    page = gen_docs.settings_page(parser())
    for name, help_text in documented_fields():
        section = page.split(f"## `{name}` {{ #{name} }}", 1)
        assert len(section) == 2, f"no section for the setting {name}"
        body = section[1].split("\n## ", 1)[0]
        assert f"`MCP_CONSOLE_{name.upper()}`" in body
        first_words = re.sub(r"[\\`*_]", "", help_text)[:30]
        assert first_words in re.sub(r"[\\`*_]", "", body), f"{name}: its help line is not in its section"


def test_the_settings_reference_names_the_flag_of_a_setting_that_has_one() -> None:
    page = gen_docs.settings_page(parser())
    assert "| [`data_dir`](#data_dir) | `~/.mcp-console` | `--data-dir` |" in page
    assert "`--dangerously-bind-all-interfaces`" in page.split("## `allow_all_interfaces`", 1)[1].split("\n## ")[0]


def test_help_text_cannot_become_markup_on_the_page() -> None:
    assert gen_docs._escape("a <b> & *c* under_score `code_x <y>`") == \
        "a &lt;b&gt; &amp; \\*c\\* under\\_score `code_x <y>`"
    assert gen_docs._escape("one ` alone_") == "one \\` alone\\_"
    assert gen_docs._cell("a | b") == "a \\| b"


def test_the_site_nav_holds_every_page_in_docs_and_the_two_generated_references() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in pages(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in pages(value)]
        return []

    nav = pages(config["nav"])
    written = {p.name for p in DOCS.glob("*.md")}
    assert set(nav) == written | {"cli.md", "settings.md"}
    assert not {"cli.md", "settings.md"} & written, "the references are generated at build time, not committed"
    assert config["hooks"] == ["scripts/gen_docs.py"] and config["strict"] is True


def test_the_home_page_takes_the_tour_from_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    tour = readme.split("[start:tour]", 1)[1].split("[end:tour]", 1)[0]
    assert "## A five-minute tour" in tour and "](" not in tour, "the tour is shown in both places: no relative links"
    assert '--8<-- "README.md:tour"' in (DOCS / "index.md").read_text(encoding="utf-8")


def test_the_full_test_run_builds_the_site_strictly_with_pinned_tools() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    full_run = script.split('if [ "${1:-}" = "--fast" ]', 1)[1].split("\nfi\n", 1)[1]
    build = [line for line in full_run.splitlines() if "mkdocs build" in line]
    assert len(build) == 1 and "--strict" in build[0] and "--quiet" not in build[0].split("#")[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert "mcp-console[docs]" in extras["test"]
    assert {d.split("==")[0] for d in extras["docs"] if "==" in d} == {"mkdocs", "mkdocs-material"}
