"""Tasks, 2025-11-25 (the revision's experimental Tasks): the hostile target turned into a 2025-11-25 server for them.

It refuses `server/discover` (-32601), so a console on Auto falls back to `initialize`, which declares `tasks.list`,
`tasks.cancel` and `tasks.requests.tools.call`. server-everything has no tool whose execution.taskSupport is
"optional", and its status notifications go only to a standalone GET stream; this module has both, under control:

- `optional_task` (taskSupport "optional", `polls`, default 2): with `params.task` a task, working for that many polls
  then completed; without it, the result at once;
- `required_task` (taskSupport "required"): a plain call is refused with -32601; as a task, as `optional_task`;
- `plain_tool` (no taskSupport): a plain result, saying whether `params.task` came anyway;
- `status_task` (required, pollInterval 2000): 300 ms after it is created, `notifications/tasks/status` says
  "halfway" outside any request (stdio only: over HTTP this server has no GET stream); completed on the next poll;
- `flip_task` (required): completed at the first poll; its `tasks/result` stream first carries a status notification
  saying it failed, a terminal status that changed.

`tasks/list` pages two tasks at a time (`nextCursor`), `tasks/result` waits for the end, `tasks/cancel` cancels.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from tests.hostile.target import Ctx, StdioOut, Tool

PROTOCOL = "2025-11-25"
RELATED = "io.modelcontextprotocol/related-task"
PAGE = 2
_ids = itertools.count(1)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _tasks(ctx: Ctx) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = ctx.state.setdefault("tasks2025", {})
    return tasks


def _text(value: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], **extra}


def _public(task_id: str, task: dict[str, Any]) -> dict[str, Any]:
    """The Task as 2025-11-25 has it (tasks/get, tasks/list, the status notification)."""
    out = {"taskId": task_id, "status": task["status"], "createdAt": task["created"], "lastUpdatedAt": task["updated"],
           "ttl": task["ttl"], "pollInterval": task["poll"]}
    if task.get("message"):
        out["statusMessage"] = task["message"]
    return out


async def _create(ctx: Ctx, kind: str, polls: int = 2, poll_ms: int = 100) -> str:
    asked = ctx.params.get("task")
    task_id = f"legacy-task-{next(_ids)}"
    ttl = asked.get("ttl") if isinstance(asked, dict) and isinstance(asked.get("ttl"), int) else 60_000
    _tasks(ctx)[task_id] = {"kind": kind, "status": "working", "polls": 0, "polls_needed": polls,
                            "created": _now(), "updated": _now(), "ttl": ttl, "poll": poll_ms, "message": "",
                            "asked_task": asked, "done": asyncio.Event()}
    await ctx.reply({"task": _public(task_id, _tasks(ctx)[task_id])})
    return task_id


async def optional_task(ctx: Ctx) -> None:
    if "task" not in ctx.params:
        await ctx.reply(_text("done at once (a plain call)"))
        return
    await _create(ctx, "slow", polls=int(ctx.args.get("polls", 2)))


async def required_task(ctx: Ctx) -> None:
    if "task" not in ctx.params:
        await ctx.error(-32601, "required_task runs only as a task: send params.task")
        return
    await _create(ctx, "slow", polls=int(ctx.args.get("polls", 2)))


async def plain_tool(ctx: Ctx) -> None:
    await ctx.reply(_text(f"plain result (params.task sent: {'task' in ctx.params})"))


async def status_task(ctx: Ctx) -> None:
    if "task" not in ctx.params:
        await ctx.error(-32601, "status_task runs only as a task")
        return
    task_id = await _create(ctx, "slow", polls=1, poll_ms=2000)
    # Outside any request: only stdio has a way (this server has no GET stream). By name: run as `python -m`, the
    # target's classes are __main__'s, not tests.hostile.target's.
    if type(ctx._out).__name__ == StdioOut.__name__:
        asyncio.get_running_loop().call_later(0.3, lambda: asyncio.ensure_future(_halfway(ctx, task_id)))


async def _halfway(ctx: Ctx, task_id: str) -> None:
    task = _tasks(ctx)[task_id]
    if task["status"] != "working":
        return
    task.update(message="halfway (said by notifications/tasks/status)", updated=_now())
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": _public(task_id, task)})


async def flip_task(ctx: Ctx) -> None:
    if "task" not in ctx.params:
        await ctx.error(-32601, "flip_task runs only as a task")
        return
    await _create(ctx, "slow", polls=1)


def _find(ctx: Ctx) -> tuple[str, dict[str, Any] | None]:
    task_id = str(ctx.params.get("taskId", ""))
    return task_id, _tasks(ctx).get(task_id)


def _complete(task_id: str, task: dict[str, Any]) -> None:
    task.update(status="completed", updated=_now(), message="",
                result=_text(f"done as a task after {task['polls']} polls (asked {json.dumps(task['asked_task'])})"))
    task["done"].set()


async def initialize(ctx: Ctx) -> None:
    await ctx.reply({"protocolVersion": PROTOCOL,
                     "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {
                         "call": {}}}}},
                     "serverInfo": {"name": ctx.server.server_name, "version": "6.6.6"}})


async def not_served(ctx: Ctx) -> None:
    await ctx.error(-32601, "method not found: server/discover (a 2025-11-25 server)")


async def tools_list(ctx: Ctx) -> None:
    await ctx.reply({"tools": [t.listed() for t in ctx.server.tools.values()]})


async def tasks_get(ctx: Ctx) -> None:
    task_id, task = _find(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    task["polls"] += 1
    if task["status"] == "working":
        task.update(updated=_now())
        if task["polls"] >= task["polls_needed"]:
            _complete(task_id, task)
    await ctx.reply(_public(task_id, task))


async def tasks_result(ctx: Ctx) -> None:
    task_id, task = _find(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    await asyncio.wait_for(task["done"].wait(), 30)
    if _is_flip(task) and not task.get("flip"):
        task["flip"] = True  # a terminal status that changes: completed, then (says this notification) failed
        await ctx.event({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                         "params": {**_public(task_id, task), "status": "failed", "statusMessage": "changed its mind"}})
    if task["status"] == "cancelled":
        await ctx.error(-32602, f"task {task_id!r} was cancelled")
        return
    await ctx.reply({**task["result"], "_meta": {RELATED: {"taskId": task_id}}})


def _is_flip(task: dict[str, Any]) -> bool:
    return str(task.get("tool")) == "flip_task"


async def tasks_list(ctx: Ctx) -> None:
    ids = list(_tasks(ctx))
    cursor = ctx.params.get("cursor")
    if cursor is not None and (not isinstance(cursor, str) or not cursor.startswith("c") or not cursor[1:].isdigit()):
        await ctx.error(-32602, f"bad cursor {cursor!r}")
        return
    start = int(cursor[1:]) if isinstance(cursor, str) else 0
    page = ids[start:start + PAGE]
    result: dict[str, Any] = {"tasks": [_public(i, _tasks(ctx)[i]) for i in page]}
    if start + PAGE < len(ids):
        result["nextCursor"] = f"c{start + PAGE}"
    await ctx.reply(result)


async def tasks_cancel(ctx: Ctx) -> None:
    task_id, task = _find(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    if task["status"] in ("completed", "failed", "cancelled"):
        await ctx.error(-32602, f"task {task_id!r} is already {task['status']}")
        return
    task.update(status="cancelled", updated=_now(), message="cancelled by the client")
    task["done"].set()
    await ctx.reply(_public(task_id, task))


async def _tagged(ctx: Ctx, run: Any, tool: str) -> None:
    """Which tool made each task (flip_task's tasks/result differs)."""
    before = set(_tasks(ctx))
    await run(ctx)
    for task_id in set(_tasks(ctx)) - before:
        _tasks(ctx)[task_id]["tool"] = tool


def _tool(name: str, run: Any, support: str | None, description: str) -> Tool:
    definition: dict[str, Any] = {"description": description, "inputSchema": {
        "type": "object", "properties": {"polls": {"type": "integer", "minimum": 1}}}}
    if support is not None:
        definition["execution"] = {"taskSupport": support}

    async def tagged(ctx: Ctx) -> None:
        await _tagged(ctx, run, name)

    return Tool(name, tagged, definition)


TOOLS = [
    _tool("optional_task", optional_task, "optional", "A task if asked for one (params.task), else a plain call"),
    _tool("required_task", required_task, "required", "Runs only as a task"),
    _tool("plain_tool", plain_tool, None, "No execution.taskSupport: never a task"),
    _tool("status_task", status_task, "required", "A task whose status notification says halfway (stdio)"),
    _tool("flip_task", flip_task, "required", "A task whose status changes after it completed"),
]
METHODS = {"server/discover": not_served, "initialize": initialize, "tools/list": tools_list,
           "tasks/get": tasks_get, "tasks/result": tasks_result, "tasks/list": tasks_list,
           "tasks/cancel": tasks_cancel}
