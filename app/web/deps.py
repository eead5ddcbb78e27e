"""Shared pieces of the routes: who is calling, which session, HTML or its JSON twin."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import unquote_plus

import orjson
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment
from python_multipart.multipart import parse_options_header

from app.console.links import Role
from app.console.manager import SessionManager
from app.console.session import ConsoleSession
from app.mcp.jsonrpc import MAX_SHOWN_DEPTH, clipped
from app.web.forms import FormInput
from app.web.security import LINK_COOKIE, PRESENTER_COOKIE, Guard, token_matches
from app.web.session_view import SessionView


class Web:
    """What every route needs, built once by create_app."""

    def __init__(self, manager: SessionManager, env: Environment, guard: Guard) -> None:
        self.manager = manager
        self.env = env
        self.guard = guard

    def render(self, name: str, **ctx: Any) -> str:
        """A template rendered with `s` as a view of the session (app/web/session_view.py): the owner's when the
        caller says `reveal`, else anyone's."""
        session = ctx.get("s")
        if session is not None and not isinstance(session, SessionView):
            ctx["s"] = SessionView(session, owner=bool(ctx.get("reveal")))
        return self.env.get_template(name).render(**ctx)

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return TargetHTMLResponse(self.render(name, **ctx), status_code=status)


def web(request: Request) -> Web:
    value: Web = request.app.state.web
    return value


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: the owner (every session), or a share link's holder (one session, one role)."""

    role: Role
    session_id: str | None = None
    link_id: str | None = None
    presenter: bool = False

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"

    @property
    def sees_secrets(self) -> bool:
        return self.is_owner and not self.presenter

    def may_view(self, session_id: str) -> bool:
        return self.is_owner or self.session_id == session_id

    def may_operate(self, session_id: str) -> bool:
        return self.is_owner or (self.role == "operator" and self.session_id == session_id)


def identify(w: Web, headers: dict[str, str], cookies: dict[str, str]) -> Principal | None:
    presenter = cookies.get(PRESENTER_COOKIE) == "1"
    if token_matches(w.guard.caller_token(headers, cookies), w.guard.token):
        return Principal("owner", presenter=presenter)
    link = w.manager.links.find(cookies.get(LINK_COOKIE))
    if link is not None:
        return Principal(link.role, link.session_id, link.id, presenter=presenter)
    return None


class LinkEnded(HTTPException):
    """A share-link cookie whose link was revoked or has expired: said plainly, with no actions offered."""

    def __init__(self, state: str, role: str) -> None:
        self.state, self.role = state, role
        done = "was revoked" if state == "revoked" else "has expired"
        super().__init__(401, f"This {role} link {done}: it no longer opens the session. "
                              "Ask the session's owner for a new link.")


def link_end_state(w: Web, cookies: dict[str, str]) -> LinkEnded | None:
    link = w.manager.links.lookup(cookies.get(LINK_COOKIE))
    if link is None or link.active():
        return None
    return LinkEnded("revoked" if link.revoked is not None else "expired", link.role)


def principal(request: Request) -> Principal:
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    found = identify(web(request), {k.lower(): v for k, v in request.headers.items()}, dict(request.cookies))
    if found is None:
        ended = link_end_state(web(request), dict(request.cookies))
        if ended is not None:
            raise ended
        raise HTTPException(401, "Open the launch URL printed in the terminal (it carries the owner token), "
                                 "or a share link you were sent.")
    request.state.principal = found
    return found


def _session_param(request: Request) -> str:
    sid = request.path_params.get("session_id")
    if sid is None:
        sid = split_json(str(request.path_params.get("name", "")))[0]
    return str(sid)


def require_viewer(request: Request) -> Web:
    if not principal(request).may_view(_session_param(request)):
        raise HTTPException(403, "This link does not give access to that session.")
    return web(request)


def require_operator(request: Request) -> Web:
    who = principal(request)
    sid = _session_param(request)
    if not who.may_operate(sid):
        raise HTTPException(403, "A viewer link is read-only: it cannot send anything to the server."
                            if who.may_view(sid) else "This link does not give access to that session.")
    return web(request)


def require_owner(request: Request) -> Web:
    if not principal(request).is_owner:
        raise HTTPException(403, "Only the owner can do this (start processes, change the target, share).")
    w = web(request)
    return w


def session_or_404(w: Web, session_id: str) -> ConsoleSession:
    session = w.manager.get(session_id)
    if session is None:
        raise HTTPException(404, f"No session {session_id!r}")
    return session


def connected(w: Web, session_id: str) -> ConsoleSession:
    s = session_or_404(w, session_id)
    # "unreachable" still sends: the next request that gets through is how the session recovers.
    if s.client is None or s.status not in ("connected", "unreachable"):
        raise HTTPException(409, f"The session is {s.status}: {s.status_message or 'not connected'}")
    return s


# Starlette's limits for a form (`Request.form()` defaults), kept by the fast path below.
FORM_MAX_FIELDS = 1000
FORM_MAX_FIELD_BYTES = 1024 * 1024


async def form_input(request: Request) -> FormInput:
    """The submitted form as name → values (checkbox groups repeat names); files are left out.

    A urlencoded body (what every tab and script sends) is split here, as Starlette's parser splits it
    (fields on "&", empty ones skipped, name and value decoded as latin-1 then `unquote_plus`, the same limits
    and 400 answers): its callback parser cost a call 4% of its time for two or three fields. Anything else
    (multipart with files) still goes through `request.form()`.
    """
    ctype = parse_options_header(request.headers.get("content-type"))[0]
    if ctype != b"application/x-www-form-urlencoded":
        return FormInput([(k, v) for k, v in (await request.form()).multi_items() if isinstance(v, str)])
    return FormInput(split_urlencoded(await request.body()))


