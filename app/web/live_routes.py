"""Live feeds: start and stop subscriptions/listen, and per-session request settings."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response

from app.console.live import LOG_LEVELS
from app.web.deps import Operator, connected, form_input, principal, respond, session_or_404

router = APIRouter()
FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


@router.post("/sessions/{session_id}/subscriptions")
async def start(request: Request, session_id: str, w: Operator) -> Response:
    s = connected(w, session_id)
    form = await form_input(request)
    requested: dict[str, Any] = {flag: True for flag in FLAGS if form.first(flag)}
    uris = [u for u in form.get("resourceSubscriptions", []) if u.strip()]
    uris += [line.strip() for line in (form.first("extra_uris") or "").splitlines() if line.strip()]
    if uris:
        requested["resourceSubscriptions"] = list(dict.fromkeys(uris))
    if not requested:
        raise HTTPException(400, "Choose at least one kind of notification to listen for.")
    sub = s.state.subscriptions[s.listeners.start(requested).id]
    return respond(request, False, sub.snapshot(), w.render("_subscription.html", s=s, sub=sub))


@router.post("/sessions/{session_id}/subscriptions/{sub_id}/stop")
async def stop(request: Request, session_id: str, sub_id: str, w: Operator) -> Response:
    s = session_or_404(w, session_id)
    sub = s.listeners.subs.get(sub_id)
    if sub is None:
        raise HTTPException(404, f"No subscription {sub_id!r}")
    await s.listeners.stop(sub, principal(request).role)
    record = s.state.subscriptions[sub.id]
    return respond(request, False, record.snapshot(), w.render("_subscription.html", s=s, sub=record))


@router.post("/sessions/{session_id}/request-settings")
async def request_settings(request: Request, session_id: str, w: Operator) -> Response:
    s = session_or_404(w, session_id)
    form = await form_input(request)
    level = form.first("log_level") or ""
    if level not in LOG_LEVELS:
        raise HTTPException(400, f"Unknown log level {level!r}")
    idle_s = _seconds(form.first("idle_timeout_s"), s.idle_timeout_s, "Idle deadline")
    max_s = _seconds(form.first("max_s"), s.max_s, "Overall maximum")
    s.set_request_settings(level, form.first("progress") == "on", form.first("auto_refresh") == "on",
                           idle_s, max_s)
    data = s.request_settings()
    return respond(request, False, data, w.render("_request_settings.html", s=s, saved=True, levels=LOG_LEVELS))


def _seconds(raw: str | None, current: float, label: str) -> float:
    """A positive, finite number of seconds from the form; absent keeps the current value."""
    if raw is None or not raw.strip():
        return current
    try:
        value = float(raw)
    except ValueError:
        raise HTTPException(400, f"{label}: {raw!r} is not a number of seconds") from None
    if not 0 < value < 10**7:  # also refuses NaN and infinity
        raise HTTPException(400, f"{label}: give a number of seconds above 0")
    return value
