"""Routes for operations with rounds: answering input requests, giving up, enabling capabilities.

Roots and client capabilities are the owner's claims about the owner's machine: only the owner changes
them (and so only the owner may "Enable and retry"). An operator answers a roots request from the
owner's list.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.live_records import OperationRecord
from app.console.operations import Operation, is_stale
from app.console.roots import parse_roots
from app.console.session import ConsoleSession
from app.console.task_push import set_push
from app.mcp import mrtr
from app.mcp.apps import CAPABILITY as APPS_CAPABILITY
from app.mcp.apps import EXTENSION as APPS_EXTENSION
from app.web.answers import NotAnswered, elicitation_answer, raw_answer, sampling_answer
from app.web.deps import (
    Operator,
    Owner,
    Viewer,
    Web,
    connected,
    form_input,
    principal,
    respond,
    session_or_404,
    split_json,
)
from app.web.forms import FormInput, strict_json
from app.web.views import operation_json

router = APIRouter()


def find_op(s: ConsoleSession, op_id: str) -> Operation:
    # One the fold shows waiting for input is taken up again when no live object drives it (after a restart).
    op = s.operations.ops.get(op_id) or s.operations.revive(op_id)
    if op is None:
        raise HTTPException(404, f"No operation {op_id!r}")
    return op


def op_response(w: Web, request: Request, s: ConsoleSession, op: Operation, as_json: bool = False,
                template: str = "_operation.html") -> Response:
    """The operation as the fold knows it: the same record and template live, after a restart or an import."""
    record = s.operations.record_of(op)
    html = None if as_json else w.render(template, s=s, op=record)
    return respond(request, as_json, operation_json(record), html)


def dialogs_response(w: Web, request: Request, s: ConsoleSession, op: Operation) -> Response:
    """An answer's page answer: the operation's dialogs as they now are (errors beside what was typed).

    The dialogs live in the session's one "Awaiting your input" place; every tab, the answering one
    included, gets this same state from the operation's push, so the browser swaps nothing from here.
    """
    return op_response(w, request, s, op, template="_inbox_op.html")


@router.get("/sessions/{session_id}/operations/{name}")
async def show(request: Request, session_id: str, name: str, w: Viewer) -> Response:
    op_id, as_json = split_json(name)
    s = session_or_404(w, session_id)
    record = s.state.operations.get(op_id)
    if record is None:
        # Older than the operations the state keeps: what the timeline recorded.
        snapshot = await s.timeline.read_off_loop(s.timeline.entry, f"op-{op_id}")
        if snapshot is None:
            raise HTTPException(404, f"No operation {op_id!r}")
        return respond(request, as_json, snapshot, None if as_json else
                       w.render("_entry.html", s=s, entry=snapshot, oob=False))
    html = None if as_json else w.render("_operation.html", s=s, op=record)
    return respond(request, as_json, operation_json(record, answers=principal(request).may_operate(s.id)), html)


@router.post("/sessions/{session_id}/operations/{op_id}/answer")
async def answer(request: Request, session_id: str, op_id: str, w: Operator) -> Response:
    s = connected(w, session_id)
    op = find_op(s, op_id)
    form = await form_input(request)
    key = posted_key(form)
    round_ = posted_round(form)
    record = s.operations.record_of(op)
    if record.status == "running" and key not in record.pending:
        async with op.lock:  # the retry in flight decides what the next round asks; wait for it
            pass
    problem = not_taken(s.operations.record_of(op), key, round_)
    if problem is not None:
        raise problem
    input_request = s.operations.record_of(op).pending[key]
    if mrtr.kind_of(input_request) == "sampling" and form.first("action") == "decline":
        # No error replay exists in MRTR: declining simply stops; the server is not waiting.
        if not await s.operations.abandon(op, "The sampling request was declined; nothing was sent.", round_):
            # another tab's answer moved it on while this one waited
            problem = not_taken(s.operations.record_of(op), key, round_)
            if problem is not None:
                raise problem
        return dialogs_response(w, request, s, op)
    try:
        value = checked_answer(s, input_request, form)
    except NotAnswered as exc:
        s.operations.refuse(op, key, exc.errors, {name: list(values) for name, values in form.items()}, round_)
        return dialogs_response(w, request, s, op)
    if not await s.operations.answer(op, key, value, round_):
        # Another tab's answer (or Abandon) ended the operation or moved it on while this one waited.
        problem = not_taken(s.operations.record_of(op), key, round_)
        if problem is not None:
            raise problem
    return dialogs_response(w, request, s, op)


def not_taken(op: OperationRecord, key: str, round_: int | None) -> HTTPException | None:
    """Why an answer for `key`, written for `round_`, cannot be taken now (None: it can), as the fold knows the
    operation: it is over, the answer was written for another round, or the round now asking does not ask for
    that key."""
    if op.status not in ("awaiting_input", "running"):
        return ended(op)
    if is_stale(op, round_) and op.status == "awaiting_input":
        return stale_round(op, round_)
    if key not in op.pending:
        return not_asked(op, key)
    if key in op.answers and op.status == "awaiting_input":
        return already_answered(op, key)  # while the retry runs, the lock decides what the next round asks
    return None


def already_answered(op: OperationRecord, key: str) -> HTTPException:
    return HTTPException(409, f"{shown_key(key)} was already answered in round {len(op.rounds)} of operation {op.id} "
                              "(perhaps in another tab): this answer was not taken and nothing was sent.")


def posted_round(form: FormInput) -> int | None:
    """The round a dialog was shown for (its form says); None from a client that does not say."""
    text = form.first("round") or ""
    if not text:
        return None
    # ASCII digits only, and few: "1 " or "+1" read as "not said" let a late answer to round 1 become the answer
    # to round 2's question, and "²" (a digit to isdigit, not to int) or 5,000 nines failed the request.
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise HTTPException(400, f"The round this was written for is not a round number: {text[:20]!r}.")
    return int(text)


def ended(op: OperationRecord) -> HTTPException:
    return HTTPException(409, f"Operation {op.id} is already {op.status.replace('_', ' ')} (perhaps in another "
                              "tab): this answer was not taken and nothing was sent.")


def stale_round(op: OperationRecord, round_: int | None) -> HTTPException:
    return HTTPException(409, f"That answer was written for round {round_} of operation {op.id}, which is now at "
                              f"round {len(op.rounds)} (perhaps answered in another tab): nothing was sent. "
                              "Its current question is under Awaiting your input.")


SHOWN_KEYS = 5  # keys a refusal names (a round may ask for up to MAX_INPUT_REQUESTS)
SHOWN_KEY_CHARS = 60


def shown_key(key: str) -> str:
    """A key as a refusal names it: JSON with every non-ASCII character escaped (a bidi override or a zero-width
    space is shown, not obeyed), cut short when long."""
    cut = key if len(key) <= SHOWN_KEY_CHARS else key[:SHOWN_KEY_CHARS]
    return json.dumps(cut) + ("…" if cut != key else "")


def not_asked(op: OperationRecord, key: str) -> HTTPException:
    asked = list(op.pending) if op.status == "awaiting_input" else []
    named = ", ".join(shown_key(k) for k in asked[:SHOWN_KEYS])
    if len(asked) > SHOWN_KEYS:
        named += f" and {len(asked) - SHOWN_KEYS} more"
    what = f"it asks for {named}" if asked else "it asks for nothing yet"
    return HTTPException(409, f"Operation {op.id} is at round {len(op.rounds)}, which does not ask for "
                              f"{shown_key(key)} ({what}): this answer was not taken and nothing was sent.")


def posted_key(form: FormInput) -> str:
    """The input request's key as the server gave it: from `key_json` (ASCII JSON text, which survives the page),
    else from `key` as posted (a client that sends the plain field)."""
    text = form.first("key_json")
    if text:
        try:
            key = json.loads(text)
        except ValueError:
            key = None
        if isinstance(key, str):
            return key
    return form.first("key") or ""


def checked_answer(s: ConsoleSession, input_request: dict[str, Any], form: FormInput) -> Any:
    """The value a dialog's form means, checked as the spec asks; NotAnswered says why not, per field.

    One path for MRTR input requests and legacy server requests: the same dialogs, the same checks.
    """
    kind = mrtr.kind_of(input_request)
    if kind in ("form", "url"):
        return elicitation_answer(input_request, form)
    if kind == "sampling":
        tools_declared = isinstance((s.capabilities.get("sampling") or {}).get("tools"), dict)
        if input_request.get("params", {}).get("tools") and not tools_declared:
            raise NotAnswered({"reply": "The request offers tools but sampling.tools was not declared: "
                                        "the client must refuse (decline instead)."})
        return sampling_answer(form)
    if kind == "roots":
        shown = form.first("roots_shown")
        if shown is not None and _json_or_none(shown) != s.roots:
            raise NotAnswered({"roots": "The roots were changed (in another tab) after this request was shown, so "
                                        "nothing was sent. The list to be sent is shown again: check it and send."})
        return {"roots": [dict(r) for r in s.roots]}
    return raw_answer(form)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@router.post("/sessions/{session_id}/server-requests/{sr_id}/answer")
async def answer_server_request(request: Request, session_id: str, sr_id: str, w: Operator) -> Response:
    """Answer a request from a 2025-11-25 server: the response goes back with the server's JSON-RPC id."""
    s = connected(w, session_id)
    record = s.server_requests.get(sr_id)
    if record is None:
        raise HTTPException(404, f"No server request {sr_id!r}")
    form = await form_input(request)
    who = principal(request).role
    if s.server_requests.is_open(sr_id):
        if mrtr.kind_of(record.request) == "sampling" and form.first("action") == "decline":
            s.server_requests.reject_sampling(sr_id, who)
        else:
            try:
                s.server_requests.answer(sr_id, checked_answer(s, record.request, form), who)
            except NotAnswered as exc:
                s.server_requests.refuse(sr_id, exc.errors, {name: list(values) for name, values in form.items()})
    record = s.server_requests.get(sr_id) or record
    return respond(request, False, record.to_json(), w.render("_inbox_sr.html", s=s, sr=record))


