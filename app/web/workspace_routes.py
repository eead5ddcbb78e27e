"""Workspaces (app/console/workspaces.py): several sessions side by side, each in a pane that is the session's own
page, and one timeline that merges theirs, filterable by server. The owner's only: a link holder sees one session.
"""

from __future__ import annotations

import heapq
from itertools import islice
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from app.web.deps import Owner, TargetHTMLResponse, form_input, principal, respond, wants_json
from app.web.session_view import SessionView

router = APIRouter()
COMBINED_ROWS = 200  # the newest entries of all the workspace's sessions, merged


def _panes(w: Any, session_ids: list[str]) -> list[dict[str, Any]]:
    panes = []
    for sid in session_ids:
        s = w.manager.get(sid)
        if s is not None:
            panes.append({"id": sid, "name": s.name, "status": s.status, "target": s.target.shown(),
                          "read_only": s.read_only})
    return panes


def combined(w: Any, session_ids: list[str], server: str = "") -> list[dict[str, Any]]:
    """The newest entries of the workspace's sessions (their windows, as the fold has them), newest first, each
    with the session it belongs to and the element that shows it there."""
    streams = []
    for sid in session_ids:
        if server and sid != server:
            continue
        s = w.manager.get(sid)
        if s is None:
            continue
        view = SessionView(s, owner=True)
        anchor = view.timeline.anchor
        # A list, not a generator: merged after the loop, a generator would read the last session's names.
        streams.append([{**e, "session": sid, "server": s.name, "anchor": anchor(str(e.get("key")))}
                        for e in islice(s.timeline.recent(), COMBINED_ROWS) if e.get("kind") != "notice" or server])
    merged = heapq.merge(*streams, key=lambda e: float(e.get("at0") or 0.0), reverse=True)
    return list(islice(merged, COMBINED_ROWS))


def _workspace(w: Any, workspace_id: str) -> Any:
    found = w.manager.workspaces.get(workspace_id)
    if found is None:
        raise HTTPException(404, "No such workspace.")
    return found


@router.get("/workspaces/{workspace_id}")
async def workspace_page(request: Request, workspace_id: str, w: Owner, server: str = "") -> Response:
    ws = _workspace(w, workspace_id)
    panes = _panes(w, ws.sessions)
    rows = combined(w, ws.sessions, server)
    if wants_json(request):
        return respond(request, True, {"id": ws.id, "name": ws.name, "panes": panes,
                                       "combined": [{k: r.get(k) for k in ("session", "server", "key", "method",
                                                                           "name", "status", "at0")} for r in rows]},
                       None)
    others = [row for row in w.manager.listing() if row["id"] not in ws.sessions]
    return w.page("workspace.html", ws=ws, panes=panes, rows=rows, server=server, others=others,
                  me=principal(request), here=f"/workspaces/{ws.id}")


@router.get("/workspaces/{workspace_id}/timeline")
async def workspace_timeline(request: Request, workspace_id: str, w: Owner, server: str = "") -> Response:
    ws = _workspace(w, workspace_id)
    return TargetHTMLResponse(w.render("_workspace_timeline.html", rows=combined(w, ws.sessions, server),
                                       ws=ws, server=server))


@router.post("/workspaces")
async def create_workspace(request: Request, w: Owner) -> Response:
    form = await form_input(request)
    sessions = [sid for sid in form["session"] if w.manager.get(sid) is not None] if "session" in form else []
    ws = w.manager.workspaces.create(form.first("name") or "", sessions)
    if wants_json(request):
        return respond(request, True, {"id": ws.id, "name": ws.name, "sessions": ws.sessions}, None)
    return RedirectResponse(f"/workspaces/{ws.id}", status_code=303)


@router.post("/workspaces/{workspace_id}")
async def change_workspace(request: Request, workspace_id: str, w: Owner) -> Response:
    """Rename it, add a session, or remove one (a session removed stays a session)."""
    ws = _workspace(w, workspace_id)
    form = await form_input(request)
    if form.first("name") is not None:
        ws.name = form.first("name") or ""
    add = form.first("add")
    if add and w.manager.get(add) is not None:
        ws.sessions.append(add)
    remove = form.first("remove")
    if remove:
        ws.sessions = [s for s in ws.sessions if s != remove]
    w.manager.workspaces.save(ws)
    if wants_json(request):
        return respond(request, True, {"id": ws.id, "name": ws.name, "sessions": ws.sessions}, None)
    return RedirectResponse(f"/workspaces/{ws.id}", status_code=303)


@router.post("/workspaces/{workspace_id}/delete")
async def delete_workspace(request: Request, workspace_id: str, w: Owner) -> Response:
    _workspace(w, workspace_id)
    w.manager.workspaces.delete(workspace_id)
    if wants_json(request):
        return respond(request, True, {"deleted": workspace_id}, None)
    return RedirectResponse("/", status_code=303)
