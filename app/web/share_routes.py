"""Share links (create, land, revoke) and presenter mode."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from app.console.links import ROLES
from app.web.deps import Owner, form_input, principal, respond, session_or_404, web
from app.web.security import LINK_COOKIE, PRESENTER_COOKIE, local_path

router = APIRouter()
MAX_TTL_MIN = 60 * 24 * 30


@router.get("/s/{token}")
async def land(request: Request, token: str) -> Response:
    """Opening a share link: trade its token for a cookie, then go to the session.

    The hop goes through a same-site page (not a redirect) so a SameSite=Strict cookie is sent
    even when the link was clicked in another site (a chat, an email).
    """
    w = web(request)
    link = w.manager.links.find(token)
    if link is None:
        ended = w.manager.links.lookup(token)
        if ended is not None:  # say which: a revoked link and an expired one need different next steps
            state = "revoked" if ended.revoked is not None else "expired"
            return w.page("link_ended.html", status=404, state=state, role=ended.role,
                          detail=f"This {ended.role} link is {state}.")
        return w.page("error.html", status=404, status_code=404,
                      detail="This share link is unknown: check that it was copied whole.")
    port = w.guard.console_port(request.scope)
    if not w.guard.is_public(request.headers.get("host"), port, request.url.scheme):
        # The link cookie is bound to the console's own name, like the owner's: hop there first.
        return RedirectResponse(w.guard.public_url(f"/s/{token}", port), status_code=303)
    target = f"/sessions/{link.session_id}"
    response = w.page("landing.html", target=target, role=link.role)
    response.set_cookie(LINK_COOKIE, token, httponly=True, samesite="strict", path="/",
                        max_age=int(link.expires - link.created) if link.expires else None)
    return response


@router.post("/sessions/{session_id}/links")
async def create_link(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    form = await form_input(request)
    role = form.first("role") or "viewer"
    if role not in ROLES:
        raise HTTPException(400, f"A link's role is viewer or operator, not {role!r}")
    ttl_text = (form.first("ttl_minutes") or "").strip()
    try:
        ttl_min = float(ttl_text) if ttl_text else None
    except ValueError as exc:
        raise HTTPException(400, "Expiry is a number of minutes") from exc
    if ttl_min is not None and not 0 < ttl_min <= MAX_TTL_MIN:
        raise HTTPException(400, f"Expiry must be between 0 and {MAX_TTL_MIN} minutes")
    link, token = w.manager.links.create(s.id, role, ttl_min * 60 if ttl_min else None,
                                         (form.first("label") or "")[:80])
    await w.manager.stored()  # a team's other processes read it from the store when it is opened there first
    # From the configured host and the console's port, never from the request's Host header.
    url = w.guard.public_url(f"/s/{token}", w.guard.console_port(request.scope))
    data = {"id": link.id, "role": link.role, "url": url, "expires": link.expires}
    return respond(request, False, data, w.render("_links.html", s=s, links=w.manager.links.for_session(s.id),
                                                   new_url=url, new_role=link.role))


@router.post("/sessions/{session_id}/links/{link_id}/revoke")
async def revoke_link(request: Request, session_id: str, link_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    link = w.manager.links.get(link_id)
    if link is None or link.session_id != s.id:
        raise HTTPException(404, f"No link {link_id!r} on this session")
    w.manager.links.revoke(link)
    return respond(request, False, {"id": link.id, "revoked": link.revoked},
                   w.render("_links.html", s=s, links=w.manager.links.for_session(s.id)))


@router.post("/presenter")
async def presenter(request: Request) -> Response:
    """Toggle presenter mode for this browser: larger type, secrets hidden, fewer panels."""
    who = principal(request)
    form = await form_input(request)
    back = local_path(form.first("next"))
    response = RedirectResponse(back, status_code=303)  # a plain form post: the page reloads in the new mode
    if who.presenter:
        response.delete_cookie(PRESENTER_COOKIE, path="/")
    else:
        response.set_cookie(PRESENTER_COOKIE, "1", httponly=True, samesite="strict", path="/")
    return response
