"""Every state-changing action on a session runs in the process that owns the session's connection.

One ASGI middleware, after the Host/Origin guard and before any route: a POST under `/sessions/{id}/…` is
handled here when this process owns the session (or the console is a single process: then nothing below
runs beyond one attribute check), taken over when its owner is dead, and otherwise forwarded to the owner's
URL, whose answer (status, headers, body) goes back unchanged.

Who is asking travels with the request. The forwarding process has already identified the caller; it names the
principal in `X-MCP-Console-Principal` (`owner` or `link:<id>`, `;presenter` when presenting) and signs the
request with the team key (`app/web/peer.py`): never the owner token, which a process once sent to whatever
address a forged registration in Redis named. The owner believes the principal only when the signature holds,
re-checks a link (active, same session) in its own registry, and the route dependencies then apply the link's
role as for any request. A viewer's action is refused where it arrives, before anything is forwarded. Actions go
only to a process whose registration is signed with the team key (`app/console/cluster_redis.py`). A forwarded
request is always handled where it arrives, or refused; it is never forwarded again, so no loop can form.
"""

from __future__ import annotations

import logging
import re

import httpx
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.console.cluster import FAILURES as DIRECTORY_FAILURES
from app.console.links import hash_token
from app.console.manager import SessionManager
from app.console.ownership import ProcessInfo
from app.web.deps import Principal, Web, identify
from app.web.peer import (
    ANSWER_HEADER,
    PEER_HEADER,
    PRINCIPAL_HEADER,
    PeerCheck,
    answer_proven,
    answer_signature,
    nonce_of,
    passed_on,
    peer_headers,
)
from app.web.security import LINK_COOKIE, SAFE_METHODS, Guard

_SESSION_ACTION = re.compile(r"\A/sessions/([^/]+)/.")
# Any path that names a session: its page, its JSON twin, its websocket and everything under it.
_SESSION_PATH = re.compile(r"\A/sessions/([A-Za-z0-9_-]+)(?:\.json\Z|/|\Z)")
_LANDING = re.compile(r"\A/s/([^/]+)\Z")  # a share link's landing page
NOT_SESSIONS = frozenset({"import"})  # routes under /sessions/ whose name is no session's
# What a forwarded request carries besides the body; cookies stay here (the principal header says who).
_REQUEST_HEADERS = frozenset({"content-type", "accept", "accept-language", "user-agent"})
log = logging.getLogger("mcp_console.routing")


def principal_header(who: Principal) -> str:
    name = "owner" if who.is_owner else f"link:{who.link_id}"
    return f"{name};presenter" if who.presenter else name


