"""The form side of calls: a tool's form turned into its JSON arguments and back, the whole form of a huge schema,
resource templates read through their URI template, and completions offered as a person types.

Nothing here reads the form a second way: the arguments shown in the JSON box are what `parse_form` makes of the
form, the very function a call in form mode uses, and JSON is shown in the form only when reading that form back
gives the same JSON (form_tree.fits).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.web.actions import _not_sent, _operation
from app.web.answers import form_fields as answer_fields
from app.web.deps import (
    TargetHTMLResponse,
    TargetJSONResponse,
    Viewer,
    Web,
    connected,
    form_input,
    operator_post,
    session_or_404,
)
from app.web.form_tree import NotFitting, fits
from app.web.form_view import dialog_window, tool_form_view
from app.web.forms import FormInput, fields_for_kept, parse_form, strict_json
from app.web.op_routes import find_op
from app.web.render import listed_as
from app.web.uri_template import TemplateError, expand, variables

router = APIRouter()
SUGGESTIONS_SHOWN = 100  # the spec caps `values` at 100
REQUIRED = "This field is required."  # what parse_form says of a required field left empty


def _tool(s: Any, form: FormInput) -> dict[str, Any]:
    tool = listed_as(s.lists.get("tools") or [], "name", form.first("tool") or "")
    if tool is None:
        raise HTTPException(404, "The server lists no such tool")
    return tool


def _own_inputs(form: FormInput) -> list[tuple[str, str]]:
    """The form's argument inputs, without the call's own (tool, mode, json, log level)."""
    return [(k, v) for k in form for v in form[k] if k.startswith(("arg.", "at:", "present."))]


@operator_post(router, "/sessions/{session_id}/tools/arguments")
async def form_arguments(request: Request, session_id: str, w: Web) -> Response:
    """The arguments a call in form mode would send now, as the JSON box shows them, or why there are none."""
    s = session_or_404(w, session_id)
    form = await form_input(request)
    tool = _tool(s, form)
    arguments, errors = parse_form(fields_for_kept(tool.get("inputSchema")), form)
    # A required field left empty is absent from the form and from its JSON alike: the two still agree. Any other
    # problem (text in a number field, a value out of range) is a value the form shows and the JSON cannot.
    missing = sorted(k for k, v in errors.items() if v == REQUIRED)
    problems = {k: v for k, v in errors.items() if v != REQUIRED}
    return TargetJSONResponse({"ok": not problems, "errors": problems, "missing": missing,
                               "json": json.dumps(arguments, indent=2, ensure_ascii=False)})


@operator_post(router, "/sessions/{session_id}/tools/fields")
async def form_fields(request: Request, session_id: str, w: Web) -> Response:
    """A tool's fields holding given values: the JSON box's (when it fits the form) or the form's own, with every
    field when `all` is set (a huge schema renders its first fields until asked)."""
    s = session_or_404(w, session_id)
    form = await form_input(request)
    tool = _tool(s, form)
    fields = fields_for_kept(tool.get("inputSchema"))
    pairs = _own_inputs(form)
    if form.first("source") == "json":
        try:
            pairs = fits(fields, strict_json(form.first("json") or ""))
        except NotFitting as exc:
            return TargetJSONResponse({"fits": False, "why": f"This JSON does not fit the form: {exc}."}, 422)
        except ValueError as exc:
            return TargetJSONResponse({"fits": False, "why": f"Not valid JSON: {exc}"}, 422)
    view = tool_form_view(tool.get("inputSchema"), pairs, show_all=form.first("all") == "1")
    uid = form.first("uid") or "tool"
    return TargetHTMLResponse(w.render("_tool_fields.html", view=view, uid=uid))


def template_uri(form: FormInput) -> tuple[str, str | None]:
    """The URI a template form's values expand to, or why it has none."""
    template = form.first("template") or ""
    try:
        names = [v.name for v in variables(template)]
        values = {n: form.first(f"var.{n}") or None for n in names}
        return expand(template, values), None
    except TemplateError as exc:
        return "", f"The URI template cannot be read: {exc}"