def split_urlencoded(body: bytes) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for part in body.split(b"&"):
        if not part:
            continue
        name, _, value = part.partition(b"=")
        if len(name) + len(value) > FORM_MAX_FIELD_BYTES:
            raise HTTPException(400, f"Field exceeded maximum size of {FORM_MAX_FIELD_BYTES // 1024}KB.")
        if len(items) == FORM_MAX_FIELDS:
            raise HTTPException(400, f"Too many fields. Maximum number of fields is {FORM_MAX_FIELDS}.")
        # What unquote_plus gives; when nothing is %-escaped, without its two calls per name and value.
        key, text = name.decode("latin-1"), value.decode("latin-1")
        items.append((key.replace("+", " ") if "%" not in key else unquote_plus(key),
                      text.replace("+", " ") if "%" not in text else unquote_plus(text)))
    return items


def split_json(name: str) -> tuple[str, bool]:
    """`abc.json` → ("abc", True): every page's JSON twin comes from the same handler."""
    return (name[:-5], True) if name.endswith(".json") else (name, False)


def wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


class TargetJSONResponse(JSONResponse):
    """JSON that may carry a target's values, answered as JSON whatever the target sent (never a 500).

    - A lone surrogate (a JSON escape such as \\ud800: valid JSON text, no UTF-8 form once decoded) goes back as
      the same escape.
    - NaN and Infinity (bare words a target may send: not JSON, but the frame decoder takes them) become null, as
      a browser's JSON.stringify writes them; the frame itself is recorded as it came.
    Anything else keeps the plain UTF-8 rendering; the slower one runs only when that fails.

    The plain rendering is orjson's: the same compact UTF-8 JSON as JSONResponse's `json.dumps` (key order
    kept, no escapes past what JSON needs), written in C. Encoding the answer with the stdlib was a tenth of a
    call's CPU on the request path under bench.latency. orjson refuses what it cannot write exactly (a lone
    surrogate, an integer past 64 bits, a key that is not a string, nesting past 254); those go to the stdlib as
    before. NaN and Infinity it writes as null itself; a small float's exponent it spells `1e-7` (the stdlib
    `1e-07`): the same number.
    """

    def render(self, content: Any) -> bytes:
        try:
            return self._render(content)
        except RecursionError:
            # A target's value nested nearly as deep as the frame decoder takes, inside the answer's own nesting
            # (session, operation, round, result), is past what the stdlib encoder recurses to: every JSON twin
            # holding it answered 500, for good. Deep parts are cut short here; the wire record has them whole.
            return self._render(clipped(content, MAX_SHOWN_DEPTH))

    def _render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
        try:  # what JSONResponse.render makes, with its encoder made once (it built one for every answer)
            return _ANSWER_ENCODER.encode(content).encode("utf-8")
        except ValueError:  # UnicodeEncodeError is one; so is "Out of range float values"
            return json.dumps(_finite(content), ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")


# Exactly the arguments JSONResponse.render passes to json.dumps.


_ANSWER_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))


def _finite(value: Any) -> Any:
    """`value` with NaN and ±Infinity replaced by None, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


class TargetHTMLResponse(HTMLResponse):
    """HTML that may carry a target's strings: a lone surrogate is written as a character reference (a browser
    shows U+FFFD) instead of failing the answer with a 500."""

    def render(self, content: Any) -> bytes | memoryview:
        if isinstance(content, str):
            return content.encode("utf-8", "xmlcharrefreplace")
        return super().render(content)


def respond(request: Request, as_json: bool, data: Any, html: str | None) -> Response:
    if as_json or html is None or wants_json(request):
        return TargetJSONResponse(data)
    return TargetHTMLResponse(html)


# The dependencies are `async def` on purpose: FastAPI runs a plain `def` dependency in a worker thread, which
# cost every request a thread-pool hop (queue, wake-up, GIL hand-over) for a check that takes microseconds.
async def _owner(request: Request) -> Web:
    return require_owner(request)


async def _viewer(request: Request) -> Web:
    return require_viewer(request)


async def _operator(request: Request) -> Web:
    return require_operator(request)


Owner = Annotated[Web, Depends(_owner)]
Viewer = Annotated[Web, Depends(_viewer)]
Operator = Annotated[Web, Depends(_operator)]


ActionEndpoint = Callable[[Request, str, Web], Awaitable[Response]]


def operator_post(router: APIRouter, path: str) -> Callable[[ActionEndpoint], ActionEndpoint]:
    """Register a POST that sends to the target as a plain Starlette route, with the operator check made here.

    These are the console's hot path (every call from a tab or a script). FastAPI's route machinery resolved
    the dependency tree and ran an exit stack per request for what is one check and one path parameter;
    a plain route skips that. The check and its answers (401, 403) are the same `require_operator`.
    """

    def register(endpoint: ActionEndpoint) -> ActionEndpoint:
        async def run(request: Request) -> Response:
            w = require_operator(request)
            return await endpoint(request, str(request.path_params["session_id"]), w)

        router.add_route(path, run, methods=["POST"], name=endpoint.__name__)
        return endpoint

    return register
