"""The surface page: any two surface snapshots of a session (or of two sessions: two servers) compared.

`/sessions/{id}/surface?a=…&b=…` and its JSON twin `/sessions/{id}/surface.json`. A side is `now` (the
session's lists as they are now), `SEQ` (the snapshot a connect of this session recorded as event SEQ), or
`SESSION:SEQ` / `SESSION:now` of another session (the owner's only: a link holder sees one session). By default
the last connect's snapshot is compared with the one before it, or, after one connect only, with now.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.session import ConsoleSession
from app.console.surfaces import current, snapshot_at
from app.mcp.surface import diff, read_snapshot
from app.web.deps import Viewer, Web, principal, respond, session_or_404

router = APIRouter()


@dataclass(frozen=True, slots=True)
class Choice:
    value: str  # what the form sends
    label: str


def _choices(w: Web, s: ConsoleSession, owner: bool) -> list[Choice]:
    """Every snapshot the asker may compare: this session's (newest first) and, for the owner, the others'."""
    sessions = [s, *(other for other in w.manager.sessions.values() if other.id != s.id)] if owner else [s]
    out: list[Choice] = []
    for each in sessions:
        mine = each.id == s.id
        prefix, name = ("" if mine else f"{each.id}:"), ("" if mine else f"{each.name} · ")
        if each.state.surface is not None:
            out.append(Choice(f"{prefix}now", f"{name}now (the lists as last refreshed)"))
        for snap in reversed(each.state.surfaces):
            counts = snap.get("counts") or {}
            out.append(Choice(f"{prefix}{snap['seq']}",
                              f"{name}connect {snap.get('connect')} · #{snap['seq']} · "
                              f"{counts.get('tools', 0)} tools, {counts.get('prompts', 0)} prompts"))
    return out


def _defaults(s: ConsoleSession) -> tuple[str, str]:
    seqs = [str(snap["seq"]) for snap in s.state.surfaces]
    if len(seqs) >= 2:
        return seqs[-2], seqs[-1]
    return (seqs[-1], "now") if seqs else ("now", "now")


async def _side(w: Web, s: ConsoleSession, value: str, request: Request) -> dict[str, Any]:
    """The snapshot a side names, whole; 404 when it names none, 403 for a session the asker may not see."""
    session_id, sep, which = value.rpartition(":")
    target = s
    if sep and session_id and session_id != s.id:
        if not principal(request).may_view(session_id):
            raise HTTPException(403, "Another session's snapshots are the owner's to compare")
        target = session_or_404(w, session_id)
    if which == "now":
        found = current(target.state)
    elif which.isdigit():
        found = await asyncio.to_thread(snapshot_at, target.timeline.stored(), target.id, int(which))
    else:
        raise HTTPException(400, f"A side is now, a snapshot's seq, or SESSION:seq; not {value!r}")
    if found is None:
        raise HTTPException(404, f"No surface snapshot {value!r} (the session has not connected, or no such seq)")
    return read_snapshot(found, checked=False)


@router.get("/sessions/{session_id}/surface")
@router.get("/sessions/{session_id}/surface.json")
async def surface_page(request: Request, session_id: str, w: Viewer, a: str = "", b: str = "") -> Response:
    s = session_or_404(w, session_id)
    me = principal(request)
    as_json = request.url.path.endswith(".json")
    default_a, default_b = _defaults(s)
    a, b = a or default_a, b or default_b
    data: dict[str, Any] = {"a": a, "b": b, "snapshots": list(s.state.surfaces)}
    problem = None
    if s.state.surface is None:
        problem = "This session has not connected yet: no surface was recorded."
        data.update(breaking=False, counts={}, changes=[], not_listed=0)
    else:
        old, new = await _side(w, s, a, request), await _side(w, s, b, request)
        found = diff(old, new)
        data.update(found.to_dict())
        data["sources"] = {"a": {k: old.get(k) for k in ("source", "taken", "server", "protocol_version")},
                           "b": {k: new.get(k) for k in ("source", "taken", "server", "protocol_version")}}
    if as_json:
        return respond(request, True, data, None)
    html = w.render("surface.html", s=s, me=me, reveal=me.sees_secrets, here=f"/sessions/{s.id}/surface",
                    choices=_choices(w, s, me.is_owner), data=data, problem=problem)
    return respond(request, False, data, html)