@router.get("/sessions/{session_id}/templates/expand")
async def template_preview(request: Request, session_id: str, w: Viewer) -> Response:
    session_or_404(w, session_id)
    uri, problem = template_uri(FormInput(list(request.query_params.multi_items())))
    return TargetJSONResponse({"uri": uri, "problem": problem})


@operator_post(router, "/sessions/{session_id}/templates/read")
async def template_read(request: Request, session_id: str, w: Web) -> Response:
    s = connected(w, session_id)
    uri, problem = template_uri(await form_input(request))
    if problem:
        return _not_sent(w, request, {"uri": problem}, {"uri": "URI"})
    s.read_uris.add(uri)
    return await _operation(w, request, s, "resources/read", {"uri": uri})


@router.get("/sessions/{session_id}/dialog-fields")
async def dialog_fields(request: Request, session_id: str, w: Viewer, key: str, uid: str, op: str = "",
                        sr: str = "", raw: str = "") -> Response:
    """The fields of a form dialog past its first ones (form_view.dialog_window), fetched when "Show all" opens;
    with `raw`, the request as it came (form_view.big_request)."""
    s = session_or_404(w, session_id)
    if sr:
        record = s.server_requests.get(sr)
        asked, draft, errors = (record.request, record.drafts.get(key), record.errors.get(key, {})) \
            if record is not None else (None, None, {})
    else:
        found = s.operations.record_of(find_op(s, op))
        asked, draft, errors = found.pending.get(key), found.drafts.get(key), found.errors.get(key, {})
    if not isinstance(asked, dict):
        raise HTTPException(404, "That question is no longer asked")
    if raw:
        return TargetHTMLResponse(w.render("_dialog_rest.html", raw=asked))
    fields, _ = answer_fields(asked)
    _, rest = dialog_window(fields, draft, errors)
    return TargetHTMLResponse(w.render("_dialog_rest.html", fields=[fields[i] for i in rest], uid=uid,
                                       errors=errors, draft=draft))


@operator_post(router, "/sessions/{session_id}/complete/suggest")
async def suggest(request: Request, session_id: str, w: Web) -> Response:
    """completion/complete for the field being typed, with the other fields' values as `context.arguments`; the
    exchange is on the timeline like any request. The answer is JSON for console.js to put in a datalist."""
    s = connected(w, session_id)
    if "completions" not in s.server_capabilities:
        return TargetJSONResponse({"values": [], "why": "The server does not declare completions."}, 409)
    form = await form_input(request)
    ref_type = form.first("ref_type")
    ref: dict[str, Any] = {"type": ref_type}
    if ref_type == "ref/prompt":
        ref["name"] = form.first("ref") or ""
    elif ref_type == "ref/resource":
        ref["uri"] = form.first("ref") or ""
    else:
        return TargetJSONResponse({"values": [], "why": "ref_type is ref/prompt or ref/resource"}, 422)
    argument = form.first("argument") or ""
    others = {k[4:]: v for k in form if k.startswith("ctx.") and k[4:] != argument
              for v in [form.first(k) or ""] if v != ""}
    params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": form.first("value") or ""}}
    if others:
        params["context"] = {"arguments": others}
    reply = await s.run("completion/complete", params)
    completion = (reply.result or {}).get("completion") if reply.error is None else None
    raw = completion.get("values") if isinstance(completion, dict) else None
    values = [v for v in raw if isinstance(v, str)][:SUGGESTIONS_SHOWN] if isinstance(raw, list) else []
    return TargetJSONResponse({"values": values, "total": (completion or {}).get("total"),
                               "hasMore": (completion or {}).get("hasMore"),
                               "why": str(reply.error) if reply.error is not None else None})
