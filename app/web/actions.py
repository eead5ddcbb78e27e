"""Actions that send requests to the target: call a tool, read a resource, get a prompt, complete.

The handler sends and renders the *result*; the timeline entries reach every tab through the hub.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.live import LOG_LEVELS
from app.console.scrub import shown_reply
from app.console.session import ConsoleSession
from app.mcp.client import Reply
from app.mcp.task import TaskChoice
from app.web.deps import Web, connected, form_input, operator_post, respond, wants_json
from app.web.forms import FormInput, fields_for_kept, parse_form, strict_json
from app.web.render import listed_as
from app.web.views import operation_json, reply_json

router = APIRouter()
QUICK_ANSWER_S = 0.5


def _json_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = strict_json(text)
    except ValueError as exc:
        return None, f"Arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, "Arguments must be a JSON object"
    return value, None


def _not_sent(w: Web, request: Request, errors: dict[str, str], labels: dict[str, str]) -> Response:
    data = {"ok": False, "sent": False, "errors": errors}
    if wants_json(request):
        return respond(request, True, data, None)
    return respond(request, False, data, w.render("_not_sent.html", errors=errors, labels=labels))


def _result(w: Web, request: Request, s: ConsoleSession, reply: Reply) -> Response:
    reply = shown_reply(s.timeline.scrubber, reply)  # as the log has it: masked as it was recorded
    html = w.render("_result.html", s=s, reply=reply, result=reply.result, validation=None)
    return respond(request, False, reply_json(reply), html)


async def _operation(w: Web, request: Request, s: ConsoleSession, method: str, params: dict[str, Any],
                     log_level: str | None = None, task_choice: TaskChoice | None = None) -> Response:
    """tools/call, prompts/get and resources/read may take rounds: each runs as an operation.

    A script (JSON) waits for the end. A browser gets the card at once if the operation ends
    quickly, else a running card with Cancel and progress that the websocket keeps current.
    """
    as_json = wants_json(request)
    op = s.operations.create(method, params, log_level=log_level, task_choice=task_choice)
    s.apps.opened(op)  # a tool with a view: its call gets an app, shown in the session's Apps panel
    if as_json:
        # In this request's own task: a script waits for the end anyway, and a task of its own cost two more
        # turns of the loop (its start, then waking this one). A client that goes away does not cancel it
        # (the server only tells the app on its next read); a shutdown closes the session, which ends it.
        await s.operations.run(op)
    else:
        task = w.manager.tasks.spawn(f"op-{op.id}", s.operations.run(op))
        await asyncio.wait({task}, timeout=QUICK_ANSWER_S)
    if s.timeline.ended:  # deleted while the call ran: a "running" answer with no result would say nothing
        raise HTTPException(410, "The session was deleted while this call ran: nothing more of it was recorded.")
    record = s.operations.record_of(op)
    # The answer is the final reply with its operation beside it; the operation's own copy of that reply is
    # left out (GET .../operations/<id>.json has it), so the answer says each thing once.
    # The final reply as its end recorded it; none yet while it runs or waits for input.
    final = record.final.data if record.final is not None else {"ok": False, "result": None}
    data = {**final,
            "status": record.status, "operation": operation_json(record, with_final=False),
            "output_validation": record.validation}
    if as_json:
        return respond(request, True, data, None)
    return respond(request, False, data, w.render("_operation.html", s=s, op=record))


@operator_post(router, "/sessions/{session_id}/tools/call")
async def call_tool(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    form = await form_input(request)
    name = form.first("tool") or ""
    tool = listed_as(s.lists["tools"], "name", name)
    if tool is not None:
        name = tool["name"]  # as listed: a browser sends a name holding a lone surrogate with U+FFFD in its place
    if form.first("mode") == "json" or tool is None:
        arguments, problem = _json_arguments(form.first("json") or "{}")
        if problem or arguments is None:
            return _not_sent(w, request, {"json": problem or "invalid"}, {"json": "Arguments (JSON)"})
    else:
        fields = fields_for_kept(tool.get("inputSchema"))
        arguments, errors = parse_form(fields, form)
        if errors:
            return _not_sent(w, request, errors, {f.name: f.label for f in fields})
    level = form.first("log_level") or None
    if level is not None and level not in LOG_LEVELS:
        return _not_sent(w, request, {"log_level": f"Unknown log level {level!r}"}, {"log_level": "Log level"})
    choice, problem = _task_choice(form)
    if problem:
        return _not_sent(w, request, {"task_ttl": problem}, {"task_ttl": "Task TTL (ms)"})
    return await _operation(w, request, s, "tools/call", {"name": name, "arguments": arguments}, level, choice)


def _task_choice(form: FormInput) -> tuple[TaskChoice | None, str | None]:
    """"Run as a task" for this call (2025-11-25, a tool whose taskSupport is "optional"; a "required" tool's form
    says it always), with the TTL to ask for. Nothing is kept: the next call asks again."""
    raw = (form.first("task_ttl") or "").strip()
    ttl: int | None = None
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            return None, "The TTL is a whole number of milliseconds, 1 or more (empty: the server's)."
        ttl = int(raw)
    if form.first("as_task") == "1":
        return TaskChoice(ttl), None
    return None, None


@operator_post(router, "/sessions/{session_id}/resources/read")
async def read_resource(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    # Sent exactly as given: a server may list a URI with an edge space, and reading it stripped asks for another.
    uri = (await form_input(request)).first("uri") or ""
    if not uri.strip():
        return _not_sent(w, request, {"uri": "Give a resource URI"}, {"uri": "URI"})
    s.read_uris.add(uri)
    return await _operation(w, request, s, "resources/read", {"uri": uri})


@operator_post(router, "/sessions/{session_id}/prompts/get")
async def get_prompt(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    form = await form_input(request)
    name = form.first("prompt") or ""
    prompt = listed_as(s.lists["prompts"], "name", name)
    if prompt is not None:
        name = prompt["name"]  # as listed (see call_tool)
    arguments: dict[str, str] = {}
    errors: dict[str, str] = {}
    declared = (prompt or {}).get("arguments")
    for arg in declared if isinstance(declared, list) else []:  # a server's list: anything may be in it
        if not isinstance(arg, dict):
            continue
        arg_name = arg.get("name")
        if not isinstance(arg_name, str):
            continue
        value = form.first(f"arg.{arg_name}") or ""
        if value != "":
            arguments[arg_name] = value  # prompt arguments are strings by definition
        elif arg.get("required"):
            errors[arg_name] = "This argument is required."
    if errors:
        return _not_sent(w, request, errors, {k: k for k in errors})
    params: dict[str, Any] = {"name": name}
    if arguments:
        params["arguments"] = arguments
    return await _operation(w, request, s, "prompts/get", params)


@operator_post(router, "/sessions/{session_id}/complete")
async def complete(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    form = await form_input(request)
    ref_type = form.first("ref_type") or "ref/prompt"
    ref: dict[str, Any] = {"type": ref_type}
    if ref_type == "ref/prompt":
        ref["name"] = form.first("ref") or ""
    else:
        ref["uri"] = form.first("ref") or ""
    params = {"ref": ref, "argument": {"name": form.first("argument") or "", "value": form.first("value") or ""}}
    reply = await s.run("completion/complete", params)
    return _result(w, request, s, reply)
