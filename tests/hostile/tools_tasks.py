"""Tasks, 2026-07-28 (the `io.modelcontextprotocol/tasks` extension, SEP-2663), written from the extension's text: no
SDK ships a server side of it yet. A tool answers `resultType: "task"` (only to a request that declared the
extension in its `_meta` client capabilities; otherwise -32021), and `tasks/get`, `tasks/update`, `tasks/cancel`
follow the task:

- `slow_task` (`polls`, default 3): working for that many polls, then completed with a text result;
- `ask_task`: input_required with one form elicitation under the key "name" until `tasks/update` answers it,
  then completed with the answer echoed;
- `failing_task`: working once, then failed with a JSON-RPC error;
- `forever_task` (ttlMs 1500): working until cancelled (or forever);
- `push_task` (pollIntervalMs 5000): completed 200 ms after a `subscriptions/listen` naming it in
  `notifications.taskIds` is acknowledged, which then gets the `notifications/tasks` (a DetailedTask); a client that
  only polls sees it completed at its first poll after 5 s.
Push: `subscriptions/listen` with `notifications.taskIds` acknowledges the ids it knows and sends
`notifications/tasks` on that stream whenever one of them changes (poll, update, cancel, or push_task's timer).
Each request about a task records the `Mcp-Name` it came with, so tests can check the client sent the task id.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from tests.hostile.target import Ctx, Tool, text

EXTENSION = "io.modelcontextprotocol/tasks"
SUB = "io.modelcontextprotocol/subscriptionId"
_ids = itertools.count(1)


def _declared(ctx: Ctx) -> bool:
    meta = ctx.params.get("_meta") or {}
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return EXTENSION in (caps.get("extensions") or {})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _create(ctx: Ctx, kind: str, ttl_ms: int | None = 60_000, poll_ms: int = 100, **extra: Any) -> None:
    if not _declared(ctx):
        await ctx.error(-32021, "this tool runs only as a task: declare io.modelcontextprotocol/tasks")
        return
    task_id = f"task-{next(_ids)}"
    tasks = ctx.state.setdefault("tasks", {})
    tasks[task_id] = {"kind": kind, "status": "working", "polls": 0, "created": _now(), "ttlMs": ttl_ms,
                      "answers": {}, "names": [], "poll": poll_ms, **extra}
    await ctx.reply({"resultType": "task", "taskId": task_id, "status": "working", "createdAt": _now(),
                     "lastUpdatedAt": _now(), "ttlMs": ttl_ms, "pollIntervalMs": poll_ms})


async def slow_task(ctx: Ctx) -> None:
    await _create(ctx, "slow", polls_needed=int(ctx.args.get("polls", 3)))


async def ask_task(ctx: Ctx) -> None:
    await _create(ctx, "ask")


async def failing_task(ctx: Ctx) -> None:
    await _create(ctx, "failing")


async def forever_task(ctx: Ctx) -> None:
    await _create(ctx, "forever", ttl_ms=1500)


async def push_task(ctx: Ctx) -> None:
    await _create(ctx, "push", poll_ms=5000)


def _task(ctx: Ctx) -> tuple[str, dict[str, Any] | None]:
    task_id = str(ctx.params.get("taskId", ""))
    task = ctx.state.get("tasks", {}).get(task_id)
    if task is not None:
        task["names"].append(ctx.state.get("last_mcp_name"))
    return task_id, task


def _detailed(task_id: str, task: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"resultType": "complete", "taskId": task_id, "status": task["status"],
                           "createdAt": task["created"], "lastUpdatedAt": _now(), "ttlMs": task["ttlMs"],
                           "pollIntervalMs": task["poll"]}
    if task["status"] == "input_required":
        out["inputRequests"] = {"name": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}},
                                "required": ["name"]}}}}
    if task["status"] == "completed":
        out["result"] = task["result"]
    if task["status"] == "failed":
        out["error"] = {"code": -32603, "message": "the task broke"}
    return out


async def tasks_get(ctx: Ctx) -> None:
    task_id, task = _task(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    task["polls"] += 1
    if task["status"] in ("working", "input_required"):
        kind = task["kind"]
        if kind == "slow" and task["polls"] >= task["polls_needed"]:
            done = text(f"done after {task['polls']} polls")
            task.update(status="completed", result={"resultType": "complete", **done})
        elif kind == "ask":
            answer = task["answers"].get("name")
            if answer is None:
                task["status"] = "input_required"
            else:
                name = (answer.get("content") or {}).get("name")
                task.update(status="completed", result={"resultType": "complete", **text(f"hello {name}")})
        elif kind == "failing" and task["polls"] >= 2:
            task["status"] = "failed"
    await ctx.reply(_detailed(task_id, task))
    await _push(ctx, task_id)


async def tasks_update(ctx: Ctx) -> None:
    task_id, task = _task(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    task["answers"].update(ctx.params.get("inputResponses") or {})
    task["status"] = "working" if task["status"] == "input_required" else task["status"]
    await ctx.reply({"resultType": "complete"})
    await _push(ctx, task_id)


async def tasks_cancel(ctx: Ctx) -> None:
    task_id, task = _task(ctx)
    if task is None:
        await ctx.error(-32602, f"unknown task {task_id!r}")
        return
    if task["status"] not in ("completed", "failed", "cancelled"):
        task["status"] = "cancelled"
    await ctx.reply({"resultType": "complete"})
    await _push(ctx, task_id)


async def listen(ctx: Ctx) -> None:
    """subscriptions/listen with notifications.taskIds: the ids known are granted; their changes are pushed here."""
    if not _declared(ctx):
        await ctx.error(-32021, "a task-filtered listen needs io.modelcontextprotocol/tasks declared")
        return
    asked = (ctx.params.get("notifications") or {}).get("taskIds")
    tasks = ctx.state.get("tasks", {})
    granted = [i for i in asked if i in tasks] if isinstance(asked, list) else []
    await ctx.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": {SUB: ctx.id}, "notifications": {"taskIds": granted}}})
    entry = (ctx, set(granted))
    listens: list[tuple[Ctx, set[str]]] = ctx.state.setdefault("task_listens", [])
    listens.append(entry)
    for task_id in granted:
        if tasks[task_id]["kind"] == "push":
            asyncio.get_running_loop().call_later(0.2, lambda t=task_id: asyncio.ensure_future(_push_done(ctx, t)))
    try:
        await ctx.cancelled.wait()
    finally:
        listens.remove(entry)


async def _push_done(ctx: Ctx, task_id: str) -> None:
    task = ctx.state["tasks"][task_id]
    if task["status"] == "working":
        task.update(status="completed", result={"resultType": "complete", **text("done, and pushed")})
        await _push(ctx, task_id)


async def _push(ctx: Ctx, task_id: str) -> None:
    """notifications/tasks (the DetailedTask tasks/get would answer) to every listen that asked for this task."""
    task = ctx.state.get("tasks", {}).get(task_id)
    if task is None:
        return
    detailed = {k: v for k, v in _detailed(task_id, task).items() if k != "resultType"}
    for listener, ids in list(ctx.state.get("task_listens", [])):
        if task_id in ids:
            await listener.event({"jsonrpc": "2.0", "method": "notifications/tasks",
                                  "params": {**detailed, "_meta": {SUB: listener.id}}})


TOOLS = [
    Tool("slow_task", slow_task, {"description": "A task: working for `polls` polls, then completed"}),
    Tool("ask_task", ask_task, {"description": "A task that asks for a name (input_required) before completing"}),
    Tool("failing_task", failing_task, {"description": "A task that fails with a JSON-RPC error"}),
    Tool("forever_task", forever_task, {"description": "A task that works until cancelled (ttlMs 1500)"}),
    Tool("push_task", push_task, {"description": "A task that completes soon after a listen asks for its pushes"}),
]
METHODS = {"tasks/get": tasks_get, "tasks/update": tasks_update, "tasks/cancel": tasks_cancel,
           "subscriptions/listen": listen}
CAPABILITIES = {"extensions": {EXTENSION: {}}}
