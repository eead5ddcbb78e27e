"""`mcp-console doctor URL | --stdio CMD`: the connection doctor (app/mcp/doctor) from the command line.

The check list on stdout, one line a step (or `--json`); exit 0 when no step failed (warnings and skipped steps
pass), 1 when one did. Secrets typed on the command line are held as `call` holds them (app/headless/masking.py):
masked in what is printed unless --reveal.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from app.headless.common import EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNREACHABLE, headers_of, seconds, target_of
from app.headless.configured import add_config_options, configured
from app.headless.masking import Masking
from app.headless.report import terminal_text
from app.mcp.doctor import DEFAULT_TIMEOUT_S, Report, diagnose

MARKS = {"ok": "✓", "warn": "!", "fail": "✗", "skipped": "-"}


def add_doctor_parser(sub: Any) -> None:
    p = sub.add_parser("doctor", help="Diagnose a connection: an ordered check list of what works and what fails.",
                       description="Diagnose a connection step by step: for a URL, name resolution, TCP, TLS, the "
                       "HTTP answer to a real first request (a 401/403's challenge parsed), the CORS headers a "
                       "browser host would need (a warning at most), server/discover, initialize and the era the "
                       "console would choose; for --stdio, the command found, the process started, its first "
                       "stdout line, its stderr and its exit code, then the same protocol steps. Each failed step "
                       "says what to do; the steps after it are skipped. Exit 0: no step failed (warnings pass); "
                       "1: a step failed; 2: a usage error.")
    p.add_argument("url", nargs="?", help="The server's Streamable HTTP URL (or give --stdio CMD instead).")
    p.add_argument("--stdio", metavar="CMD", help="Start the server with this command line and diagnose it over "
                   "stdin/stdout instead.")
    p.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                   help="An extra HTTP header for every request (repeatable), as `call` takes it; credential-named "
                        "ones are masked in the output.")
    p.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto",
                   help="The era the console would be set to (default auto): the last step says what it chooses.")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"Seconds each step may wait (default {DEFAULT_TIMEOUT_S:g}).")
    p.add_argument("--json", action="store_true", help="Print the report as JSON instead of lines.")
    add_config_options(p)  # --config FILE --server NAME: a server of a config file, as the other commands take it
    p.add_argument("--reveal", action="store_true", help="Show secret values as typed in the output.")


def report_text(report: Report) -> str:
    """One line a step, its fix under it; every string may be the server's, so none reaches the terminal raw."""
    lines = [terminal_text(f"doctor: {report.target}")]
    for check in report.checks:
        lines.append(terminal_text(f"{MARKS[check.status]} {check.status:<7} {check.name}: {check.detail}"))
        if check.fix and check.status in ("fail", "warn"):
            lines.append(terminal_text(f"          fix: {check.fix}"))
    failed = report.failed
    lines.append(f"failed at: {failed.name}" if failed is not None else report.verdict)
    return "\n".join(lines)


async def doctor(args: argparse.Namespace) -> int:
    from_config = configured(args)
    if not args.url and not args.stdio and from_config is None:  # a usage error is 2 here: 1 says a step failed
        print("give a URL, --stdio CMD or --config FILE [--server NAME]", file=sys.stderr)
        return EXIT_UNREACHABLE
    made = None
    if from_config is not None:
        made = from_config.target
        target, stdio = made.describe(), made.kind == "stdio"
        if args.era == "auto" and made.era in ("modern", "legacy"):
            args.era = made.era
    else:
        target, stdio = target_of(args)
    headers = headers_of(args.header)
    if made is not None and not stdio:
        headers = {**{k: str(v) for k, v in made.revealed()["headers"].items()}, **headers}
    try:
        masking = Masking(target, stdio, headers, reveal=args.reveal, made=made)
    except ValueError as exc:
        print(f"--stdio: the command line cannot be split as a shell would ({exc})", file=sys.stderr)
        return EXIT_UNREACHABLE
    if stdio:
        report = await diagnose(argv=masking.argv, era=args.era, timeout_s=args.timeout)
    else:
        report = await diagnose(url=masking.url, headers=masking.headers, era=args.era, timeout_s=args.timeout)
    shown = masking.value(report.to_dict())
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
    else:
        print(report_text(Report.from_dict(shown)))
    return EXIT_CLEAN if report.passed else EXIT_FINDINGS
