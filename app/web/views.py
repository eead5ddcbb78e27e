"""JSON shapes of sessions and entries: the twins of the pages, and what tests assert on."""

from __future__ import annotations

from typing import Any

from app.console.events import TYPED_ANSWER_FIELDS
from app.console.live_records import OperationRecord, ServerRequestRecord
from app.mcp.client import reply_json
from app.web.session_view import SessionView

__all__ = ["operation_json", "reply_json", "session_json"]


def session_json(s: SessionView, entries: list[dict[str, Any]] | None = None,
                 answers: bool = True) -> dict[str, Any]:
    """The page's JSON twin, from the same view of the session as the page (app/web/session_view.py): the owner's
    view has the share links; `answers`: what was typed into answers the console refused, and its words about them
    (for those who may answer: a viewer gets neither)."""
    return {
        "id": s.id, "name": s.name,
        "target": s.target.shown(), "secret": sorted(s.target.secret or ()),  # the masks: what the log holds
        "transport": s.target.kind,
        "status": s.status,
        "status_message": s.status_message,
        "status_since": s.status_since,
        "owned_by": s.owned_by,  # team deployment: another process owns the connection (this is a live copy)
        "owner_gone": s.owner_gone,  # team deployment: the owner process died; the next action here takes over
        "created": s.created,
        "last_activity": s.last_activity,
        "server": {
            "info": s.server_info,
            "supportedVersions": (s.discover or {}).get("supportedVersions"),
            "capabilities": s.server_capabilities,
            "instructions": (s.discover or {}).get("instructions"),
        },
        "era": s.state.era,  # which revision the last connect negotiated, and why
        "doctor": s.state.doctor,  # the connection doctor's last run: {running, report} (app/mcp/doctor)
        "findings": s.state.findings,  # the live lint: rule id → count (the entries carry each finding)
        "client_capabilities": s.capabilities,
        "roots": list(s.roots),
        "request_settings": s.request_settings(),
        "subscriptions": [sub.snapshot() for sub in s.state.subscriptions.values()],
        "operations": [operation_json(op, answers=answers) for op in list(s.state.operations.values())[-50:]],
        "server_requests": [server_request_json(sr, answers) for sr in list(s.state.server_requests.values())[-50:]],
        "links": list(s.state.links.values()),
        "lists": dict(s.lists),
        # Every connect's surface snapshot (listed; /sessions/{id}/surface compares any two) and what changed in the
        # lists since the last one.
        "surface": {"snapshots": list(s.surfaces), "changed_since_connect": _changes(s)},
        "invalid_tools": dict(s.client.invalid_tools) if s.client else {},
        "seq": s.timeline.seq,
        "timeline": entries if entries is not None else s.timeline.recent(),
        "stderr": list(s.timeline.stderr[-100:]),
        "stderr_dropped": s.timeline.stderr_dropped,
        "stderr_current": s.timeline.stderr_current,
    }


def _changes(s: SessionView) -> dict[str, Any] | None:
    found = s.surface_changes()
    return found.to_dict() if found is not None else None


def operation_json(op: OperationRecord, with_final: bool = True, answers: bool = True) -> dict[str, Any]:
    return _for(op.to_json(with_final), answers)


def server_request_json(sr: ServerRequestRecord, answers: bool = True) -> dict[str, Any]:
    return _for(sr.to_json(), answers)


def _for(data: dict[str, Any], answers: bool) -> dict[str, Any]:
    """The record's JSON for a caller who may answer, or without what was typed into a refused answer and the
    console's words about it (which may quote it: "… has more digits than …"), blanked where the record has them."""
    if answers:
        return data
    return {**data, **{key: {} for key in TYPED_ANSWER_FIELDS if key in data}}