@router.post("/sessions/{session_id}/operations/{op_id}/cancel")
async def cancel_operation(request: Request, session_id: str, op_id: str, w: Operator) -> Response:
    s = connected(w, session_id)
    op = find_op(s, op_id)
    if not await s.operations.cancel(op, principal(request).role):
        raise not_cancelled(s.operations.record_of(op))
    async with op.lock:  # the round ends promptly once cancelled; show its final state
        pass
    return op_response(w, request, s, op)


@router.post("/sessions/{session_id}/operations/{op_id}/poll-interval")
async def task_poll_interval(request: Request, session_id: str, op_id: str, w: Operator) -> Response:
    """How often the console polls the task an operation became: `ms`, or empty for the server's pollIntervalMs."""
    s = connected(w, session_id)
    op = find_op(s, op_id)
    text = ((await form_input(request)).first("ms") or "").strip()
    if text and not text.isdigit():
        raise HTTPException(422, f"The poll interval must be a whole number of milliseconds, not {text!r}.")
    if not s.operations.set_poll_interval(op, int(text) if text else None):
        raise HTTPException(409, f"Operation {op.id} is not following a task: there is nothing to poll.")
    return op_response(w, request, s, op)


@router.post("/sessions/{session_id}/operations/{op_id}/task-push")
async def task_push(request: Request, session_id: str, op_id: str, w: Operator) -> Response:
    """Push for the task an operation became (2026-07-28): `on` 1 listens for its notifications/tasks, 0 stops."""
    s = connected(w, session_id)
    op = find_op(s, op_id)
    on = (await form_input(request)).first("on") == "1"
    problem = await set_push(s.operations, s.listeners, s.background, op.id, on)
    if problem is not None:
        raise HTTPException(409, problem)
    return op_response(w, request, s, op)


