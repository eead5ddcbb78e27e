"""`mcp-console check`: connect, list, call what may be called, listen, and report what the lint found."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

from app.headless.common import (
    ERA_HELP,
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_UNREACHABLE,
    say_notes,
    say_refused,
    session_of,
    shown_target,
    with_notes,
    write_har,
)
from app.headless.report import at_or_above, json_report, junit, text_report
from app.headless.runner import NOT_CONNECTED, AuthRefused, Headless, failed, outcome
from app.mcp.client import Reply
from app.mcp.errors import McpError, RequestTimedOut
from app.mcp.handshake import HandshakeFailed
from app.mcp.lint.rules import rules_for

MAX_PAGES = 100
LISTS = (("tools", "tools/list", "tools"), ("prompts", "prompts/list", "prompts"),
         ("resources", "resources/list", "resources"), ("resources", "resources/templates/list", "resourceTemplates"))
LISTEN_FLAGS = (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"),
                ("resources", "resourcesListChanged"))


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
        if connected.era == "legacy":
            self.steps.append(f"initialize: answered ({connected.protocol_version}); checked against the rules of "
                              "that revision")
        else:
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
        if connected.era != "legacy":  # subscriptions/listen is 2026-07-28's; a 2025-11-25 server has no such method
            await self.listen(caps)
        await asyncio.sleep(self.args.settle)  # late frames (after a final response or a cancel) still count
        return True

    async def list_all(self, method: str, field: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: Any = None
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            reply = await self.session.request(method, {} if cursor is None else {"cursor": cursor})
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
        answer = self.session.answerer
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
        self.session.stop_if_refused()
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
    session = session_of(args, args.era, era_named=args.era != "auto")
    runner = Check(session, args)
    refused: AuthRefused | None = None
    try:
        async with session:
            reached = await runner.run()
    except AuthRefused as exc:  # before NOT_CONNECTED, which it is one of: said with its challenge
        refused = exc
        runner.steps.append(str(exc))
        reached = False
    except NOT_CONNECTED as exc:
        runner.steps.append(f"could not connect: {exc}")
        reached = False
    except HandshakeFailed as exc:  # no revision the server answers: without its answer there is nothing to go on
        discover = session.discovery
        if discover is not None and discover.error is not None:
            runner.steps.append(f"server/discover: {discover.error}")
        hint = " (a 2025-11-25 server answers initialize: try --era auto)" if args.era == "modern" else ""
        runner.failure = f"{exc}: nothing else could be checked{hint}"
        reached = True
    except McpError as exc:
        runner.steps.append(f"stopped: {exc}")
        reached = True
    finally:
        write_har(args.har, session)
    linter = session.linter
    if reached and runner.failure is not None:
        runner.steps.append(runner.failure)
    code = EXIT_UNREACHABLE if not reached or runner.failure is not None else (
        EXIT_FINDINGS if at_or_above(linter.findings, args.fail_on) else EXIT_CLEAN)
    if code == EXIT_CLEAN and runner.timed_out is not None:
        runner.steps.append(runner.timed_out)
        code = EXIT_FINDINGS
    target = shown_target(session)
    # A refusal's body is the server's words to a client without credentials (often no JSON-RPC at all): no finding.
    refused_on = refused.exchange if refused is not None else None
    findings = [dataclasses.replace(f, message=session.masking.text(f.message)) for f in linter.findings
                if refused_on is None or f.exchange != refused_on]
    steps = [session.masking.text(step) for step in runner.steps]
    rules = rules_for(linter.version)
    if args.junit:
        Path(args.junit).write_bytes(junit(target, findings, linter.checked, args.fail_on, rules))
    say_notes(session)  # as `call` does: why a step went as it did (a status line, a stream's note), on stderr
    if refused is not None:
        say_refused(refused)
    if args.json_out:
        print(json_report(target, findings, linter.checked, steps, code,
                          notes=with_notes({"protocol_version": linter.version}, session), rules=rules))
    else:
        print(text_report(target, findings, linter.checked, steps, rules))
    return code


def add_check_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    check_p = sub.add_parser("check", parents=[common], help="Lint a server: connect, list what it offers, call "
                             "tools if asked, listen for changes, and report every rule broken on the wire.",
                             description="Lint a server: connect (server/discover, or the 2025-11-25 initialize "
                             "handshake), list its tools, prompts, resources and templates, call tools if asked, "
                             "listen for list changes, and report every lint rule the wire broke. A 2025-11-25 "
                             "server is held to the rules of its revision. Exit 0: clean; 1: findings at or above "
                             "--fail-on; 2: the server could not be reached, refused the credentials (401/403) or "
                             "answered no handshake.")
    check_p.add_argument("--era", choices=("auto", "modern", "legacy"), default="auto", help=ERA_HELP)
    check_p.add_argument("--call-tools", nargs="?", const="readonly", choices=["readonly", "all"], default=None,
                         help="Also call tools with example arguments: those annotated readOnlyHint (the default when "
                              "the flag is given alone), or all of them.")
    check_p.add_argument("--skip", default="", metavar="a,b", help="Tools never to call (comma-separated names).")
    check_p.add_argument("--junit", default=None, metavar="FILE",
                         help="Write JUnit XML to FILE: one test case per rule of the revision spoken.")
    check_p.add_argument("--json", dest="json_out", action="store_true", help="Print the report as JSON.")
    check_p.add_argument("--fail-on", choices=["error", "warning", "note"], default="error",
                         help="The lowest severity that makes the exit code 1 (default error).")
    check_p.add_argument("--listen-wait", type=float, default=2.0,
                         help="Seconds to wait for a listen stream's frames (default 2; 2026-07-28 servers only).")
    check_p.add_argument("--settle", type=float, default=0.3,
                         help="Seconds to keep reading after the last step, for late frames (default 0.3).")
