"""The two reference pages of the documentation site, made from the code at build time.

`docs/cli.md` comes from the argparse parser (`app.cli.parser()`) and `docs/settings.md` from the settings
object (`app/settings.py`). Other engineers change both while the docs stand still, so neither page is written
by hand or committed: mkdocs.yml loads this file as a hook, and `on_files` adds the pages to each build
(`mkdocs build`, `mkdocs serve`). `python scripts/gen_docs.py DIR` writes them to DIR to read them without a build.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mkdocs loads this file by path; the app must import from the tree it documents
    sys.path.insert(0, str(ROOT))

HELP_WIDTH = 80  # argparse wraps to the terminal; a fixed width makes the page the same everywhere and fits the column
CLI_PAGE = "cli.md"
SETTINGS_PAGE = "settings.md"
# A setting whose flag is named apart from it: the flag's name says how dangerous it is.
FLAG_ALIASES = {"allow_all_interfaces": "dangerously_bind_all_interfaces"}
FLAGS_FROM = "serve"  # the subcommand whose options set the console's settings (demo takes the same ones)


# -- the command line --------------------------------------------------------------------------------------------
def commands(top: argparse.ArgumentParser) -> list[tuple[list[str], str, argparse.ArgumentParser]]:
    """Every subcommand, depth first: its words after the program name, its one-line help and its parser."""
    found: list[tuple[list[str], str, argparse.ArgumentParser]] = []

    def walk(p: argparse.ArgumentParser, words: list[str]) -> None:
        for action in p._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append(([*words, name], str(helps.get(name, "")), sub))
                walk(sub, [*words, name])

    walk(top, [])
    return found


def help_text(p: argparse.ArgumentParser) -> str:
    """What `--help` prints, at a fixed width."""
    formatter = p.formatter_class(prog=p.prog, width=HELP_WIDTH)  # type: ignore[call-arg]
    formatter.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    formatter.add_text(p.description)
    for group in p._action_groups:
        formatter.start_section(group.title)
        formatter.add_text(group.description)
        formatter.add_arguments(group._group_actions)
        formatter.end_section()
    formatter.add_text(p.epilog)
    return formatter.format_help().rstrip() + "\n"


def anchor(words: list[str]) -> str:
    return "-".join(words)


def cli_page(top: argparse.ArgumentParser | None = None) -> str:
    if top is None:
        from app.cli import parser

        top = parser()
    found = commands(top)
    lines = [
        "# CLI reference",
        "",
        "Generated from the program's own argument parser (`app.cli.parser()`) each time the site is built, so it",
        "says what `--help` says. `python -m app …` is the same program. How the commands behave, with examples, is",
        "in the [guide](guide.md#command-line).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`mcp-console {' '.join(words)}`](#{anchor(words)}) | {_cell(text)} |" for words, text, _ in found]
    lines += ["", f"## `{top.prog}` {{ #top }}", "", "```text", help_text(top).rstrip(), "```", ""]
    for words, text, sub in found:
        lines += [f"## `mcp-console {' '.join(words)}` {{ #{anchor(words)} }}", ""]
        if text:
            lines += [_escape(text[:1].upper() + text[1:].rstrip(".")) + ".", ""]  # help may end in its own period
        lines += ["```text", help_text(sub).rstrip(), "```", ""]
    return "\n".join(lines)


# -- the settings ------------------------------------------------------------------------------------------------
def _flags(top: argparse.ArgumentParser) -> dict[str, str]:
    """Setting name → the long flag of `serve` that sets it."""
    serve = next((p for words, _, p in commands(top) if words == [FLAGS_FROM]), None)
    if serve is None:
        raise SystemExit(f"docs: the parser has no `{FLAGS_FROM}` subcommand to read the settings' flags from")
    by_dest = {a.dest: a.option_strings[-1] for a in serve._actions if a.option_strings}
    for setting, dest in FLAG_ALIASES.items():
        if dest not in by_dest:  # renamed in app/cli.py: say so rather than print a flag that does not exist
            raise SystemExit(f"docs: the setting {setting} is said to be set by --{dest.replace('_', '-')}, "
                             f"which `{FLAGS_FROM}` no longer has; update FLAG_ALIASES in {Path(__file__).name}")
        by_dest[setting] = by_dest[dest]
    return by_dest


def shown_default(value: Any) -> str:
    """A default as a reader would type it: the builder's home as `~`, sizes with their unit beside."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 1024 * 1024 and value % (1024 * 1024) == 0:
        return f"`{value}` ({value // (1024 * 1024)} MiB)"
    text = str(value)
    home = str(Path.home())
    if text.startswith(home + "/"):
        text = "~" + text[len(home):]
    return f"`{text}`" if text else "empty"


def settings_page(top: argparse.ArgumentParser | None = None) -> str:
    from app.settings import Settings

    if top is None:
        from app.cli import parser

        top = parser()
    flags = _flags(top)
    defaults = Settings()
    lines = [
        "# Settings reference",
        "",
        "Generated from the settings object (`app/settings.py`) each time the site is built. Every setting is read",
        "once, at start, from the environment variable `MCP_CONSOLE_<NAME>`; a flag of `mcp-console serve` (and",
        "`demo`), where there is one, overrides it. A boolean is true for `1`, `true`, `yes` or `on`. The team",
        "settings are explained together in [Team deployment](team.md).",
        "",
        "| setting (its variable: `MCP_CONSOLE_` and the name in capitals) | default | flag |",
        "|---|---|---|",
    ]
    fields = dataclasses.fields(Settings)
    for f in fields:
        flag = f"`{flags[f.name]}`" if f.name in flags else ""
        lines.append(f"| [`{f.name}`](#{f.name}) | {_cell(shown_default(getattr(defaults, f.name)))} | {flag} |")
    lines.append("")
    for f in fields:
        kind = str(f.type).replace(" | None", ", optional")
        lines += [f"## `{f.name}` {{ #{f.name} }}", "",
                  f"`MCP_CONSOLE_{f.name.upper()}` · {kind} · default {shown_default(getattr(defaults, f.name))}"
                  + (f" · flag `{flags[f.name]}`" if f.name in flags else ""), "",
                  _escape(str(f.metadata.get("help", ""))), ""]
    return "\n".join(lines)


# -- markdown ----------------------------------------------------------------------------------------------------
def _escape(text: str) -> str:
    """Help text as plain Markdown: what is between backticks stays code, the rest cannot become markup."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all, every backtick shown as one
        return "\\`".join(_plain(part) for part in parts)
    return "`".join(part if i % 2 else _plain(part) for i, part in enumerate(parts))


def _plain(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "\\*_[]":
        text = text.replace(char, "\\" + char)
    return text


def _cell(text: str) -> str:
    return _escape(text).replace("|", "\\|")


def pages() -> dict[str, str]:
    from app.cli import parser

    top = parser()
    return {CLI_PAGE: cli_page(top), SETTINGS_PAGE: settings_page(top)}


# -- the mkdocs hook ---------------------------------------------------------------------------------------------
def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the build (mkdocs 1.6 hook)."""
    from mkdocs.structure.files import File

    for name, text in pages().items():
        if files.get_file_from_path(name) is not None:
            raise SystemExit(f"docs/{name} is generated at build time: delete the file in docs/")
        files.append(File.generated(config, name, content=text))
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/gen_docs.py DIR   (writes cli.md and settings.md into DIR)", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (out / name).write_text(text, encoding="utf-8")
        print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
