"""`mcp-console snapshot` and `mcp-console diff`: a server's surface written to a file, and two surfaces compared.

`snapshot` connects, lists every page of tools, resources, resource templates and prompts, and writes a surface
snapshot (app/mcp/surface.py). `diff A B` compares two surfaces, each a snapshot file, a session file exported by
the console (its last connect's snapshot, or `FILE@N` for the Nth connect, `FILE@-2` the one before the last), or
a live target (a URL, `--stdio CMD` or a `--config` file's `--server`, connected and listed now). It prints each
change, breaking first, and exits 1 when one is breaking; `--junit FILE` writes a JUnit report for CI, `--json`
the diff as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.headless.common import (
    ERA_HELP,
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_UNREACHABLE,
    add_common_options,
    say_notes,
    say_refused,
    seconds,
    session_of,
)
from app.headless.listing import _list_all
from app.headless.report import json_text, terminal_text
from app.headless.runner import DEFAULT_MAX_S, NOT_CONNECTED, AuthRefused
from app.mcp.handshake import HandshakeFailed
from app.mcp.surface import FORMAT, Diff, diff, read_snapshot, snapshot_of

LISTS = (("tools", "tools/list", "tools"), ("resources", "resources/list", "resources"),
         ("resources", "resources/templates/list", "resourceTemplates"), ("prompts", "prompts/list", "prompts"))
# XML 1.0 has no place for most control characters (a server's description may hold any): written as \uXXXX.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


class Unreadable(Exception):
    """An operand that is no snapshot, no session file with one, and no server that answered."""

    def __init__(self, message: str, code: int = EXIT_UNREACHABLE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Side:
    label: str  # what the person gave: the file (with @N), the URL, the command
    snapshot: dict[str, Any]

    def described(self) -> dict[str, Any]:
        return {"operand": self.label, "source": self.snapshot.get("source"), "taken": self.snapshot.get("taken"),
                "server": self.snapshot.get("server"), "protocol_version": self.snapshot.get("protocol_version")}


# -- taking a live snapshot -----------------------------------------------------------------------------------

async def live_snapshot(args: argparse.Namespace) -> dict[str, Any]:
    """Connect to the target `args` names and snapshot it (masked as the console masks, unless --reveal)."""
    session = session_of(args, args.era, era_named=args.era != "auto")
    lists: dict[str, list[Any]] = {}
    try:
        async with session:
            connected = session.connected
            discovered = connected.discovered if connected is not None else {}
            declared = discovered.get("capabilities")
            caps: dict[str, Any] = declared if isinstance(declared, dict) else {}
            for capability, method, field in LISTS:
                if capability not in caps:
                    continue
                items, problem = await _list_all(session, method, field)
                lists[field] = items
                if problem is not None:
                    session.say(f"{method}: {problem} (the snapshot holds what came before it)")
    except AuthRefused as exc:
        say_notes(session)
        say_refused(exc)
        raise Unreadable(f"{session.masking.shown()}: refused") from None
    except NOT_CONNECTED as exc:
        say_notes(session)
        raise Unreadable(session.masking.text(f"could not connect: {exc}")) from None
    except HandshakeFailed as exc:
        say_notes(session)
        raise Unreadable(session.masking.text(f"could not start a session with the server: {exc}")) from None
    say_notes(session)
    snapshot = snapshot_of(discovered, lists, era=connected.era if connected else None,
                           protocol_version=connected.protocol_version if connected else None,
                           source=session.masking.shown())
    shown = session.masking.value(snapshot)
    return shown if isinstance(shown, dict) else snapshot


async def snapshot(args: argparse.Namespace) -> int:
    try:
        taken = await live_snapshot(args)
    except Unreadable as exc:
        print(terminal_text(str(exc)), file=sys.stderr)
        return exc.code
    text = json.dumps(taken, indent=2, ensure_ascii=False)
    if args.output and args.output != "-":
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        counts = ", ".join(f"{len(taken.get(k) or [])} {k}" for k in ("tools", "resources", "resourceTemplates",
                                                                         "prompts"))
        print(f"· mcp-console: wrote {args.output} ({counts})", file=sys.stderr)
    else:
        print(text)
    return EXIT_CLEAN


# -- reading an operand -----------------------------------------------------------------------------------------

def _file_and_pick(operand: str) -> tuple[Path, int | None] | None:
    """`FILE` or `FILE@N` when such a file exists (N: which connect of a session file; negative from the end)."""
    if Path(operand).is_file():
        return Path(operand), None
    name, at, pick = operand.rpartition("@")
    if at and re.fullmatch(r"-?\d+", pick) and Path(name).is_file():
        return Path(name), int(pick)
    return None


def read_operand_file(path: Path, pick: int | None, label: str) -> list[Side]:
    """The snapshot a file holds: a snapshot file's one, or a session file's connects (all of them when no `@N`
    picks one: the caller takes the last, or the last two)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Unreadable(f"{label}: not a JSON file ({exc})") from None
    if isinstance(data, dict) and data.get("format") == FORMAT:
        try:
            return [Side(label, read_snapshot(data))]
        except ValueError as exc:
            raise Unreadable(f"{label}: {exc}") from None
    # Only for a session file: the console's event records are no part of `call`'s or `check`'s start-up.
    from app.console.export import read_session_file
    from app.console.surfaces import snapshots_in

    try:
        _meta, _created, events = read_session_file(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise Unreadable(f"{label}: neither a surface snapshot nor a session file ({exc})") from None
    found = snapshots_in(events)
    if not found:
        raise Unreadable(f"{label}: the session never listed what its server offers (it never connected)")
    if pick is None:
        return [Side(f"{label}@{i + 1}", snap) for i, (_seq, snap) in enumerate(found)]
    index = pick - 1 if pick > 0 else len(found) + pick
    if pick == 0 or not 0 <= index < len(found):
        raise Unreadable(f"{label}: the session recorded {len(found)} connect(s); there is no @{pick}")
    return [Side(label, found[index][1])]


@dataclass(frozen=True, slots=True)
class Live:
    url: str | None = None
    stdio: str | None = None
    server: str | None = None  # a server of --config (None with --config: the file's one server)
    from_config: bool = False

    def label(self) -> str:
        return self.url or (f"--stdio {self.stdio}" if self.stdio else f"--config server {self.server or ''}")


def _live_args(args: argparse.Namespace, live_one: Live) -> argparse.Namespace:
    """The options `session_of` reads, for one live operand: the shared defaults, this command's own settings."""
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common)
    live = common.parse_args([])
    live.url, live.stdio = live_one.url, live_one.stdio
    if live_one.from_config:
        live.config, live.server = args.config, live_one.server
    live.header, live.reveal, live.timeout, live.max_time = args.header, args.reveal, args.timeout, args.max_time
    live.era = args.era
    return live


