"""Shared pieces of the routes: who is calling, which session, HTML or its JSON twin."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment

from app.console.manager import SessionManager
from app.console.session import ConsoleSession
from app.web.security import Guard, token_matches


class Web:
    """What every route needs, built once by create_app."""

    def __init__(self, manager: SessionManager, env: Environment, guard: Guard) -> None:
        self.manager = manager
        self.env = env
        self.guard = guard

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**ctx)

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(self.render(name, **ctx), status_code=status)


def web(request: Request) -> Web:
    value: Web = request.app.state.web
    return value


def require_owner(request: Request) -> Web:
    w = web(request)
    given = w.guard.caller_token({k.lower(): v for k, v in request.headers.items()}, dict(request.cookies))
    if not token_matches(given, w.guard.token):
        raise HTTPException(401, "Open the launch URL printed in the terminal (it carries the owner token).")
    return w


def session_or_404(w: Web, session_id: str) -> ConsoleSession:
    session = w.manager.get(session_id)
    if session is None:
        raise HTTPException(404, f"No session {session_id!r}")
    return session


def connected(w: Web, session_id: str) -> ConsoleSession:
    s = session_or_404(w, session_id)
    if s.client is None or s.status != "connected":
        raise HTTPException(409, f"The session is {s.status}: {s.status_message or 'not connected'}")
    return s


def split_json(name: str) -> tuple[str, bool]:
    """`abc.json` → ("abc", True): every page's JSON twin comes from the same handler."""
    return (name[:-5], True) if name.endswith(".json") else (name, False)


def wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def respond(request: Request, as_json: bool, data: Any, html: str | None) -> Response:
    if as_json or html is None or wants_json(request):
        return JSONResponse(data)
    return HTMLResponse(html)


Owner = Annotated[Web, Depends(require_owner)]
