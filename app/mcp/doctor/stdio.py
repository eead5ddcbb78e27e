"""The doctor's steps for a stdio target: the command found, the process started, its first stdout line, its
stderr, and its exit code when it exits at once.

The process is started by the console's own stdio transport (app/mcp/stdio.py) with `server/discover` as its
first request, as a console on Auto starts it; what this module reads is what that transport recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path

from app.mcp.doctor.checks import Check, Status, Visit, cut
from app.mcp.doctor.protocol import first_request
from app.mcp.errors import McpError
from app.mcp.secret import reveal
from app.mcp.stdio import StdioTransport, leading_assignments

COMMAND, STARTED, FIRST_LINE, STDERR, EXIT = "command found", "process started", "first stdout line", "stderr", \
    "exit code"
STDERR_SHOWN = 5  # the last lines a check quotes (the session keeps them all)


def _program(visit: Visit) -> tuple[str, dict[str, str]]:
    """The program the command line runs, and the environment it would see (NAME=value words first, as a shell)."""
    argv = [reveal(a) for a in visit.argv]
    lead = leading_assignments(argv)
    env = {**os.environ, **(visit.env or {}), **dict(a.split("=", 1) for a in argv[:lead])}
    return (argv[lead] if lead < len(argv) else ""), env


async def command(visit: Visit) -> Check:
    program, env = _program(visit)
    if not program:
        return Check(COMMAND, "fail", "the command line is empty", "Give the command that starts the server.")
    if os.sep in program:
        path = Path(visit.cwd or ".") / program
        if not path.exists():
            return Check(COMMAND, "fail", cut(f"{program} does not exist"
                                              f"{f' (relative to {visit.cwd})' if visit.cwd else ''}"),
                         "Check the path, or the working directory it is relative to.")
        if path.is_dir() or not os.access(path, os.X_OK):
            return Check(COMMAND, "fail", cut(f"{program} is not an executable file"),
                         f"Make it executable (chmod +x {program}) or run it with its interpreter (python, node).")
        return Check(COMMAND, "ok", cut(f"{program} is an executable file"))
    found = shutil.which(program, path=env.get("PATH"))
    if found is None:
        return Check(COMMAND, "fail", cut(f"{program} is not on PATH"),
                     f"Install {program}, or give its full path (the console's PATH is the one it was started "
                     "with; a shell's profile may add directories it does not have).")
    return Check(COMMAND, "ok", cut(f"{program} is {found}"))


async def started(visit: Visit) -> Check:
    try:
        reply = await first_request(visit)  # started, then sent the first request; the next steps read how it went
    except McpError as exc:
        return Check(STARTED, "fail", cut(str(exc)), "The system could not start it: read the error, check the "
                     "command and the working directory.")
    first = next((e.note for e in visit.events if e.signal == "process_started"), None) or "started"
    del reply
    return Check(STARTED, "ok", cut(first))


def _transport(visit: Visit) -> StdioTransport | None:
    transport = visit.first.transport if visit.first is not None else None
    return transport if isinstance(transport, StdioTransport) else None


async def first_line(visit: Visit) -> Check:
    line = next((e for e in visit.events if e.direction == "in"), None)
    transport = _transport(visit)
    if line is None:
        if transport is not None and not transport.alive:
            await _settle(visit)  # what it wrote on stderr before it died is read to its end
            return Check(FIRST_LINE, "fail", "the process exited before writing a line on stdout",
                         "It stopped before speaking MCP: its stderr and exit code below say why; run the command "
                         "in a terminal to see it happen.")
        error = visit.discover.error if visit.discover is not None else None
        return Check(FIRST_LINE, "fail", cut(f"no line on stdout: {error}"),
                     "A stdio MCP server answers on stdout, one JSON-RPC message a line: does this command serve "
                     "MCP over stdio (some need a flag such as --stdio)?")
    frame = line.frame
    if frame is None or frame.problem is not None:
        problem = frame.problem if frame is not None else "not parsed"
        return Check(FIRST_LINE, "fail", cut(f"not JSON-RPC ({problem}): {line.raw}", 300),
                     "Only JSON-RPC messages may go to stdout: send logs and banners to stderr.")
    return Check(FIRST_LINE, "ok", cut(f"JSON-RPC: {line.raw}", 200))


async def _settle(visit: Visit) -> None:
    """Close the first client of an exited process: the transport reads its stderr to the end and keeps its code."""
    if visit.first is not None:
        with contextlib.suppress(TimeoutError, McpError, OSError):
            await asyncio.wait_for(visit.first.close(), visit.timeout_s)


async def stderr(visit: Visit) -> Check:
    transport = _transport(visit)
    if transport is None:
        return Check(STDERR, "skipped", "no process ran")
    if not transport.alive:
        await _settle(visit)
    lines = [e.raw for e in visit.events if e.direction == "stderr" and e.signal != "stderr_unfinished"]
    if not lines:
        return Check(STDERR, "ok", "nothing on stderr")
    shown = " ⏎ ".join(cut(line, 200) for line in lines[-STDERR_SHOWN:])
    more = f" (the last {STDERR_SHOWN} of {len(lines)} lines)" if len(lines) > STDERR_SHOWN else ""
    status: Status = "warn" if not transport.alive else "ok"  # a dead process's last words are the likeliest why
    return Check(STDERR, status, cut(f"{shown}{more}", 1200))


async def exit_code(visit: Visit) -> Check:
    transport = _transport(visit)
    if transport is None:
        return Check(EXIT, "skipped", "no process ran")
    if transport.alive:
        return Check(EXIT, "ok", "still running after its first answer, as a stdio server should")
    await _settle(visit)
    code = transport.returncode
    reason = transport.exit_reason()
    answered = any(e.direction == "in" and e.frame is not None and e.frame.problem is None for e in visit.events)
    if answered:  # an older server may end on a method it does not know: the console starts it again
        return Check(EXIT, "warn", cut(f"{reason}, after answering server/discover"),
                     "A server that exits on a request it does not know is started again for initialize, which "
                     "costs a second start: answering with a JSON-RPC error (-32601) and staying up is better.")
    fix = ("It exited at once: run the command in a terminal to see why (a missing argument, a missing "
           "environment variable such as an API key, a dependency not installed); its stderr is above.")
    if code == 127:
        fix = "Code 127 is a shell's 'command not found': check the program the command line runs."
    return Check(EXIT, "fail", cut(reason), fix)
