"""Roots: the owner's claim about their own machine, sent to a server that asks (`roots/list`).

None unless the owner sets some: a server such as server-filesystem replaces the directories it was started on
with the client's roots, so a made-up default root would take the user's own files away from it. A console-wide
default comes from the `default_roots` setting (MCP_CONSOLE_DEFAULT_ROOTS, or `--root` on serve and demo); each
session's list is then the owner's to change under Client settings.
"""

from __future__ import annotations

from pathlib import PurePosixPath

Root = dict[str, str]


def parse_roots(text: str, semicolons: bool = False) -> tuple[list[Root], list[str]]:
    """Roots from one `file://URI optional name` per line (an absolute directory is taken as its file URI), and
    what was wrong. `semicolons`: `;` separates roots
    too (the default_roots setting, which an environment variable holds on one line; a root typed in a session's
    form may hold a `;`)."""
    roots: list[Root] = []
    problems: list[str] = []
    for line in (text.replace(";", "\n") if semicolons else text).splitlines():
        if not line.strip():
            continue
        uri, _, name = line.strip().partition(" ")
        if uri.startswith("/"):  # a directory as typed, as the CLI's --root takes it
            uri = PurePosixPath(uri).as_uri()
        if not uri.startswith("file://"):
            problems.append(f"{uri!r}: a root must be a file:// URI")
            continue
        roots.append({"uri": uri, "name": name.strip()} if name.strip() else {"uri": uri})
    return roots, problems
