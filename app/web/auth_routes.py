"""The console's own OAuth redirect URI, and the owner's hand on a session's flow (app/console/oauth.py).

`/oauth/callback` needs no cookie: the authorization server's redirect is a cross-site navigation, which carries
no SameSite=Strict cookie, and the callback's `state` (unguessable, made for one waiting flow, used once) is what
ties it to the session. It shows nothing the query held (a code, or an error text a mix-up could forge): it hands
the parameters to the flow, and the page hops to the session, whose own check then applies.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response

from app.console.oauth import CALLBACK_PATH, waiting_for
from app.web.deps import Owner, session_or_404, web
from app.web.forms import FormInput

router = APIRouter()


@router.get(CALLBACK_PATH)
async def oauth_callback(request: Request) -> Response:
    w = web(request)
    params = dict(request.query_params)
    auth = waiting_for(params.get("state", ""))
    if auth is None or not auth.called_back(params):
        return w.page("error.html", status=400, status_code=400,
                      detail="This authorization callback matches no authorization the console is waiting for: it "
                             "was answered already, stopped, timed out, or it came from elsewhere. Connect again "
                             "from the session to get a new authorization page.")
    return w.page("landing.html", target=f"/sessions/{auth.session_id}", role="", oauth=True)


def _back(request: Request, session_id: str) -> Response:
    """htmx (the panel's forms) swaps nothing, the auth_changed push shows the outcome: no page to render for it.
    A plain form post (no script) goes back to the session."""
    if request.headers.get("HX-Request"):
        return Response(status_code=204)
    return RedirectResponse(f"/sessions/{session_id}", status_code=303)


@router.post("/sessions/{session_id}/auth/settings")
async def auth_settings(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    if s.oauth is None:
        raise HTTPException(409, "This session has had no OAuth flow (its server never asked for authorization)")
    form = FormInput(list((await request.form()).multi_items()))  # type: ignore[arg-type]
    values = {name: (form.first(name) or "") for name in ("client_id", "client_secret", "client_metadata_url",
                                                          "scope", "authorization_endpoint", "token_endpoint",
                                                          "redirect_uri")}
    extra: dict[str, str] = {}
    for line in (form.first("extra_params") or "").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip():
            extra[name.strip()] = value.strip()
    if form.first("forget_secret"):
        s.oauth.forget_secret()
    s.oauth.edit(values, extra, bool(form.first("step_through")))
    if form.first("continue"):  # Save and continue: the paused step goes with what was just saved
        s.oauth.resume(True)
    return _back(request, s.id)


@router.get("/sessions/{session_id}/auth/token")
async def auth_token(session_id: str, w: Owner) -> Response:
    """The access token itself, for the owner only (to replay a request from a shell): never in a page, the log,
    the bus or an export. Plain text, not stored by the browser (the guard's no-store applies)."""
    s = session_or_404(w, session_id)
    grant = s.oauth.machine.grant if s.oauth is not None else None
    if grant is None:
        raise HTTPException(404, "This session holds no access token")
    return PlainTextResponse(grant.access_token + "\n", headers={"Referrer-Policy": "no-referrer"})


@router.post("/sessions/{session_id}/auth/continue")
async def auth_continue(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    if s.oauth is None or not s.oauth.resume(True):
        raise HTTPException(409, "No OAuth step is waiting to continue")
    return _back(request, s.id)


@router.post("/sessions/{session_id}/auth/stop")
async def auth_stop(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    if s.oauth is None or not s.oauth.stop():
        raise HTTPException(409, "No OAuth flow is waiting to be stopped")
    return _back(request, s.id)


@router.post("/sessions/{session_id}/auth/signout")
async def auth_signout(request: Request, session_id: str, w: Owner) -> Response:
    s = session_or_404(w, session_id)
    if s.oauth is None:
        raise HTTPException(409, "This session has had no OAuth flow")
    s.oauth.sign_out()
    return _back(request, s.id)
