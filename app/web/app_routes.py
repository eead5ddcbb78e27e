"""MCP Apps in the browser: the sandbox proxy's page (on another origin) and the bridge relay of a tab's view.

The console's page never holds a view. It frames the sandbox proxy from another origin: the console's own host
name swapped between 127.0.0.1 and localhost (a browser sends neither's cookies to the other, and the console
drops the Cookie header under any host but its public one), or the `sandbox_origin` setting behind a proxy. The
proxy frames the view with an opaque origin (`sandbox` without allow-same-origin) under the CSP built from its
resource. Every message between the view and the console passes through the tab's relay to
`/sessions/{id}/apps/{app}/bridge`, where app/console/apps.py records it and answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from app.console.apps import take_ticket
from app.console.session import ConsoleSession
from app.web.deps import Operator, TargetHTMLResponse, Viewer, principal, session_or_404
from app.web.security import LOCAL_HOSTS, Guard, hostname

router = APIRouter()
SANDBOX = Path(__file__).resolve().parent.parent.parent / "static" / "sandbox"
SANDBOX_PATH = "/sandbox/proxy"
_SWAP = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}


def sandbox_host(settings: Any) -> str | None:
    """The host name the sandbox proxy is served under: the `sandbox_origin` setting's; else, for a public host
    of the loopback, a name that is not it (a browser keeps each name's cookies to itself, and the console drops
    the Cookie header under any host but its public one); else none."""
    if settings.sandbox_origin:
        return urlsplit(str(settings.sandbox_origin)).hostname or None
    public = str(settings.public_host).lower()
    if public in _SWAP:
        return _SWAP[public]
    if public.endswith(".localhost"):
        return public.removesuffix(".localhost") + "-sandbox.localhost"
    return None


def sandbox_origin(request: Request) -> str | None:
    """The origin a page served to this request frames the sandbox proxy from (None: apps cannot be shown)."""
    w = request.app.state.web
    configured = w.manager.settings.sandbox_origin
    if configured:
        return str(configured).rstrip("/")
    host = w.guard.sandbox_host
    if host is None:
        return None
    return f"{request.url.scheme}://{host}:{w.guard.console_port(request.scope)}"


def frame_ancestors(guard: Guard, port: int) -> str:
    """Who may frame the proxy: the console's pages only (its public host and the loopback names, its port)."""
    names = sorted({*(h for h in LOCAL_HOSTS if not h.startswith("[") and h != "::1"), guard.public_host}
                   - {guard.sandbox_host})
    return " ".join(f"http://{n}:{port} https://{n}:{port}" for n in names)


def _on_sandbox_host(request: Request) -> Any:
    w = request.app.state.web
    if w.guard.sandbox_host is None or hostname(request.headers.get("host", "")) != w.guard.sandbox_host:
        # Never the console's own origin: the proxy runs with allow-same-origin, and there it would be the console.
        raise HTTPException(404, "The sandbox is served only under its own host name, never the console's.")
    return w


