"""`mcp-console call`, and the command line of the headless commands (`call`, `check`, `list`, `snapshot`, `diff`);
app/cli.py owns the rest of the command line. `check` lives in app/headless/check.py, `list` in
app/headless/listing.py, `snapshot` and `diff` in app/headless/surface.py."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from typing import Any

from app.headless.check import add_check_parser, check
from app.headless.check import example_arguments as example_arguments
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
from app.headless.doctor import add_doctor_parser
from app.headless.doctor import doctor as run_doctor
from app.headless.listing import add_list_parser, list_items
from app.headless.report import json_text, terminal_text
from app.headless.runner import NOT_CONNECTED, AuthRefused, Headless, failed, printed_json
from app.headless.surface import add_surface_parsers, diff_command, snapshot
from app.mcp.client import Reply
from app.mcp.handshake import HandshakeFailed
from app.mcp.jsonrpc import InexactNumber, exact_float
from app.mcp.lint import Finding
from app.mcp.task import TaskChoice

# A malformed result: the call "succeeded" on the wire, but no client can trust what it says (a string isError, a
# result on an HTTP error status, a frame that is no JSON-RPC). `call` exits 1 for these, not only for an error.
MALFORMED = frozenset({"result.is-error", "http.result-status", "frame.malformed", "frame.schema",
                       "result.type-unknown", "response.unmatched-id"})
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    if args.json is not None:
        try:
            value = json.loads(args.json, parse_float=exact_float)
        except InexactNumber as exc:
            raise SystemExit(f"--json: {exc}") from exc
        except ValueError as exc:  # json.JSONDecodeError: said as a usage error, not a traceback
            raise SystemExit(f"--json is not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise SystemExit("--json must be a JSON object of arguments")
        if args.arg:
            raise SystemExit("give the arguments as --json or as --arg NAME=VALUE, not both")
        return value
    out: dict[str, Any] = {}
    for pair in args.arg or []:
        name, sep, raw = pair.partition("=")
        if not sep:
            raise SystemExit(f"--arg {pair!r}: expected k=v")
        try:
            out[name] = json.loads(raw, parse_float=exact_float)  # 7 stays an integer, true a boolean
        except InexactNumber as exc:  # a number, but not one a double carries: not sent as another, nor as a string
            raise SystemExit(f"--arg {name}: {exc}") from exc
        except ValueError:  # anything else is a string
            out[name] = raw
    return out


async def call(args: argparse.Namespace) -> int:
    session = session_of(args, args.era, era_named=True)
    arguments = _arguments(args)
    try:
        async with session:
            listed = await session.request("tools/list", {})
            if listed.result is not None:
                tools = listed.result.get("tools")
                session.client.learn_tools(tools if isinstance(tools, list) else [])
            elif isinstance(listed.error, NOT_CONNECTED):
                say_notes(session)
                print(json_text(with_notes(_shown(printed_json(listed), session), session)), file=sys.stderr)
                return EXIT_UNREACHABLE
            choice = _task_choice(session, args)
            reply = await session.operation("tools/call", {"name": args.tool, "arguments": arguments},
                                            session.answerer, choice)
    except AuthRefused as exc:  # before NOT_CONNECTED, which it is one of: the status and the challenge, nothing else
        say_notes(session)
        return say_refused(exc)
    except NOT_CONNECTED as exc:
        say_notes(session)
        print(terminal_text(session.masking.text(f"could not connect: {exc}")), file=sys.stderr)
        return EXIT_UNREACHABLE
    except HandshakeFailed as exc:  # no era the server answers (discover refused, then initialize): nothing to call
        say_notes(session)
        print(terminal_text(session.masking.text(f"could not start a session with the server: {exc}")),
              file=sys.stderr)
        return EXIT_UNREACHABLE
    finally:
        write_har(args.har, session)
    say_notes(session)
    malformed = _malformed(session, reply)
    out = with_notes(_shown(printed_json(reply), session), session)
    if malformed:
        out["findings"] = [f.to_dict() for f in malformed]
        for finding in malformed:
            print(terminal_text(f"lint {finding.severity}: {finding.rule}: {finding.message} (see {finding.spec_url})"),
                  file=sys.stderr)
    print(json_text(out))
    return EXIT_FINDINGS if failed(reply) or malformed else EXIT_CLEAN


def _task_choice(session: Headless, args: argparse.Namespace) -> TaskChoice | None:
    """--task (and --task-ttl, which implies it) for this call, said when it cannot apply: a 2026-07-28 server alone
    decides (the tasks extension), and a 2025-11-25 tool that forbids tasks or says nothing gets a plain call."""
    if not args.task and args.task_ttl is None:
        return None
    connected = session.connected
    support = session.client.task_support.get(args.tool)
    if connected is None or connected.era != "legacy":
        session.say("--task is for 2025-11-25 servers: on 2026-07-28 the server alone decides whether a call becomes "
                    "a task (the io.modelcontextprotocol/tasks extension)", "tools/call")
    elif support not in ("optional", "required"):
        session.say(f"--task: {args.tool!r} declares execution.taskSupport {support or 'nothing'}: sent as a plain "
                    "call", "tools/call")
    return TaskChoice(args.task_ttl)


def _shown(out: dict[str, Any], session: Headless) -> dict[str, Any]:
    """What `call` prints, with a secret the server said back masked (unless --reveal)."""
    shown = session.masking.value(out)
    return shown if isinstance(shown, dict) else out


def _malformed(session: Headless, reply: Reply) -> list[Finding]:
    """The findings that make the call's result untrustworthy, on the exchange of its last round."""
    keys = {reply.key} if reply.key else set()
    return [dataclasses.replace(f, message=session.masking.text(f.message)) for f in session.linter.findings
            if f.rule in MALFORMED and (f.exchange in keys or not keys)]