def not_cancelled(op: OperationRecord) -> HTTPException:
    """Cancel found nothing in flight: the operation ended, waits for input, or its request has not gone out yet
    (or has just come back). Said, so a tab whose card is behind does not take the pressed button for done."""
    if op.status == "running":
        why = "is running, but its request is not in flight (not sent yet, or its answer has just come)"
    else:
        why = f"is {op.status.replace('_', ' ')}, not running (perhaps ended in another tab)"
    return HTTPException(409, f"Nothing was cancelled: operation {op.id} {why}.")


@router.post("/sessions/{session_id}/cancel/{key}")
async def cancel_exchange(request: Request, session_id: str, key: str, w: Operator) -> Response:
    s = connected(w, session_id)
    done = await s.cancel(key, principal(request).role)
    return respond(request, True, {"cancelled": done, "key": key}, None)


@router.post("/sessions/{session_id}/wait-longer/{key}")
async def wait_longer(request: Request, session_id: str, key: str, w: Operator) -> Response:
    """Push out the idle deadline of a request in flight (an exchange key, or an operation's op-<id>)."""
    view = connected(w, session_id).wait_longer(key)
    if view is None:
        raise HTTPException(409, "That request is not waiting on a deadline (it is over, or a listen stream).")
    return respond(request, True, {"waiting_longer": True, **view}, None)


@router.post("/sessions/{session_id}/operations/{op_id}/abandon")
async def abandon(request: Request, session_id: str, op_id: str, w: Operator) -> Response:
    """Give up an operation awaiting input; nothing is sent to the server.

    The Abandon buttons post the `round` their tab shows. If the operation has moved on to another round since
    (another tab answered and the server asked again), nothing is abandoned: 409, saying so. A client that posts
    no round abandons whatever round is asked now, as before. Abandoning an operation that is over changes
    nothing and shows it as it is.
    """
    s = session_or_404(w, session_id)
    op = find_op(s, op_id)
    round_ = posted_round(await form_input(request))
    if not await s.operations.abandon(op, "Abandoned by the user; no retry was sent.", round_):
        record = s.operations.record_of(op)
        if record.status == "awaiting_input" and is_stale(record, round_):
            raise stale_abandon(record, round_)
    return op_response(w, request, s, op)


