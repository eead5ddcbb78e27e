"""`mcp-console call` and `mcp-console check`: argument parsing lives in app/cli.py, the work here."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from app.headless.report import (
    MAX_NOTES,
    at_or_above,
    har,
    json_report,
    json_text,
    junit,
    notes_text,
    terminal_text,
    text_report,
)
from app.headless.runner import DEFAULT_MAX_S, NOT_CONNECTED, Headless, elicitor, failed, outcome, printed_json
from app.mcp.client import Reply
from app.mcp.errors import McpError, RequestTimedOut
from app.mcp.handshake import HandshakeFailed
from app.mcp.jsonrpc import InexactNumber, exact_float

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNREACHABLE = 0, 1, 2
MAX_PAGES = 100
LISTS = (("tools", "tools/list", "tools"), ("prompts", "prompts/list", "prompts"),
         ("resources", "resources/list", "resources"), ("resources", "resources/templates/list", "resourceTemplates"))
LISTEN_FLAGS = (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"),
                ("resources", "resourcesListChanged"))


def _target(args: argparse.Namespace) -> tuple[str, bool]:
    if args.stdio:
        return args.stdio, True
    if not args.url:
        raise SystemExit("give a URL or --stdio CMD")
    return args.url, False


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    if args.json is not None:
        try:
            value = json.loads(args.json, parse_float=exact_float)
        except InexactNumber as exc:
            raise SystemExit(f"--json: {exc}") from exc
        if not isinstance(value, dict):
            raise SystemExit("--json must be a JSON object of arguments")
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


def _headers(pairs: list[str] | None) -> dict[str, str]:
    return dict(p.split(":", 1) for p in pairs or [] if ":" in p)


# --- call --------------------------------------------------------------------------------------


async def call(args: argparse.Namespace) -> int:
    target, stdio = _target(args)
    if stdio and args.era == "sse-2024":
        raise SystemExit("--era sse-2024 is an HTTP transport: give the server's SSE URL, not --stdio")
    answer = elicitor(args.elicit)
    session = Headless(target, stdio, args.timeout, _headers(args.header), era=args.era, answer=answer,
                       max_s=args.max_time, era_named=True)
    try:
        async with session:
            listed = await session.client.request("tools/list", {})
            if listed.result is not None:
                tools = listed.result.get("tools")
                session.client.learn_tools(tools if isinstance(tools, list) else [])
            elif isinstance(listed.error, NOT_CONNECTED):
                _say_notes(session)
                print(json_text(_with_notes(printed_json(listed), session)), file=sys.stderr)
                return EXIT_UNREACHABLE
            reply = await session.operation("tools/call", {"name": args.tool, "arguments": _arguments(args)},
                                            answer)
    except NOT_CONNECTED as exc:
        _say_notes(session)
        print(terminal_text(f"could not connect: {exc}"), file=sys.stderr)
        return EXIT_UNREACHABLE
    except HandshakeFailed as exc:  # no era the server answers (discover refused, then initialize): nothing to call
        _say_notes(session)
        print(terminal_text(f"could not start a session with the server: {exc}"), file=sys.stderr)
        return EXIT_UNREACHABLE
    finally:
        if args.har:
            Path(args.har).write_text(json.dumps(har(session.events, target), indent=2), encoding="utf-8")
    _say_notes(session)
    print(json_text(_with_notes(printed_json(reply), session)))
    return EXIT_FINDINGS if failed(reply) else EXIT_CLEAN


def _say_notes(session: Headless) -> None:
    """The notes for people, on stderr: stdout is the JSON a CI step reads, and stays only that."""
    if session.said:
        print(notes_text(session.said, session.said_more), file=sys.stderr)


def _with_notes(out: dict[str, Any], session: Headless) -> dict[str, Any]:
    """The JSON of `call` or `check` with the same notes added under a key of their own (no field it had before
    changes)."""
    out["transport_notes"] = [item.to_dict() for item in session.said[:MAX_NOTES]]
    if (more := session.said_more + max(0, len(session.said) - MAX_NOTES)):
        out["transport_notes_not_shown"] = more
    return out


# --- check ---------------------------------------------------------------------------------------


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def example_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool nobody typed: required properties from default, enum or a zero of their type."""
    schema = _obj(tool.get("inputSchema"))
    props = _obj(schema.get("properties"))
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    zero = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    out: dict[str, Any] = {}
    for name in required:
        if not isinstance(name, str):  # not a property's name (a dict here crashed the check with a traceback)
            continue
        prop = _obj(props.get(name))
        if "default" in prop:
            out[name] = prop["default"]
        elif isinstance(prop.get("enum"), list) and prop["enum"]:
            out[name] = prop["enum"][0]
        else:
            out[name] = zero.get(str(prop.get("type")), "")
    return out


