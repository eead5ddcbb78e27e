"""Pages and actions. Each page has a JSON twin from the same handler."""

from __future__ import annotations

import shlex
import sys
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.console.secrets import mask_wire
from app.console.session import MAX_NAME as SESSION_NAME_MAX
from app.console.session import ConsoleSession, Target
from app.console.target import ERAS
from app.mcp.stdio import is_assignment
from app.web.app_routes import sandbox_origin
from app.web.deps import (
    Operator,
    Owner,
    TargetHTMLResponse,
    Viewer,
    Web,
    connected,
    principal,
    require_owner,
    respond,
    session_or_404,
    split_json,
    web,
)
from app.web.forms import FormInput
from app.web.render import ROOT, listed_as
from app.web.security import COOKIE, local_path, token_matches
from app.web.session_view import SessionView
from app.web.timeline_filter import TimelineFilter, methods_seen
from app.web.views import session_json

router = APIRouter()
MAX_HEADER_LINES = 50


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, token: str | None = None, next: str = "/") -> Response:
    w = web(request)
    if token is not None:
        if not token_matches(token, w.guard.token):
            return w.page("unauthorized.html", status=401)
        # The launch URL: trade the token for a cookie, then drop it from the address bar.
        target = local_path(next)
        port = w.guard.console_port(request.scope)
        if not w.guard.is_public(request.headers.get("host"), port, request.url.scheme):
            # A cookie set here would reach every service on this host: hop to the console's own name first.
            again = w.guard.public_url("/?" + urlencode({"token": token, "next": target}), port)
            return RedirectResponse(again, status_code=303)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response
    require_owner(request)
    return w.page("home.html", sessions=_listing(w), demo_url=w.manager.settings.demo_url,
                  workspaces=w.manager.workspaces.all(),
                  me=principal(request), here="/")


def _listing(w: Web) -> list[dict[str, Any]]:
    """The home page's rows, each saying whether it is an imported, read-only copy (it looks alike otherwise)."""
    rows = w.manager.listing()
    for row in rows:
        found = w.manager.get(row["id"])
        row["read_only"] = bool(found is not None and found.read_only)
    return rows


@router.get("/sessions.json")
async def sessions_json(w: Owner) -> dict[str, Any]:
    return {"sessions": _listing(w)}


