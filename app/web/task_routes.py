"""The server's tasks (2025-11-25 `tasks/list`, server capability `tasks.list`): one page at a time, each a request
on the timeline like any other. The page answered is the POST's fragment (or its JSON twin); the next page is asked
with the `nextCursor` the server gave.

2026-07-28 has no tasks/list (a client follows the tasks its own calls became), so the panel is shown only where the
server declares the capability.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.scrub import shown_reply
from app.mcp.task import lists_tasks
from app.web.deps import Web, connected, form_input, operator_post, respond, wants_json

router = APIRouter()
MAX_ROWS = 500  # of one page: a server may answer with any number


def _text(value: Any) -> str:
    """A field as shown: a string as is, a number as written, anything else (absent, null, an object) as JSON."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return repr(value)


def task_rows(tasks: Any) -> list[dict[str, str]]:
    """The tasks of one page as table rows: taskId, status, statusMessage, createdAt, lastUpdatedAt, ttl (ms, or
    null: unlimited) and pollInterval, each as text (a server may send anything in any of them)."""
    rows = []
    for task in tasks[:MAX_ROWS] if isinstance(tasks, list) else []:
        task = task if isinstance(task, dict) else {}
        ttl = task.get("ttl", "absent")
        rows.append({"task_id": _text(task.get("taskId")), "status": _text(task.get("status")),
                     "message": _text(task.get("statusMessage")) if "statusMessage" in task else "",
                     "created": _text(task.get("createdAt")), "updated": _text(task.get("lastUpdatedAt")),
                     "ttl": "none (unlimited)" if ttl is None else "—" if ttl == "absent" else f"{_text(ttl)} ms",
                     "poll": f"{_text(task['pollInterval'])} ms" if "pollInterval" in task else "—"})
    return rows


@operator_post(router, "/sessions/{session_id}/tasks/list")
async def list_tasks(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    if not lists_tasks(s.server_capabilities):
        raise HTTPException(409, "The server does not declare tasks.list (a 2025-11-25 capability): it lists no tasks.")
    cursor = (await form_input(request)).first("cursor")
    reply = shown_reply(s.timeline.scrubber, await s.run("tasks/list", {"cursor": cursor} if cursor else {}))
    result = reply.result if isinstance(reply.result, dict) else {}
    next_cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
    problem = f"tasks/list failed: {reply.error}" if reply.error is not None else None
    data = {"ok": reply.error is None, "key": reply.key, "tasks": result.get("tasks", []), "nextCursor": next_cursor,
            "error": problem}
    if wants_json(request):
        return respond(request, True, data, None)
    html = w.render("_task_list.html", s=s, rows=task_rows(result.get("tasks")), next_cursor=next_cursor,
                    cursor=cursor, key=reply.key, problem=problem)
    return respond(request, False, data, html)
