"""JSON shapes of sessions and entries: the twins of the pages, and what tests assert on."""

from __future__ import annotations

from typing import Any

from app.console.operations import Operation
from app.console.session import ConsoleSession
from app.mcp.client import Reply


def session_json(s: ConsoleSession, entries: list[dict[str, Any]] | None = None,
                 reveal: bool = True) -> dict[str, Any]:
    return {
        "id": s.id,
        "target": s.target.describe() if reveal else s.target.shown(),
        "transport": s.target.kind,
        "status": s.status,
        "status_message": s.status_message,
        "status_since": s.status_since,
        "created": s.created,
        "last_activity": s.last_activity,
        "server": {
            "info": s.server_info,
            "supportedVersions": (s.discover or {}).get("supportedVersions"),
            "capabilities": s.server_capabilities,
            "instructions": (s.discover or {}).get("instructions"),
        },
        "client_capabilities": s.capabilities,
        "roots": s.roots,
        "request_settings": s.request_settings(),
        "subscriptions": [sub.snapshot() for sub in s.listeners.subs.values()],
        "operations": [operation_json(op) for op in list(s.operations.ops.values())[-50:]],
        "lists": s.lists,
        "invalid_tools": s.client.invalid_tools if s.client else {},
        "seq": s.timeline.seq,
        "timeline": entries if entries is not None else s.timeline.recent(),
        "stderr": s.timeline.stderr[-100:],
        "stderr_dropped": s.timeline.stderr_dropped,
    }


def reply_json(reply: Reply) -> dict[str, Any]:
    return {
        "key": reply.key,
        "id": reply.id,
        "method": reply.method,
        "params": reply.params,
        "ok": reply.ok,
        "result": reply.result,
        "result_type": reply.result_type,
        "error": _error_json(reply),
        "duration_ms": reply.duration_ms,
        "warnings": reply.warnings,
        "notification_count": reply.notification_count,
        "notifications": [f.message for f in reply.notifications],  # the last ones; the wire has all
    }


def _error_json(reply: Reply) -> dict[str, Any] | None:
    err = reply.error
    if err is None:
        return None
    data: dict[str, Any] = {"type": type(err).__name__, "message": str(err)}
    for attr in ("code", "data", "http_status", "name"):
        if hasattr(err, attr):
            data[attr] = getattr(err, attr)
    return data


def operation_json(op: Operation) -> dict[str, Any]:
    data = op.snapshot()
    data["pending_requests"] = op.pending
    data["errors"] = op.errors
    data["final"] = reply_json(op.final) if op.final is not None else None
    return data