def _parse_headers(text: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in text.splitlines()[:MAX_HEADER_LINES]:
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n"):
            raise HTTPException(400, f"Header lines look like 'Name: value'; got {line[:80]!r}")
        try:
            (name + value).encode("latin-1")
        except UnicodeEncodeError as exc:
            raise HTTPException(400, f"Header {name.strip()!r}: HTTP header values must be Latin-1 text") from exc
        headers[name.strip()] = value.strip()
    return headers


def _target_from_form(form: FormInput, demo_url: str) -> Target:
    target = _target_kind_from_form(form, demo_url)
    era = form.first("era") or "auto"
    if era not in ERAS:
        raise HTTPException(400, f"Unknown era {era!r}: give auto, modern or legacy")
    target.era = era  # checked against ERAS just above
    target.seal(_chosen_secrets(form, target))
    return target


def _chosen_secrets(form: FormInput, target: Target) -> set[str]:
    """The owner's choice where the form listed a value (`secret_offered`: ticked or not), the default elsewhere (a
    value typed after the list was last made, or a form sent without the list)."""
    offered = set(form.get("secret_offered", ()))
    return {s for s in target.secret or () if s not in offered} | (set(form.get("secret", ())) & offered)


@router.post("/connect/secrets")
async def secret_slots(request: Request, w: Owner) -> Response:
    """The connect form's list of typed values with whether each is secret, made again as the owner types."""
    form = FormInput(list((await request.form()).multi_items()))  # type: ignore[arg-type]
    form_id = next((f for f in ("stdio", "retarget") if form.first("form_id") == f), "http")
    try:
        target = _target_from_form(form, w.manager.settings.demo_url)
    except HTTPException:  # half typed (a URL without its scheme yet): nothing to list
        return HTMLResponse(w.render("_secret_slots.html", form_id=form_id, slots=[], chosen=[]))
    return HTMLResponse(w.render("_secret_slots.html", form_id=form_id, slots=target.slots(),
                                 chosen=sorted(target.secret or ()), typed=target.typed()))


def _env_lines(text: str) -> list[str]:
    """The Environment field's `NAME=value` lines, as the leading assignments of the command line they become (the
    transport gives them to the server as its environment; the secrets list offers each value by its name)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    wrong = [line.partition("=")[0][:40] for line in lines if not is_assignment(line)]
    if wrong:
        raise HTTPException(400, f"Environment lines are NAME=value (a name of letters, digits and _): {wrong[0]!r}")
    return lines


def _target_kind_from_form(form: FormInput, demo_url: str) -> Target:
    kind = form.first("kind") or ""
    if kind == "http":
        url = (form.first("url") or "").strip()
        if not url.startswith(("http://", "https://")):
            raise HTTPException(400, "The server URL must start with http:// or https://")
        return Target(kind="http", url=url, headers=dict(_parse_headers(form.first("headers") or "")))
    if kind == "stdio":
        try:
            argv = shlex.split(form.first("command") or "")
        except ValueError as exc:
            raise HTTPException(400, f"Could not split the command line: {exc}") from exc
        if not argv:
            raise HTTPException(400, "Give a command to start the server")
        return Target(kind="stdio", argv=[*_env_lines(form.first("env") or ""), *argv], cwd=(form.first("cwd") or None))
    if kind == "demo-stdio":
        return Target(kind="stdio", argv=[sys.executable, "-m", "app.demo", "--stdio"], cwd=str(ROOT))
    if kind == "demo-http" and demo_url:
        return Target(kind="http", url=demo_url)
    raise HTTPException(400, f"Unknown kind of target {kind!r}")


@router.post("/sessions")
async def create_session(request: Request, w: Owner) -> Response:
    # Starting a stdio process happens only here: a POST by the owner, behind Host and Origin checks.
    form = FormInput(list((await request.form()).multi_items()))  # type: ignore[arg-type]
    target = _target_from_form(form, w.manager.settings.demo_url)
    session = w.manager.create(target)
    await w.manager.settle(session)
    w.manager.start(session)
    # A session made from another (an edited target, a retry) takes its place in the workspaces that showed it.
    w.manager.workspaces.replace_session(form.first("replaces") or form.first("from_session") or "", session.id)
    await _replace_failed_try(w, form)
    if "application/json" in request.headers.get("accept", ""):
        return respond(request, True, {"id": session.id, "url": f"/sessions/{session.id}"}, None)
    return RedirectResponse(f"/sessions/{session.id}", status_code=303)


async def _replace_failed_try(w: Owner, form: FormInput) -> None:
    """A retry from a first try that never connected replaces it, unless the owner ticked Keep: failed tries do
    not pile up in the sessions list."""
    old = w.manager.get(form.first("replaces") or "")
    if old is None or form.first("keep_failed") or old.read_only or old.status != "failed" \
            or old.state.ever_connected:
        return
    await w.manager.delete(old.id)


@router.get("/sessions/switcher", response_class=HTMLResponse)
async def switcher(w: Owner, current: str = "") -> HTMLResponse:
    """The top bar's session switcher, fetched when opened: every session by name, status, target and activity."""
    return HTMLResponse(w.render("_switcher.html", sessions=w.manager.listing(), current=current))


@router.get("/sessions/{name}")
async def session_page(request: Request, name: str, w: Viewer) -> Response:
    session_id, as_json = split_json(name)
    s = session_or_404(w, session_id)
    await w.manager.replicas.refresh_owner(s.id)
    flt = TimelineFilter.from_query(request.query_params)
    window = s.timeline.recent()
    # The page shows the session up to here and its live feed brings what comes after: a filtered page's search
    # (on a thread, while calls go on) is bounded by it, or an entry begun meanwhile was on neither.
    seq = s.timeline.seq
    entries, matched = window, len(window)
    oldest = min((e["seq0"] for e in window), default=0) if s.timeline.evicted else 0
    if flt.active:  # the whole session, from the store: the first page of matches and how many there are
        entries, matched, oldest = await s.timeline.read_off_loop(s.timeline.search, flt.entry_query(), seq + 1,
                                                                  s.settings.timeline_window)
    if as_json:
        who = principal(request)
        data = session_json(SessionView(s, owner=who.sees_secrets), entries=entries, answers=who.may_operate(s.id))
        return respond(request, True, data | {"filter": flt.to_json(), "window_entries": len(window),
                                              "matches": matched, "older_before": oldest}, None)
    # The page renders fewer entries than the window holds: its DOM stays small, "Load older entries" reads on
    # from the oldest one shown (a filtered page too: the older route keeps the filter).
    shown = entries[:max(1, min(s.settings.page_entries, s.settings.timeline_window))]
    if len(shown) < len(entries):
        oldest = min(e["seq0"] for e in shown)
    me = principal(request)
    links = w.manager.links.for_session(s.id) if me.is_owner else []
    switch = len(w.manager.sessions) if me.is_owner else 0  # a link holder sees only the session it was given
    page = w.render("session.html", s=s, entries=shown, seq=seq, oldest=oldest, me=me,
                    here=f"/sessions/{s.id}", links=links, reveal=me.sees_secrets, flt=flt,
                    methods=sorted(set(methods_seen(window)) | ({flt.method} if flt.method else set())),
                    window_count=len(window), matched=matched, switch_count=switch,
                    sandbox=sandbox_origin(request), pane=request.query_params.get("pane") == "1")
    return TargetHTMLResponse(page)


@router.post("/sessions/{session_id}/name")
async def rename_session(request: Request, session_id: str, w: Owner) -> Response:
    """The owner's name for the session (empty: the server's title again); control characters are dropped."""
    s = session_or_404(w, session_id)
    if s.read_only:
        raise HTTPException(409, "An imported session is read-only")
    form = FormInput(list((await request.form()).multi_items()))  # type: ignore[arg-type]
    name = "".join(c for c in (form.first("name") or "") if c.isprintable()).strip()[:SESSION_NAME_MAX]
    s.rename(name)
    if "application/json" in request.headers.get("accept", ""):
        return respond(request, True, {"id": s.id, "name": s.name}, None)
    return RedirectResponse(f"/sessions/{s.id}", status_code=303)


@router.post("/sessions/{session_id}/delete")
async def delete_session(session_id: str, w: Owner) -> Response:
    session_or_404(w, session_id)
    await w.manager.delete(session_id)
    return RedirectResponse("/", status_code=303)


@router.post("/sessions/{session_id}/refresh")
async def refresh(request: Request, session_id: str, w: Operator) -> Response:
    s = connected(w, session_id)
    await s.refresh_lists()
    return respond(request, False, {"lists": {k: len(v) for k, v in s.lists.items()}},
                   w.render("_lists.html", s=s))


@router.get("/sessions/{session_id}/entries/{name}")
async def entry(request: Request, session_id: str, name: str, w: Viewer) -> Response:
    key, as_json = split_json(name)
    s = session_or_404(w, session_id)
    found = await s.timeline.read_off_loop(s.timeline.entry, key)  # may read the store: keep the loop free
    me = principal(request)
    wire = await s.timeline.read_off_loop(s.timeline.exact_wire if me.sees_secrets else s.timeline.wire, key)
    if found is None and not wire:
        raise HTTPException(404, f"No entry {key!r}")
    wire = _shown_wire(s, me.sees_secrets, wire)
    data = {"entry": found, "wire": wire}
    return respond(request, as_json, data,
                   None if as_json else w.render("_entry_detail.html", s=s, key=key, me=me, **data))


@router.get("/sessions/{session_id}/entries/{key}/body", response_class=HTMLResponse)
async def entry_body(request: Request, session_id: str, key: str, w: Viewer) -> Response:
    """An opened timeline entry's body (findings, logs, rounds, frames, actions), fetched on open: the row on the
    page is a summary, so the page's size does not grow with what each call did."""
    s = session_or_404(w, session_id)
    found = await s.timeline.read_off_loop(s.timeline.entry, key)  # may read the store: keep the loop free
    if found is None:
        raise HTTPException(404, f"No entry {key!r}")
    me = principal(request)
    wire = [] if found.get("kind") == "operation" else \
        await s.timeline.read_off_loop(s.timeline.exact_wire if me.sees_secrets else s.timeline.wire, key)
    wire = _shown_wire(s, me.sees_secrets, wire)
    # An operation's entry shows where it ended (its result, or its task): after a reload its card is not on the page.
    record = s.state.operations.get(str(found.get("op"))) if found.get("kind") == "operation" else None
    page = w.render("_entry_body.html", s=s, key=key, me=me, entry=found, wire=wire, record=record)
    return TargetHTMLResponse(page)


def _shown_wire(s: ConsoleSession, sees_secrets: bool, wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An entry's frames as this caller may see them. The target's secret values are masks in the log
    (app/console/scrub.py): the owner gets the frames as they went (`Timeline.exact_wire` for what came in, the
    target's values in the headers sent); anyone else gets the log's, with what the server sent under a
    credential's name (Set-Cookie, a token) masked by its name."""
    if not sees_secrets:
        return [mask_wire(item) for item in wire]
    return [item | {"headers": s.target.reveal_headers(item["headers"])}
            if item.get("direction") == "out" and type(item.get("headers")) is list else item for item in wire]


@router.get("/sessions/{session_id}/drawers/share", response_class=HTMLResponse)
async def share_drawer(session_id: str, w: Owner) -> Response:
    """The owner's share-and-export drawer, fetched when first opened (links and forms are not in every page)."""
    s = session_or_404(w, session_id)
    return TargetHTMLResponse(w.render("_share_drawer.html", s=s, links=w.manager.links.for_session(s.id)))


EDIT_SUMMARY = ("Change which values are secret, or the target (opens a new session with the console's default client "
                "settings; this one's history stays as recorded)")


@router.get("/sessions/{session_id}/drawers/edit-target", response_class=HTMLResponse)
async def edit_target_drawer(request: Request, session_id: str, w: Owner) -> Response:
    """The owner's form to connect the target again with other secret values, fetched when opened: the values as
    typed are in the page only once the owner asks for them (never in presenter mode)."""
    s = session_or_404(w, session_id)
    if not principal(request).sees_secrets:
        raise HTTPException(403, "Presenter mode shows no value as typed: leave presenter mode to edit the target")
    return TargetHTMLResponse(w.render("_edit_target.html", s=s, reveal=True, open_edit=True,
                                       summary=EDIT_SUMMARY))


@router.get("/sessions/{session_id}/drawers/client-settings", response_class=HTMLResponse)
async def client_settings_drawer(request: Request, session_id: str, w: Viewer) -> Response:
    """The client settings drawer, fetched when first opened; it then takes live updates by id like the rest."""
    s = session_or_404(w, session_id)
    page = w.render("_client_settings.html", s=s, me=principal(request))
    return TargetHTMLResponse(page)


@router.get("/sessions/{session_id}/timeline")
async def older(request: Request, session_id: str, before: int, w: Viewer, limit: int = 100) -> Response:
    s = session_or_404(w, session_id)
    flt = TimelineFilter.from_query(request.query_params)
    size = min(max(limit, 1), 500)
    if flt.active:  # older matches of the whole session, not a filter over one page of older entries
        entries, _, oldest = await s.timeline.read_off_loop(s.timeline.search, flt.entry_query(), before, size)
    else:
        entries = await s.timeline.read_off_loop(s.timeline.older, before, size)
        oldest = min((e["seq0"] for e in entries), default=0) if len(entries) >= size else 0
    return respond(request, False, {"timeline": entries, "older_before": oldest},
                   w.render("_older.html", s=s, entries=entries, oldest=oldest, flt=flt))


@router.get("/sessions/{session_id}/tools/form", response_class=HTMLResponse)
async def tool_form(request: Request, session_id: str, name: str, w: Viewer) -> Response:
    """One tool's call form, fetched when the tool is opened: the page carries names and descriptions only,
    so its size does not grow with the forms of tools nobody opens."""
    s = session_or_404(w, session_id)
    tool = listed_as(s.lists.get("tools") or [], "name", name)
    if tool is None:
        raise HTTPException(404, f"The server lists no tool {name!r}")
    return TargetHTMLResponse(w.render("_tool_form.html", s=s, tool=tool, me=principal(request)))