def _positive_ms(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of milliseconds, 1 or more")
    return int(text)


def add_parsers(sub: Any) -> None:
    """The `call`, `check`, `list` and `doctor` subcommands, with the options they share."""
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common)
    call_p = sub.add_parser("call", parents=[common], help="Run one tool call headless and print its result as JSON.",
                            description="Run one tool call headless: connect, list the tools, call one (answering "
                            "the server's input requests as --elicit and --root say) and print the result as JSON on "
                            "stdout; notes go to stderr. Exit 0: the tool ran; 1: it failed (an error, isError, a "
                            "call that never completed) or its result is malformed (a lint finding such as a "
                            "non-boolean isError, or a result on an HTTP error status); 2: the server could not be "
                            "reached, refused the credentials (401/403) or answered no handshake.")
    call_p.add_argument("tool", help="The name of the tool to call.")
    call_p.add_argument("--era", choices=("auto", "modern", "legacy", "sse-2024"), default="auto",
                        help=ERA_HELP + " sse-2024 speaks 2025-11-25 over the older HTTP+SSE transport (a GET stream, "
                                        "POSTs to the endpoint it names).")
    call_p.add_argument("--arg", action="append", metavar="k=v",
                        help="One argument (repeatable); v is read as JSON when it parses (7, true, [1]), else as a "
                             "string.")
    call_p.add_argument("--json", default=None, metavar="ARGS", help="All arguments as one JSON object.")
    call_p.add_argument("--task", action="store_true",
                        help="2025-11-25: run the call as a task (params.task) when the tool's execution.taskSupport "
                             "is optional; a tool that requires one always goes as a task, one that forbids it never. "
                             "The task is followed with tasks/get and its result fetched with tasks/result.")
    call_p.add_argument("--task-ttl", type=_positive_ms, default=None, metavar="MS",
                        help="The TTL to ask for the task, in milliseconds (implies --task; default: none for an "
                             "optional tool, 300000 for one that requires a task).")
    add_check_parser(sub, common)
    add_list_parser(sub)
    add_doctor_parser(sub)
    add_surface_parsers(sub)


def run(args: argparse.Namespace) -> int:
    commands = {"call": call, "check": check, "doctor": run_doctor, "diff": diff_command, "snapshot": snapshot}
    command = commands.get(args.command, list_items)(args)
    try:
        return asyncio.run(command)  # Ctrl-C cancels the command first: its `finally`s close the session
    except KeyboardInterrupt:  # a person giving up (at "waiting for the callback", say) gets no traceback
        print("· mcp-console: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