def stale_abandon(op: OperationRecord, round_: int | None) -> HTTPException:
    return HTTPException(409, f"Abandon was pressed on round {round_} of operation {op.id}, which is now at round "
                              f"{len(op.rounds)} (perhaps answered in another tab): nothing was abandoned. Its "
                              "current question is under Awaiting your input.")


@router.post("/sessions/{session_id}/operations/{op_id}/enable-and-retry")
async def enable_and_retry(request: Request, session_id: str, op_id: str, w: Owner) -> Response:
    s = connected(w, session_id)
    op = find_op(s, op_id)
    if not await s.operations.enable_and_retry(op):
        raise not_retried(s.operations.record_of(op))
    return op_response(w, request, s, op)


def not_retried(op: OperationRecord) -> HTTPException:
    return HTTPException(409, f"No client capability is asked for on operation {op.id} (it is "
                              f"{op.status.replace('_', ' ')}; perhaps it was enabled and retried in another tab): "
                              "nothing was enabled and nothing was sent.")


@router.post("/sessions/{session_id}/capabilities")
async def set_capabilities(request: Request, session_id: str, w: Owner) -> Response:
    """Toggle the four common capabilities, keeping everything else declared (sampling.tools,
    extensions, experimental…); or replace the whole object from the JSON editor."""
    s = session_or_404(w, session_id)
    form = await form_input(request)
    draft = form.first("caps_json") if form.first("mode") == "json" else None  # kept when refused
    if changed_since(form, s.capabilities):
        return _caps_page(w, request, s, [changed_elsewhere("capabilities")], draft)
    raw = (form.first("caps_json") or "").strip()
    if form.first("mode") == "json":
        try:
            caps = strict_json(raw or "{}")
        except ValueError as exc:
            return _caps_page(w, request, s, [f"Not valid JSON: {exc}"], draft)
        if not isinstance(caps, dict) or not all(isinstance(v, dict) for v in caps.values()):
            return _caps_page(w, request, s, ["Capabilities must be an object of objects"], draft)
    else:
        caps = _toggled(s.capabilities, set(form.get("cap", [])))
    s.set_capabilities(caps)
    return _caps_page(w, request, s, [])


def changed_since(form: FormInput, current: Any) -> bool:
    """The form says what it was made from (`based_on`), and that is no longer what the session has: another tab
    saved in between, and saving this form (all of it, not just what was changed here) would undo that save."""
    text = form.first("based_on")
    if text is None:
        return False  # a client that does not say: last save wins, as before
    try:
        return bool(json.loads(text) != current)
    except ValueError:
        return True


def changed_elsewhere(what: str) -> str:
    return (f"The {what} were changed in another tab after this form was shown, so nothing was saved (saving it "
            f"would have undone that change). They are shown below as they are now: make your change again.")


def _toggled(current: dict[str, Any], chosen: set[str]) -> dict[str, Any]:
    caps = {k: v for k, v in current.items() if k not in ("elicitation", "sampling", "roots")}
    elicitation = {k: v for k, v in (current.get("elicitation") or {}).items() if k not in ("form", "url")}
    for mode in ("form", "url"):
        if f"elicitation.{mode}" in chosen:
            elicitation[mode] = (current.get("elicitation") or {}).get(mode) or {}
    if "elicitation.form" in chosen or "elicitation.url" in chosen:
        caps["elicitation"] = elicitation
    for name in ("sampling", "roots"):
        if name in chosen:
            caps[name] = current.get(name) or {}
    # MCP Apps: the ui extension is a box too (the console hosts views); other extensions are kept as they are.
    extensions = {k: v for k, v in (current.get("extensions") or {}).items() if k != APPS_EXTENSION}
    if "apps" in chosen:
        extensions[APPS_EXTENSION] = (current.get("extensions") or {}).get(APPS_EXTENSION) or APPS_CAPABILITY
    caps.pop("extensions", None)
    if extensions:
        caps["extensions"] = extensions
    return caps


def _caps_page(w: Web, request: Request, s: ConsoleSession, problems: list[str],
               draft_json: str | None = None) -> Response:
    return respond(request, False, {"client_capabilities": s.capabilities, "problems": problems},
                   w.render("_client_settings.html", s=s, saved=not problems, problems=problems,
                            draft_json=draft_json))


@router.post("/sessions/{session_id}/roots")
async def set_roots(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    form = await form_input(request)
    if changed_since(form, s.roots):
        problem = changed_elsewhere("roots")
        return respond(request, False, {"roots": s.roots, "problems": [problem]},
                       w.render("_client_settings.html", s=s, saved=False, problems=[problem],
                                draft_roots=form.first("roots")))
    roots, problems = parse_roots(form.first("roots") or "")
    if not problems:
        s.set_roots(roots)
    return respond(request, False, {"roots": s.roots, "problems": problems},
                   w.render("_client_settings.html", s=s, saved=not problems, problems=problems,
                            draft_roots=form.first("roots") if problems else None))