async def sides(args: argparse.Namespace) -> tuple[Side, Side]:
    files: list[list[Side]] = []
    live: list[Live] = []
    order: list[tuple[str, int]] = []
    for operand in args.operands:
        found = _file_and_pick(operand)
        if found is not None:
            order.append(("file", len(files)))
            files.append(read_operand_file(found[0], found[1], operand))
        elif re.match(r"https?://", operand, re.IGNORECASE):
            order.append(("live", len(live)))
            live.append(Live(url=operand))
        else:
            raise Unreadable(f"{operand}: no such file, and not an http(s) URL (a stdio server: --stdio CMD)")
    for command in args.stdio or []:
        order.append(("live", len(live)))
        live.append(Live(stdio=command))
    if args.server and not args.config:
        raise Unreadable("--server names a server of a --config file: give --config FILE too")
    for name in args.server or ([None] if args.config else []):
        order.append(("live", len(live)))
        live.append(Live(server=name, from_config=True))
    if len(order) == 1 and order[0][0] == "file" and len(files[0]) >= 2:  # one session file: its last two connects
        return files[0][-2], files[0][-1]
    if len(order) == 1 and order[0][0] == "file":
        raise Unreadable(f"{args.operands[0]} holds "
                         f"{len(files[0])} connect{'' if len(files[0]) == 1 else 's'}: a session file alone compares "
                         "its last two; give a second surface (another file, a URL, --stdio or --server)")
    if len(order) != 2:
        raise Unreadable(f"diff compares two surfaces: {len(order)} given (a session file alone compares its last "
                         "two connects)")
    out: list[Side] = []
    for kind, index in order:
        if kind == "file":
            out.append(files[index][-1])
        else:
            taken = await live_snapshot(_live_args(args, live[index]))
            out.append(Side(str(taken.get("source") or live[index].label()), taken))
    return out[0], out[1]


# -- what is printed ------------------------------------------------------------------------------------------

def _when(taken: Any) -> str:
    if not isinstance(taken, int | float):
        return "live" if taken is None else ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(taken))
    except (OverflowError, OSError, ValueError):
        return ""