class RouteToOwner:
    def __init__(self, app: ASGIApp, web: Web) -> None:
        self.app = app
        self.web = web
        self.manager: SessionManager = web.manager
        self.guard: Guard = web.guard
        self.peers = PeerCheck(self.manager.team_key, self.manager.cluster.process_id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        forwarded = PEER_HEADER in headers or PRINCIPAL_HEADER in headers
        ownership = self.manager.ownership
        if ownership is None and not forwarded:
            await self.app(scope, receive, send)
            return
        match = _SESSION_ACTION.match(scope["path"])
        session_id = match.group(1) if match is not None else None
        who: Principal | None = None
        if forwarded:  # before anything else: the header is proven here, or the request goes no further
            if scope["type"] != "http":
                await _refuse_socket(receive, send)
                return
            body = await _body(receive)
            who, problem, nonce = self._forwarded_principal(scope, session_id, headers, body)
            if who is None:
                await _answer(send, 403, f"A forwarded request must be signed by a console process of this team "
                                         f"and name an active principal: {problem}.")
                return
            scope, receive = {**scope, "state": {**scope.get("state", {}), "principal": who}}, _replay(body, receive)
            send = self._signing(send, nonce)
        if ownership is None:  # a single process given a team secret: it owns every session
            await self.app(scope, receive, send)
            return
        await self._links_known(scope["path"], headers)
        await self._loaded(scope["path"], headers, forwarded)
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if session_id is None or scope["method"] in SAFE_METHODS or ownership.owned_by_me(session_id):
            await self.app(scope, receive, send)
            return
        if not forwarded:
            found = identify(self.web, headers, cookie_parser(headers.get("cookie", "")))
            if found is None or not found.may_operate(session_id):
                # No caller (the route answers 401, or says the link ended), or one who may not act on this session
                # (a viewer link, another session's link): refused here by the route's own check, never forwarded.
                await self.app(scope, receive, send)
                return
            who = found
            scope = {**scope, "state": {**scope.get("state", {}), "principal": who}}
        try:
            owner = await self._owner(session_id)
        except DIRECTORY_FAILURES as exc:  # Redis away: who owns it is unknown, so neither forward nor take over
            await _answer(send, 503, f"The console processes' directory is not reachable ({type(exc).__name__}); "
                                     "try again in a moment.")
            return
        except OwnerUnknown as exc:
            await _answer(send, 503, str(exc))
            return
        if owner is None or owner.process_id == ownership.process_id:
            await self.app(scope, receive, send)
        elif forwarded or who is None:  # never forwarded twice: the sender's idea of the owner was out of date
            await _answer(send, 409, "This console process does not own the session any more; try again.")
        else:
            await self._forward(owner, who, scope, receive, send)

    async def _links_known(self, path: str, headers: dict[str, str]) -> None:
        """The share link a request carries (its landing path `/s/<token>`, or its cookie), read from the store when
        this process has not heard of it yet: made on another process a moment ago, it opens here too."""
        tokens = [cookie_parser(headers.get("cookie", "")).get(LINK_COOKIE)]
        if (landing := _LANDING.match(path)) is not None:
            tokens.append(landing.group(1))
        for token in tokens:
            if token and self.manager.links.lookup(token) is None:
                await self.manager.replicas.link_off_loop(hash_token(token))

    async def _loaded(self, path: str, headers: dict[str, str], forwarded: bool) -> None:
        """A session this process has not heard of yet is read from the store on its first request here: one that
        another process created a moment ago (the page the create redirects to, a link opened at once, a
        round-robin proxy) was a 404 until the first of its events reached this process over the hub. Only for a
        caller who could see it (the owner token, an active link to that session, a request forwarded with the
        team's token): no one else makes a process read its store. A store that fails leaves the route to answer
        as before (404)."""
        match = _SESSION_PATH.match(path)
        if match is None or (session_id := match.group(1)) in self.manager.sessions or session_id in NOT_SESSIONS:
            return
        if not forwarded:  # a forwarded request was proven with the team key already
            who = identify(self.web, headers, cookie_parser(headers.get("cookie", "")))
            if who is None or not who.may_view(session_id):  # a link opens its own session only
                return
        try:
            await self.manager.replicas.load_off_loop(session_id)
        except Exception:  # the route's own answer (404) says the session is not here
            return

    def _forwarded_principal(self, scope: Scope, session_id: str | None, headers: dict[str, str],
                             body: bytes) -> tuple[Principal | None, str, str]:
        """Who a forwarded request acts for, why it is refused, and its nonce (its answer is signed with it)."""
        verdict = self.peers.verify(scope["method"], scope["path"], scope.get("query_string", b"").decode("latin-1"),
                                    headers, body)
        if verdict.principal is None:
            return None, verdict.problem, ""
        name, _, flag = verdict.principal.partition(";")
        presenter = flag == "presenter"
        if name == "owner":
            return Principal("owner", presenter=presenter), "", verdict.nonce
        link = self.manager.links.get(name.removeprefix("link:")) if name.startswith("link:") else None
        if link is None or not link.active() or (session_id is not None and link.session_id != session_id):
            return None, "the link was revoked or has expired", ""  # since the forwarding process identified it
        return Principal(link.role, link.session_id, link.id, presenter=presenter), "", verdict.nonce

    def _signing(self, send: Send, nonce: str) -> Send:
        """The answer to a forwarded request, held whole and sent with its signature (see app/web/peer.py)."""
        key = self.manager.team_key
        assert key is not None  # the request was proven with it
        start: Message | None = None
        chunks: list[bytes] = []

        async def signed(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start.get("headers", [])]
            signature = answer_signature(key, nonce, int(start["status"]), raw, body)
            await send({**start, "headers": [*start.get("headers", []),
                                             (ANSWER_HEADER.encode(), signature.encode("ascii"))]})
            await send({"type": "http.response.body", "body": body})

        return signed

    async def _owner(self, session_id: str) -> ProcessInfo | None:
        """The live owner, after claiming (and taking over) a session whose owner is dead; None: not a session."""
        ownership = self.manager.ownership
        assert ownership is not None
        replicas = self.manager.replicas
        if self.manager.get(session_id) is None and await replicas.load_off_loop(session_id) is None:
            return None  # no such session: the route says 404
        for _ in range(3):  # a claim lost to another process means that process owns it now: ask again
            owner = await ownership.owner_of(session_id)
            if owner is not None:
                if owner.process_id != ownership.process_id:
                    replicas.note_owner(session_id, owner)  # the page names it
                return owner
            if await ownership.claim(session_id):
                if replicas.is_replica(session_id):
                    await replicas.take_over(session_id)
                return ProcessInfo(ownership.process_id, ownership.url)
        # Neither a live owner nor a claim: the directory names an owner no process of this team can be (its
        # registration is not signed with the team key, so it is never forwarded to) and keeps it there.
        raise OwnerUnknown("No console process of this team could be found to own this session (the process "
                           "directory holds a registration that is not this team's); try again in a moment.")

    async def _seized(self, session_id: str, dead: ProcessInfo) -> bool:
        """Take the session from an owner whose address refused a connection; whether this process holds it now
        (rebuilt from the store and, for an HTTP target, connected again). Another process that seized it first
        wins: the action is then answered 503 and its retry goes to the new owner."""
        ownership = self.manager.ownership
        assert ownership is not None
        try:
            if not await ownership.seize(session_id, dead.process_id):
                return False
        except DIRECTORY_FAILURES:
            return False
        replicas = self.manager.replicas
        if replicas.is_replica(session_id):
            await replicas.take_over(session_id)
        return True

    async def _forward(self, owner: ProcessInfo, who: Principal, scope: Scope, receive: Receive,
                       send: Send) -> None:
        body = await _body(receive)
        out = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])
               if k.decode("latin-1").lower() in _REQUEST_HEADERS or k.lower().startswith(b"hx-")]
        query = scope.get("query_string", b"").decode("latin-1")
        key = self.manager.team_key
        assert key is not None  # a team's manager refuses to start without it
        signed = peer_headers(key, self.manager.cluster.process_id, owner.process_id, scope["method"], scope["path"],
                              query, principal_header(who), body)
        out += [*signed, ("accept-encoding", "identity")]
        url = owner.url.rstrip("/") + scope["path"] + (f"?{query}" if query else "")
        try:
            response = await self.manager.http.request(scope["method"], url, content=body, headers=out)
        except httpx.ConnectError as exc:
            # Nothing listens at the owner's signed address: it is dead, whatever its lease says. Waiting out the
            # lease answered every action 503 for seconds; the session is taken over here, on this action.
            if await self._seized(scope["path"].split("/")[2], owner):
                await self.app(scope, _replay(body, receive), send)
                return
            await _answer(send, 503, f"The console process that owned this session ({owner.process_id}) did not "
                                     f"answer ({type(exc).__name__}); try again in a moment.")
            return
        except httpx.HTTPError as exc:
            await _answer(send, 503, f"The console process that owns this session ({owner.process_id}) did not "
                                     f"answer ({type(exc).__name__}); try again in a moment.")
            return
        answered = list(response.headers.multi_items())
        if not answer_proven(key, nonce_of(signed), response.status_code, answered, response.content):
            log.warning("routing: the answer from %s (%s) is not signed with this team's secret; not passed on",
                        owner.process_id, owner.url)
            await _answer(send, 502, f"The console process that owns this session ({owner.process_id}) answered "
                                     "without this team's signature; nothing of its answer was passed on.")
            return
        if response.status_code < 400 and scope["path"].endswith("/delete"):
            self.manager.replicas.forget(scope["path"].split("/")[2])
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in passed_on(answered)]
        headers.append((b"content-length", str(len(response.content)).encode()))
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": response.content})


class OwnerUnknown(Exception):
    """The directory could not name a live owner, nor let this process claim the session."""


def _replay(body: bytes, then: Receive) -> Receive:
    """A `receive` that hands the app the body read already (to check its signature), then the server's own
    (which waits for the client to go away)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await then()

    return receive


async def _refuse_socket(receive: Receive, send: Send) -> None:
    await receive()  # the websocket.connect message; closing before accept answers 403
    await send({"type": "websocket.close", "code": 1008, "reason": "A websocket is never forwarded."})


async def _body(receive: Receive) -> bytes:
    """The whole request body (already bounded by BodyLimitMiddleware, which wraps this one)."""
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

