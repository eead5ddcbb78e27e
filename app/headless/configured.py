"""`--config FILE --server NAME`: a headless command's target from a config file (app/workspace/configs.py).

Without --server, a file of one server means that one; a file of several prints their names and exits 2.
`${env:NAME}` comes from the environment; a `${input:ID}` from `MCP_CONSOLE_INPUT_<ID>` (the console's prefix: a
started server never inherits it), else asked on the terminal (hidden for a password input), else the run stops
with exit 2 naming what is missing (never a value).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.console.target import Target
from app.mcp.stdio import inherited_env
from app.workspace.config_targets import target_of
from app.workspace.configs import ConfigError, ConfigFile, Entry, read_config

EXIT_USAGE = 2
INPUT_PREFIX = "MCP_CONSOLE_INPUT_"
MAX_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)
class Configured:
    target: Target
    entry: Entry
    oauth: dict[str, Any] = field(default_factory=dict)


def add_config_options(common: argparse.ArgumentParser) -> None:
    common.add_argument("--config", default=None, metavar="FILE",
                        help="Take the server from a config file instead of a URL or --stdio: mcpServers (Claude "
                             "Desktop, Cursor, the Inspector), mcp_servers, a bare map, VS Code's servers (with "
                             "inputs) or a registry server.json. ${env:NAME} is read from the environment, "
                             f"${{input:ID}} from {INPUT_PREFIX}<ID> (else asked on a terminal).")
    common.add_argument("--server", default=None, metavar="NAME",
                        help="With --config: the server to use (not needed when the file has one).")


def input_variable(input_id: str) -> str:
    return INPUT_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


def configured(args: argparse.Namespace) -> Configured | None:
    """The target --config and --server name (None without --config); a problem stops the run, exit 2."""
    path = getattr(args, "config", None)
    if path is None:
        if getattr(args, "server", None):
            _stop("--server names a server of a --config file: give --config FILE too")
        return None
    if getattr(args, "url", None) or getattr(args, "stdio", None):
        _stop("give the server as --config FILE [--server NAME], or as a URL or --stdio, not both")
    config = _load(Path(path))
    entry = _chosen(config, args.server, path)
    if entry.kind is None:
        _stop(f"--config: server {entry.name!r} cannot be connected to: " + "; ".join(entry.problems))
    values = _input_values(entry, config)
    # The environment as a started server gets it: a file naming ${env:MCP_CONSOLE_TOKEN} must not send the console's
    # own settings (the token, the team secret, other servers' inputs) to a server, as the import page refuses too.
    made = target_of(entry, config, inherited_env(), values)
    if made.missing:
        _stop(f"--config: server {entry.name!r} uses {', '.join(made.missing)} with no value: set the variable "
              f"(an input as {INPUT_PREFIX}<ID>)")
    for problem in [*entry.problems, *made.problems]:
        print(f"· mcp-console: --config {entry.name}: {problem}", file=sys.stderr)
    assert made.target is not None
    return Configured(made.target, entry, dict(entry.oauth))


def _load(path: Path) -> ConfigFile:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            _stop(f"--config {path}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MB: not a config file")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        _stop(f"--config {path}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        _stop(f"--config {path}: not UTF-8 text")
    try:
        return read_config(text)
    except ConfigError as exc:
        _stop(f"--config {path}: {exc}")
    raise AssertionError("unreachable")


def _chosen(config: ConfigFile, name: str | None, path: str) -> Entry:
    names = [e.name for e in config.entries]
    if name is not None:
        entry = config.entry(name)
        if entry is None:
            _stop(f"--config {path} has no server {name!r}; it has: "
                  f"{', '.join(_printable(n) for n in names) or 'none'}")
        assert entry is not None
        return entry
    if len(config.entries) == 1:
        return config.entries[0]
    print(f"--config {path} has {len(names)} servers: choose one with --server NAME", file=sys.stderr)
    for each in names:
        print(_printable(each))  # a file's names never reach the terminal as escape sequences
    raise SystemExit(EXIT_USAGE)


def _printable(text: str) -> str:
    """Text from a config file as a terminal may be given it: control characters shown escaped, never obeyed."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def _input_values(entry: Entry, config: ConfigFile) -> dict[str, str]:
    values: dict[str, str] = {}
    inputs = {i.id: i for i in config.inputs}
    for source, name in entry.references():
        if source != "input":
            continue
        variable = input_variable(name)
        if variable in os.environ:
            values[name] = os.environ[variable]
        elif sys.stdin.isatty() and sys.stderr.isatty():
            asked = inputs.get(name)
            prompt = _printable(f"{entry.name}: {(asked.description if asked else '') or name}") + ": "
            if asked is None or asked.password:
                values[name] = getpass.getpass(prompt)  # (getpass writes its prompt to the terminal, not stdout)
            else:
                print(prompt, end="", file=sys.stderr, flush=True)  # stdout is the command's JSON alone
                values[name] = sys.stdin.readline().rstrip("\n")
    return values


def _stop(message: str) -> None:
    print(message, file=sys.stderr)
    raise SystemExit(EXIT_USAGE)