def report(a: Side, b: Side, found: Diff) -> str:
    lines = [f"A: {terminal_text(a.label)} ({_when(a.snapshot.get('taken')) or 'no time recorded'})",
             f"B: {terminal_text(b.label)} ({_when(b.snapshot.get('taken')) or 'no time recorded'})", ""]
    lines += [terminal_text(change.line()) for change in found.changes] or ["no changes"]
    if found.not_listed:
        lines.append(f"… and {found.not_listed} more changes not listed")
    counts = found.counts()
    total = sum(counts.values()) + found.not_listed
    lines.append(f"{total} change{'s' if total != 1 else ''}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines)


def _xml(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def junit(a: Side, b: Side, found: Diff) -> str:
    """JUnit XML: one test case per change (a breaking one fails), or one passing case when nothing changed."""
    counts = found.counts()
    suite = ET.Element("testsuite", name="mcp-console diff", tests=str(max(1, len(found.changes))),
                       failures=str(counts["breaking"]), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="a", value=_xml(a.label))
    ET.SubElement(props, "property", name="b", value=_xml(b.label))
    for change in found.changes:
        case = ET.SubElement(suite, "testcase", classname=_xml(f"surface.{change.level}.{change.where}"),
                             name=_xml(f"{change.path + ': ' if change.path else ''}{change.what}"))
        detail = _xml(json.dumps({"rule": change.rule, "before": change.before, "after": change.after},
                                 ensure_ascii=False, default=repr)[:4000])
        if change.level == "breaking":
            failure = ET.SubElement(case, "failure", message=_xml(change.line()), type=change.rule)
            failure.text = detail
        else:
            ET.SubElement(case, "system-out").text = detail
    if not found.changes:
        ET.SubElement(suite, "testcase", classname="surface", name="no changes")
    root = ET.Element("testsuites", tests=suite.get("tests", "1"), failures=suite.get("failures", "0"))
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


async def diff_command(args: argparse.Namespace) -> int:
    try:
        a, b = await sides(args)
    except Unreadable as exc:
        print(terminal_text(f"mcp-console diff: {exc}"), file=sys.stderr)
        return exc.code
    found = diff(a.snapshot, b.snapshot)
    if args.junit:
        Path(args.junit).write_text(junit(a, b, found), encoding="utf-8")
    if args.json_out:
        print(json_text({"a": a.described(), "b": b.described(), **found.to_dict()}))
    else:
        print(report(a, b, found))
    return EXIT_FINDINGS if found.breaking else EXIT_CLEAN


# -- the command line -----------------------------------------------------------------------------------------

def add_surface_parsers(sub: Any) -> None:
    snap = sub.add_parser("snapshot", help="Write a server's surface (tools, resources, templates, prompts, "
                          "capabilities) to a snapshot file.",
                          description="Connect, list every page of the server's tools, resources, resource "
                          "templates and prompts, and write them with its capabilities, server info and protocol "
                          "version as a surface snapshot (JSON; the format is in docs/guide.md) for `mcp-console "
                          "diff`. Secrets are masked unless --reveal. Exit 0: written; 2: the server could not be "
                          "reached, refused the credentials (401/403) or answered no handshake.")
    add_common_options(snap)
    snap.add_argument("--era", choices=("auto", "modern", "legacy", "sse-2024"), default="auto", help=ERA_HELP)
    snap.add_argument("-o", "--output", default=None, metavar="FILE",
                      help="Where to write the snapshot (default: stdout).")
    d = sub.add_parser("diff", help="Compare two surfaces (snapshot files, session files or live servers) and say "
                       "what changed; exit 1 on a breaking change.",
                       description="Compare two surfaces and print each change, classified as breaking (a tool, "
                       "resource, template or prompt removed; a required argument added or an argument removed; a "
                       "type narrowed, an enum value removed, a bound tightened, additionalProperties closed; an "
                       "output field removed; a capability removed), additive or cosmetic (descriptions, titles, "
                       "annotations, icons, order). A and B are each a snapshot file (`mcp-console snapshot`), a "
                       "session file exported by the console (its last connect; FILE@N the Nth, FILE@-2 the one "
                       "before the last; a session file alone compares its last two connects), a URL, a "
                       "--stdio CMD or a --config file's --server (connected and listed now). Exit 0: no breaking "
                       "change; 1: a breaking change; "
                       "2: an operand could not be read or reached.")
    d.add_argument("operands", nargs="*", metavar="A B",
                   help="The two surfaces: files (FILE or FILE@N) or http(s) URLs; --stdio adds a live stdio one.")
    d.add_argument("--stdio", action="append", metavar="CMD",
                   help="A stdio server to start and snapshot, taken after the files and URLs (repeatable: "
                        "`--stdio OLD --stdio NEW`).")
    d.add_argument("--config", default=None, metavar="FILE",
                   help="A config file (mcpServers, mcp_servers, a bare map, VS Code's servers, a registry "
                        "server.json) whose servers --server names as live operands, taken after --stdio.")
    d.add_argument("--server", action="append", metavar="NAME",
                   help="With --config: a server of the file to connect to and snapshot (repeatable: `--config "
                        "FILE --server old --server new`; not needed when the file has one).")
    d.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                   help="An extra HTTP header for every live URL (repeatable; masked in the output).")
    d.add_argument("--era", choices=("auto", "modern", "legacy", "sse-2024"), default="auto", help=ERA_HELP)
    d.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="Idle seconds a live request may go without a frame before it fails (default 30).")
    d.add_argument("--max-time", type=seconds, default=DEFAULT_MAX_S, metavar="SECONDS",
                   help=f"Seconds a live request may take in all (default {DEFAULT_MAX_S:g}).")
    d.add_argument("--reveal", action="store_true", help="Show a live target's secret values as typed.")
    d.add_argument("--json", dest="json_out", action="store_true",
                   help="Print the diff as JSON: a, b, breaking, counts, changes (level, rule, where, path, what, "
                        "before, after).")
    d.add_argument("--junit", default=None, metavar="FILE",
                   help="Also write the changes as JUnit XML: one test case per change, a failure for each "
                        "breaking one (for CI).")