def _sandbox_page(request: Request, name: str, media: str) -> Response:
    w = _on_sandbox_host(request)
    port = w.guard.console_port(request.scope)
    here = f"{request.url.scheme}://{request.headers.get('host', '')}"
    body = (SANDBOX / name).read_bytes()
    # The proxy may frame only the views the console serves here: a view that navigates itself elsewhere (to a page
    # with no policy) is refused by this frame-src, which its own document cannot change.
    return Response(body, media_type=media, headers={
        "content-security-policy": f"frame-ancestors {frame_ancestors(w.guard, port)}; "
                                   f"frame-src {here}/sandbox/view/; form-action 'none'",
        "cache-control": "no-store", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"})


# Told to the console, by the proxy, when the view's policy refuses something (inline: its policy allows that).
_REPORTER = ("<script>document.addEventListener('securitypolicyviolation',function(e){parent.postMessage({"
             "mcpConsoleCsp:{blockedURI:e.blockedURI,violatedDirective:e.violatedDirective,effectiveDirective:"
             "e.effectiveDirective,sourceFile:e.sourceFile,lineNumber:e.lineNumber}},'*')});</script>")
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)


@router.get("/sandbox/view/{ticket}")
async def sandbox_view(request: Request, ticket: str) -> Response:
    """A view, once, at the address its resource-ready gave the proxy: with its Content-Security-Policy as an HTTP
    header (whatever its HTML holds, the policy holds), `form-action 'none'`, framed only by the sandbox itself. The
    frame that loads it has an opaque origin (sandbox without allow-same-origin)."""
    w = _on_sandbox_host(request)
    found = take_ticket(ticket)
    s = w.manager.get(found[0]) if found is not None else None
    view = s.apps.view_document(found[1], found[2]) if s is not None and found is not None else None
    if view is None or view.html is None:
        raise HTTPException(404, "This view address was used already, has expired, or names no view.")
    head = _HEAD.search(view.html)
    # The reporter only reports: a view that hides it from the parser loses its reports, never its policy.
    html = view.html[:head.end()] + _REPORTER + view.html[head.end():] if head else _REPORTER + view.html
    here = f"{request.url.scheme}://{request.headers.get('host', '')}"
    # Every ancestor is checked: the proxy (here) and the console's page above it.
    ancestors = f"{here} {frame_ancestors(w.guard, w.guard.console_port(request.scope))}"
    return Response(html, media_type="text/html; charset=utf-8", headers={
        "content-security-policy": f"{view.csp.policy}; form-action 'none'; frame-ancestors {ancestors}",
        "cache-control": "no-store", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"})


@router.get(SANDBOX_PATH)
async def sandbox_proxy(request: Request) -> Response:
    return _sandbox_page(request, "proxy.html", "text/html; charset=utf-8")


@router.get("/sandbox/proxy.js")
async def sandbox_script(request: Request) -> Response:
    return _sandbox_page(request, "proxy.js", "text/javascript; charset=utf-8")


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    # Bounded before this reads it: the console's request body limit (app/web/limits.py) applies here too.
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise HTTPException(400, f"The relay sent no JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("frame"), str) or not 0 < len(data["frame"]) <= 40:
        raise HTTPException(400, "The relay must name its frame.")
    return data


@router.post("/sessions/{session_id}/apps/{app}/bridge")
async def bridge(request: Request, session_id: str, app: str, w: Viewer) -> Response:
    """One step of a tab's relay: the proxy is ready, the view sent a message, the frame reported a CSP violation,
    the person changed the host context, or the tab collects what waits for the view. A tab that may not send
    (a viewer link, an imported session) replays: nothing is recorded and the view cannot reach the server."""
    s: ConsoleSession = session_or_404(w, session_id)
    data = await _body(request)
    who = principal(request)
    replay = s.read_only or not who.may_operate(session_id)
    frame = s.apps.frame(app, data["frame"], replay, "owner" if who.is_owner else f"link:{who.link_id}",
                         who.sees_secrets)
    if frame is None:
        raise HTTPException(404, "No such app in this session, or that frame is another's.")
    step = data.get("step")
    if step == "ready":
        answer = await s.apps.sandbox_ready(app, frame, data.get("context"))
    elif step == "message":
        answer = s.apps.from_view(app, frame, data.get("message"))
    elif step == "csp":
        answer = s.apps.csp_violation(app, frame, data.get("report"))
    elif step == "context" and isinstance(data.get("change"), dict):
        answer = s.apps.context(app, frame, data["change"])
    elif step == "close":
        answer = s.apps.close(app, frame)
    elif step == "collect":
        answer = {"post": await s.apps.collect(frame)}
    else:
        raise HTTPException(400, "Unknown relay step.")
    return JSONResponse(answer, headers={"cache-control": "no-store"})


@router.get("/sessions/{session_id}/apps/{app}/body")
async def app_body(request: Request, session_id: str, app: str, w: Viewer) -> Response:
    """A closed app's body, fetched when it is first opened."""
    s = session_or_404(w, session_id)
    shown = s.state.apps.get(app)
    if shown is None:
        raise HTTPException(404, "No such app in this session.")
    return TargetHTMLResponse(w.render("_app_body.html", s=s, app=shown, me=principal(request)))


@router.post("/sessions/{session_id}/apps/{app}/links/{link}")
async def link(request: Request, session_id: str, app: str, link: str, w: Operator) -> Response:
    """The person's answer to a view's ui/open-link: opened (the browser opens it from the same click) or not."""
    s = session_or_404(w, session_id)
    form = await request.form()
    opened = form.get("opened") == "1"
    if not s.apps.link_answer(app, link, opened):
        raise HTTPException(409, "That link was answered already, or its view is gone.")
    return Response(status_code=204)

