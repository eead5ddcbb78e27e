"""`mcp-console list tools|resources|prompts|tasks`: what a server offers (and, for tasks, what it holds: 2025-11-25
`tasks/list`, when it declares `tasks.list`), as a table for people or JSON for scripts."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.headless.common import (
    ERA_HELP,
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_UNREACHABLE,
    add_common_options,
    say_notes,
    say_refused,
    session_of,
    with_notes,
    write_har,
)
from app.headless.report import json_text, terminal_text
from app.headless.runner import NOT_CONNECTED, AuthRefused, Headless
from app.mcp.handshake import HandshakeFailed
from app.mcp.task import lists_tasks

MAX_PAGES = 100
# What each kind lists: (method, the result's field) in turn; resources include their templates.
KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "tools": (("tools/list", "tools"),),
    "prompts": (("prompts/list", "prompts"),),
    "resources": (("resources/list", "resources"), ("resources/templates/list", "resourceTemplates")),
    "tasks": (("tasks/list", "tasks"),),
}
MAX_CELL = 60  # characters of a name or a title in the table; the JSON has them whole


async def _list_all(session: Headless, method: str, field: str) -> tuple[list[Any], str | None]:
    """Every page of one list (at most MAX_PAGES; a cursor seen before ends it). The items, and the error that
    stopped it when there was one."""
    items: list[Any] = []
    cursor: Any = None
    seen: set[str] = set()
    for _page in range(MAX_PAGES):
        reply = await session.request(method, {} if cursor is None else {"cursor": cursor})
        if isinstance(reply.error, NOT_CONNECTED):  # the server went away: exit 2, as for one never reached
            raise reply.error
        if reply.result is None:
            return items, str(reply.error)
        got = reply.result.get(field)
        items.extend(got if isinstance(got, list) else [])
        cursor = reply.result.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:
            return items, None
        seen.add(cursor)
    return items, f"stopped after {MAX_PAGES} pages"


def _cell(value: Any, width: int = MAX_CELL) -> str:
    text = terminal_text(value) if isinstance(value, str) else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def _first_line(value: Any) -> str:
    return _cell(value.strip().splitlines()[0] if isinstance(value, str) and value.strip() else "", 100)


def table(field: str, items: list[Any]) -> str:
    """Name, title and the first line of the description, one item a line (resources: their URI too)."""
    if not items:
        return f"(no {'resource templates' if field == 'resourceTemplates' else field})"
    if field == "tasks":
        return task_table(items)
    uri_key = "uri" if field == "resources" else "uriTemplate" if field == "resourceTemplates" else None
    rows = [("NAME", "TITLE", *(["URI"] if uri_key else []), "DESCRIPTION")]
    for item in items:
        item = item if isinstance(item, dict) else {}
        hints: dict[str, Any] = item["annotations"] if isinstance(item.get("annotations"), dict) else {}
        title = item.get("title") or hints.get("title")  # 2025-11-25 tools may still carry it as an annotation
        rows.append((_cell(item.get("name")), _cell(title), *([_cell(item.get(uri_key), 80)] if uri_key else []),
                     _first_line(item.get("description"))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
                     for row in rows)


def task_table(items: list[Any]) -> str:
    """One task a line: id, status, created, last updated, TTL, poll interval and the status message."""
    def ms(task: dict[str, Any], key: str) -> str:
        value = task.get(key, "")
        return "none" if value is None else f"{value} ms" if isinstance(value, int | float) else _cell(value)

    rows = [("TASK ID", "STATUS", "CREATED", "UPDATED", "TTL", "POLL", "MESSAGE")]
    for task in items:
        task = task if isinstance(task, dict) else {}
        rows.append((_cell(task.get("taskId")), _cell(task.get("status")), _cell(task.get("createdAt")),
                     _cell(task.get("lastUpdatedAt")), ms(task, "ttl"), ms(task, "pollInterval"),
                     _first_line(task.get("statusMessage"))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
                     for row in rows)


def _offered(caps: Any, kind: str) -> bool:
    """Servers declare what they serve; tasks/list is the 2025-11-25 `tasks.list` capability (2026-07-28 has no
    tasks/list: its tasks extension follows only the tasks a client's own calls became)."""
    if not isinstance(caps, dict):
        return True
    return lists_tasks(caps) if kind == "tasks" else kind in caps


async def list_items(args: argparse.Namespace) -> int:
    session = session_of(args, args.era, era_named=args.era != "auto")
    found: dict[str, list[Any]] = {}
    problems: dict[str, str] = {}
    try:
        async with session:
            connected = session.connected
            caps = connected.discovered.get("capabilities") if connected is not None else None
            offered = _offered(caps, args.kind)
            if not offered:  # servers declare what they serve: asking would only fetch a "method not found"
                what = "tasks.list capability (2025-11-25 tasks/list)" if args.kind == "tasks" else \
                    f"{args.kind} capability"
                session.say(f"the server declares no {what}: it offers no {args.kind}")
            for method, field in KINDS[args.kind]:
                if not offered:
                    found[field] = []
                    continue
                items, problem = await _list_all(session, method, field)
                found[field] = items
                if problem is not None:
                    problems[method] = problem
    except AuthRefused as exc:
        say_notes(session)
        return say_refused(exc)
    except NOT_CONNECTED as exc:
        say_notes(session)
        print(terminal_text(session.masking.text(f"could not connect: {exc}")), file=sys.stderr)
        return EXIT_UNREACHABLE
    except HandshakeFailed as exc:
        say_notes(session)
        print(terminal_text(session.masking.text(f"could not start a session with the server: {exc}")),
              file=sys.stderr)
        return EXIT_UNREACHABLE
    finally:
        write_har(args.har, session)
    say_notes(session)
    # A server without resource templates may answer templates/list with an error: said, but no failure of `list`.
    failed = [method for method in problems if method != "resources/templates/list"]
    for method, problem in problems.items():
        print(terminal_text(session.masking.text(f"{method}: {problem}")), file=sys.stderr)
    shown = session.masking.value(found)
    if args.json_out:
        out = {**shown, "errors": problems} if problems else dict(shown)
        print(json_text(with_notes(out, session)) if args.notes else json_text(out))
    else:
        # Resources and their templates are two tables: each says what it is when there is more than one.
        heads = {"resources": "Resources", "resourceTemplates": "Resource templates"} if len(shown) > 1 else {}
        blocks = [(f"{heads[field]}:\n" if field in heads else "") + table(field, items)
                  for field, items in shown.items() if items or field != "resourceTemplates"]
        print("\n\n".join(blocks))
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def add_list_parser(sub: Any) -> None:
    list_p = sub.add_parser("list", help="List a server's tools, resources, prompts or tasks.",
                            description="List what a server offers, every page of it: a table of name, title and "
                            "the first line of the description (resources add their URI, and the resource templates "
                            "follow; tasks, 2025-11-25 tasks/list, show id, status, times, TTL and poll interval), "
                            "or --json. Exit 0: listed; 1: the server answered the list with an error; 2: "
                            "it could not be reached, refused the credentials (401/403) or answered no handshake.")
    # The kind first, then the shared options: positionals are read in the order they are added, and people type
    # `mcp-console list tools http://…/mcp`.
    list_p.add_argument("kind", choices=tuple(KINDS), help="What to list: tools, resources (with the resource "
                        "templates), prompts, or tasks (a 2025-11-25 server's tasks/list, when it declares "
                        "tasks.list).")
    add_common_options(list_p)
    list_p.add_argument("--era", choices=("auto", "modern", "legacy", "sse-2024"), default="auto",
                        help=ERA_HELP + " sse-2024 speaks 2025-11-25 over the older HTTP+SSE transport.")
    list_p.add_argument("--json", dest="json_out", action="store_true",
                        help="Print the items as the server sent them, as JSON ({\"tools\": [...]}, and for resources "
                             "{\"resources\": [...], \"resourceTemplates\": [...]}).")
    list_p.add_argument("--notes", action="store_true",
                        help="With --json, add the transport notes under \"transport_notes\" (they go to stderr "
                             "either way).")