def safe_to_call(tool: dict[str, Any], mode: str, skip: set[str]) -> bool:
    name = tool.get("name")
    if not isinstance(name, str) or name in skip:
        return False
    hints = _obj(tool.get("annotations"))
    return mode == "all" or hints.get("readOnlyHint") is True


class Check:
    def __init__(self, session: Headless, args: argparse.Namespace) -> None:
        self.session = session
        self.args = args
        self.steps: list[str] = []
        self.tools: list[dict[str, Any]] = []
        # Why the check could not be the clean run it may look like: the server went away after it was reached,
        # or answered discover with no result (the check then fails, whatever the findings).
        self.failure: str | None = None
        # A step whose request passed --timeout or --max-time: it failed (exit 1), as a timed-out `call` does; a
        # server whose tools/list never answers had none of its tools checked, and the run looked clean.
        self.timed_out: str | None = None

    def _went_away(self, reply: Reply) -> None:
        """A step's reply says the process exited or the connection failed: nothing found after it is a clean
        bill, only what there was no server left to show."""
        if isinstance(reply.error, NOT_CONNECTED) and self.failure is None:
            self.failure = f"the server went away during the check: {reply.error}"
        if isinstance(reply.error, RequestTimedOut) and self.timed_out is None:
            self.timed_out = f"{reply.method} failed: {reply.error}"

    async def run(self) -> bool:
        """Every step in turn; False when the server could not be reached at all."""
        connected = self.session.connected
        assert connected is not None, "run inside `async with` the session"
        self.steps.append("server/discover: answered")
        caps = connected.discovered.get("capabilities")
        caps = caps if isinstance(caps, dict) else {}
        for capability, method, field in LISTS:
            if capability in caps:
                items = await self.list_all(method, field)
                if method == "tools/list":
                    self.tools = items
                    self.session.client.learn_tools(items)
        if self.args.call_tools:
            await self.call_tools()
        await self.listen(caps)
        await asyncio.sleep(self.args.settle)  # late frames (after a final response or a cancel) still count
        return True

    async def list_all(self, method: str, field: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: Any = None
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            reply = await self.session.client.request(method, {} if cursor is None else {"cursor": cursor})
            self._went_away(reply)
            got = (reply.result or {}).get(field)
            items.extend(i for i in (got if isinstance(got, list) else []) if isinstance(i, dict))
            cursor = (reply.result or {}).get("nextCursor")
            if not isinstance(cursor, str) or cursor in seen:
                self.steps.append(f"{method}: {len(items)} item(s) in {page} page(s)"
                                  + ("" if reply.result is not None else f" ({reply.error})"))
                return items
            seen.add(cursor)
        self.steps.append(f"{method}: stopped after {MAX_PAGES} pages")
        return items

    async def call_tools(self) -> None:
        skip = set(filter(None, (self.args.skip or "").split(",")))
        answer = elicitor(self.args.elicit)
        invalid = self.session.client.invalid_tools
        for tool in self.tools:
            if not safe_to_call(tool, self.args.call_tools, skip):
                continue
            if tool["name"] in invalid:  # clients MUST exclude a tool whose x-mcp-header breaks the rules
                self.steps.append(f"tools/call {tool['name']!r}: not called ({invalid[tool['name']]})")
                continue
            params = {"name": tool["name"], "arguments": example_arguments(tool)}
            reply = await self.session.operation("tools/call", params, answer)
            self._went_away(reply)
            said = "ok" if not failed(reply) else outcome(reply)
            self.steps.append(f"tools/call {tool['name']!r}: {said[:120]}")

    async def listen(self, caps: dict[str, Any]) -> None:
        """Open one listen stream for what the server offers, wait for its first frames, close it."""
        wanted: dict[str, Any] = {flag: True for cap, flag in LISTEN_FLAGS
                                  if isinstance(caps.get(cap), dict) and caps[cap].get("listChanged") is True}
        if not wanted:
            return
        client = self.session.client
        key = client.new_key()
        arrived = asyncio.Event()
        task = asyncio.ensure_future(client.request("subscriptions/listen", {"notifications": wanted}, key=key,
                                                    stream=True, on_notification=lambda _f: arrived.set()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(arrived.wait(), self.args.listen_wait)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), self.args.listen_wait)  # a few more frames, if any
        await client.cancel(key, "mcp-console check is done listening")
        reply: Reply = await task
        self._went_away(reply)
        self.steps.append(f"subscriptions/listen {sorted(wanted)}: {reply.notification_count} notification(s)")


async def check(args: argparse.Namespace) -> int:
    target, stdio = _target(args)
    session = Headless(target, stdio, args.timeout, _headers(args.header), max_s=args.max_time)
    runner = Check(session, args)
    try:
        async with session:
            reached = await runner.run()
    except NOT_CONNECTED as exc:
        runner.steps.append(f"could not connect: {exc}")
        reached = False
    except HandshakeFailed as exc:  # servers MUST serve server/discover: without its answer there is nothing to go on
        discover = session.discovery
        runner.steps.append("server/discover: " + str(discover.error if discover is not None else exc))
        runner.failure = f"{exc}: nothing else could be checked"
        reached = True
    except McpError as exc:
        runner.steps.append(f"stopped: {exc}")
        reached = True
    linter = session.linter
    if reached and runner.failure is not None:
        runner.steps.append(runner.failure)
    code = EXIT_UNREACHABLE if not reached or runner.failure is not None else (
        EXIT_FINDINGS if at_or_above(linter.findings, args.fail_on) else EXIT_CLEAN)
    if code == EXIT_CLEAN and runner.timed_out is not None:
        runner.steps.append(runner.timed_out)
        code = EXIT_FINDINGS
    if args.junit:
        Path(args.junit).write_bytes(junit(target, linter.findings, linter.checked, args.fail_on))
    _say_notes(session)  # as `call` does: why a step went as it did (a status line, a stream's note), on stderr
    if args.json_out:
        print(json_report(target, linter.findings, linter.checked, runner.steps, code,
                          notes=_with_notes({}, session)))
    else:
        print(text_report(target, linter.findings, linter.checked, runner.steps))
    return code


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse says what is wrong with anything else, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def add_parsers(sub: Any) -> None:
    """The `call` and `check` subcommands (app/cli.py owns the rest of the command line)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("url", nargs="?", help="Streamable HTTP URL of the server")
    common.add_argument("--stdio", metavar="CMD", help="start the server with this command line instead")
    common.add_argument("--header", action="append", metavar="NAME:VALUE", help="extra HTTP header (repeatable)")
    common.add_argument("--timeout", type=float, default=30.0,
                        help="idle seconds a request may go without a frame (default 30)")
    common.add_argument("--max-time", type=_seconds, default=DEFAULT_MAX_S, metavar="SECONDS",
                        help=f"seconds a request may take in all, frames or not (default {DEFAULT_MAX_S:g})")
    common.add_argument("--elicit", default="defaults", metavar="defaults|decline|FILE",
                        help="answer input requests with the schema's defaults, decline them, or from a JSON file")
    call_p = sub.add_parser("call", parents=[common], help="run one tool call headless and print its result")
    call_p.add_argument("tool", help="tool name")
    call_p.add_argument("--era", choices=("auto", "modern", "legacy", "sse-2024"), default="auto",
                        help="protocol revision: auto probes server/discover and falls back to 2025-11-25 initialize; "
                             "sse-2024 speaks 2025-11-25 over the older HTTP+SSE transport (a GET stream, POSTs to "
                             "the endpoint it names)")
    call_p.add_argument("--arg", action="append", metavar="k=v", help="an argument (v is JSON when it parses)")
    call_p.add_argument("--json", default=None, metavar="ARGS", help="all arguments as one JSON object")
    call_p.add_argument("--har", default=None, metavar="FILE", help="write the exchanges as HAR 1.2")
    check_p = sub.add_parser("check", parents=[common], help="lint a server: discover, list, call, listen")
    check_p.add_argument("--call-tools", nargs="?", const="readonly", choices=["readonly", "all"], default=None,
                         help="call tools: those annotated readOnlyHint (default) or all")
    check_p.add_argument("--skip", default="", metavar="a,b", help="tools never to call")
    check_p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML (one case per rule)")
    check_p.add_argument("--json", dest="json_out", action="store_true", help="print the report as JSON")
    check_p.add_argument("--fail-on", choices=["error", "warning", "note"], default="error",
                         help="lowest severity that makes the exit code 1 (default error)")
    check_p.add_argument("--listen-wait", type=float, default=2.0,
                         help="seconds to wait for a listen stream's frames (default 2)")
    check_p.add_argument("--settle", type=float, default=0.3,
                         help="seconds to keep reading after the last step, for late frames (default 0.3)")


def run(args: argparse.Namespace) -> int:
    return asyncio.run(call(args) if args.command == "call" else check(args))
