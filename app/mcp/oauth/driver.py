"""Runs the OAuth machine (app/mcp/oauth/machine.py) for a connection: its fetches on the wire, its authorization
page through an agent, its token on the transport.

The console and the command line each give the same driver what differs between them: the `Agent` that takes the
person to the authorization page and brings the callback back (a browser tab and /oauth/callback; a printed URL
and a loopback listener; or, for CI, following the redirects itself), an optional `gate` that pauses before each
step (the console's "step through"), and where the results go (`on_change`: the steps and the grant to show and
keep). Every exchange is recorded as any other, under its own key, with `signal="oauth"` and every secret masked
(tokens, codes, secrets, the PKCE verifier, the state): the record is what a link holder may see.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit, urlunsplit

import httpx

from app.mcp.errors import AuthChallenged
from app.mcp.oauth.grant import Grant
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import MAX_BODY, Answer, Authorize, Command, Done, Failed, Fetch
from app.mcp.secret import MASK
from app.mcp.wire import Recorder, WireEvent, wire_headers

FETCH_TIMEOUT_S = 15.0
SECRET_FIELDS = frozenset({"access_token", "refresh_token", "id_token", "client_secret", "code", "code_verifier",
                           "registration_access_token", "client_assertion", "assertion", "password", "state"})


class AuthAborted(Exception):
    """The person stopped the flow (or the agent could not bring a callback): the message says why."""


class Agent(Protocol):
    async def authorize(self, command: Authorize) -> dict[str, str]:
        """Take the person to `command.url`; return the callback's query parameters (raise AuthAborted if none)."""
        ...


class Bearer(Protocol):
    bearer_version: int

    def use_bearer(self, token: str | None) -> None: ...


Gate = Callable[[AuthMachine], Awaitable[None]]


class ExchangeSink(Protocol):
    """Where a caller that shows exchanges as entries (the console's timeline) hears of each OAuth one."""

    def started(self, key: str, step: str, url: str) -> None: ...

    def finished(self, key: str, answer: Answer, duration_ms: float) -> None: ...


class Authorizer:
    """The client's authorizer (ClientConfig.authorizer): called with a refusal, True when a new token is on the
    transport. One flow at a time: requests refused together wait for the one flow, then go again."""

    def __init__(self, machine: AuthMachine, http: httpx.AsyncClient, record: Recorder, agent: Agent,
                 new_key: Callable[[], str], gate: Gate | None = None,
                 on_change: Callable[[Authorizer], None] | None = None,
                 exchanges: ExchangeSink | None = None) -> None:
        self.machine = machine
        self.exchanges = exchanges
        self._http = http
        self._record = record
        self.agent = agent
        self.new_key = new_key
        self.gate = gate
        self.on_change = on_change
        self.transport: Bearer | None = None
        self.failure: Failed | None = None
        self.running = False
        self._failed: tuple[int] | None = None  # the bearer_version a flow failed with (see __call__)
        self._lock = asyncio.Lock()

    @property
    def grant(self) -> Grant | None:
        return self.machine.grant

    def reset(self) -> None:
        """The owner changed something: the next refusal may run a flow again."""
        self._failed = None

    def bind(self, transport: Bearer) -> None:
        """The transport the token goes on; a grant kept from before (a restart) goes on it at once."""
        self.transport = transport
        self._failed = None
        if self.machine.grant is not None:
            transport.use_bearer(self.machine.grant.access_token)

    def forget(self) -> None:
        """Sign out: the grant and the registrations go, and the transport sends no token."""
        self.machine.grant = None
        self.machine.registrations.clear()
        self.machine.registration = None
        self._failed = None
        if self.transport is not None:
            self.transport.use_bearer(None)
        self._changed()

    async def __call__(self, refused: AuthChallenged) -> bool:
        async with self._lock:
            if self.transport is not None and refused.generation != self.transport.bearer_version:
                return True  # another request's flow put a new token on meanwhile: go again with it
            if self._failed is not None and self._failed[0] == refused.generation and self.failure is not None:
                # Refused with the same token as a flow that failed (or was stopped): that flow's end is this
                # request's answer too, not another flow of its own (one Stop stops them all). The owner's next
                # change (settings, sign-out, a reconnect) lets a new flow run.
                outcome: Done | Failed = self.failure
            else:
                outcome = await self.run(refused.challenge, refused.exchange)
                if isinstance(outcome, Failed) and self.transport is not None:
                    self._failed = (self.transport.bearer_version,)
        if isinstance(outcome, Failed):  # the refusal is the request's answer: it says where the flow stopped
            refused.args = (f"{refused.args[0] if refused.args else refused}; OAuth stopped at the "
                            f"{outcome.step} step: {outcome.message}",)
        return isinstance(outcome, Done)

    async def run(self, challenge: Any, exchange: str | None = None) -> Done | Failed:
        self.failure = None
        self.running = True
        try:
            command: Command = self.machine.challenged(challenge, exchange)
            while True:
                self._changed()
                if isinstance(command, Done):
                    if self.transport is not None:
                        self.transport.use_bearer(command.grant.access_token)
                    return command
                if isinstance(command, Failed):
                    self.failure = command
                    return command
                command = await self._step(command)
        finally:
            self.running = False
            self._changed()

    async def _step(self, command: Fetch | Authorize) -> Command:
        try:
            if self.gate is not None:
                await self.gate(self.machine)
                rebuilt = self.machine.pending()  # what the person set while it waited goes with this step
                assert isinstance(rebuilt, Fetch | Authorize)
                command = rebuilt
            if isinstance(command, Fetch):
                return self.machine.fetched(await self._fetch(command))
            return self.machine.called_back(await self._authorize(command))
        except AuthAborted as exc:
            return self.machine.abort(str(exc) or "stopped")

    async def _fetch(self, command: Fetch) -> Answer:
        key = self.new_key()
        began = time.monotonic()
        if self.exchanges is not None:
            self.exchanges.started(key, command.step, command.url)
        answer = await self._exchange(key, command)
        if self.exchanges is not None:
            self.exchanges.finished(key, answer, (time.monotonic() - began) * 1000)
        return answer

    async def _exchange(self, key: str, command: Fetch) -> Answer:
        content: bytes | None = None
        shown = ""
        if command.form is not None:
            content = urlencode(command.form).encode()
            shown = urlencode([(k, MASK if k in SECRET_FIELDS else v) for k, v in command.form])
        elif command.json is not None:
            content = json.dumps(command.json).encode()
            shown = json.dumps(command.json)
        try:
            request = self._http.build_request(command.method, command.url, headers=list(command.headers),
                                               content=content, timeout=FETCH_TIMEOUT_S)
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            return self._said(key, command, Answer(problem=f"could not build the request to {command.url}: {exc}"))
        self._record(WireEvent(direction="out", raw=shown, exchange=key, url=command.url, signal="oauth",
                               headers=[(n, _masked_header(n, v)) for n, v in wire_headers(request.headers)],
                               note=f"OAuth {command.step}: {command.method} {command.url}"))
        try:
            # One deadline over the whole answer, head and body: a server dripping a byte at a time kept the flow,
            # and every request waiting behind it, for days (httpx's timeout is per read).
            async with asyncio.timeout(FETCH_TIMEOUT_S):
                response = await self._http.send(request, stream=True, follow_redirects=command.method == "GET")
                try:
                    body = await _bounded(response)
                finally:
                    await response.aclose()
        except TimeoutError:
            return self._said(key, command, Answer(problem=f"no complete answer from {command.url} within "
                                                           f"{FETCH_TIMEOUT_S:g} s"))
        except (httpx.HTTPError, OSError) as exc:
            return self._said(key, command, Answer(problem=f"could not reach {command.url}: {type(exc).__name__}: "
                                                           f"{exc}"))
        headers = wire_headers(response.headers)
        self._record(WireEvent(direction="transport", raw="", exchange=key, http_status=response.status_code,
                               headers=[(n, _masked_header(n, v)) for n, v in headers], signal="oauth", url=command.url,
                               note=f"HTTP {response.status_code} {response.reason_phrase}"))
        text = body.decode("utf-8", errors="replace")
        if text:
            kept = kept_body(command, response.status_code, text)
            self._record(WireEvent(direction="in", raw=kept, exchange=key, signal="oauth",
                                   http_status=response.status_code,
                                   note=None if kept else f"{len(body)} bytes not kept: not the document asked for "
                                                          "(a metadata URL a server names is fetched by the console; "
                                                          "what else answers there stays off the record)"))
        return Answer(response.status_code, headers, text, exchange=key)

    def _said(self, key: str, command: Fetch, answer: Answer) -> Answer:
        self._record(WireEvent(direction="transport", raw="", exchange=key, signal="oauth", url=command.url,
                               note=f"OAuth {command.step}: {answer.problem}"))
        answer.exchange = key
        return answer

    async def _authorize(self, command: Authorize) -> dict[str, str]:
        key = self.new_key()
        began = time.monotonic()
        if self.exchanges is not None:
            self.exchanges.started(key, command.step, masked_url(command.url))
        self._record(WireEvent(direction="transport", raw="", exchange=key, signal="oauth",
                               url=masked_url(command.url),
                               note=f"OAuth authorization: the authorization page is {masked_url(command.url)}"))
        step = self.machine.step
        if step is not None:
            step.exchanges.append(key)
        self._changed()
        try:
            params = await self.agent.authorize(command)
        except AuthAborted as exc:
            if self.exchanges is not None:
                self.exchanges.finished(key, Answer(problem=str(exc), exchange=key),
                                        (time.monotonic() - began) * 1000)
            raise
        shown = ", ".join(f"{k}={MASK if k in SECRET_FIELDS else v}" for k, v in params.items())
        self._record(WireEvent(direction="transport", raw="", exchange=key, signal="oauth",
                               note=f"OAuth callback: {shown or 'no parameters'}"))
        if self.exchanges is not None:  # the browser saw the redirect, not the console: no status of its own
            said = "the callback carried an error" if "error" in params or "code" not in params else None
            self.exchanges.finished(key, Answer(0, problem=said, exchange=key), (time.monotonic() - began) * 1000)
        return params

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)


async def _bounded(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _masked_header(name: str, value: str) -> str:
    lowered = name.lower()
    if lowered in ("authorization", "proxy-authorization"):
        return value.split(" ", 1)[0] + " " + MASK if " " in value else MASK
    if lowered in ("cookie", "set-cookie"):
        return MASK
    return value


# What a metadata answer must hold to be kept on the record (as the machine reads it): the protected resource's
# metadata names its authorization servers, an authorization server's its issuer.
METADATA_KEYS = {"resource metadata": "authorization_servers", "server metadata": "issuer"}


def kept_body(command: Fetch, status: int, text: str) -> str:
    """The body as recorded: a metadata document when it is one, a registration or token answer with its secrets
    masked; anything else a metadata URL answered ("" : not kept). A server names those URLs, so a hostile one
    could point them at a service only the console can reach and have its answer shown to link holders."""
    wanted = METADATA_KEYS.get(command.step)
    if wanted is None:
        return masked_body(text)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    return masked_body(text) if status == 200 and isinstance(doc, dict) and wanted in doc else ""


def masked_body(text: str) -> str:
    """A token, registration or metadata answer with every secret field's value masked (JSON), or a form body's."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        if "=" in text and "\n" not in text:
            pairs = parse_qsl(text, keep_blank_values=True)
            if pairs:
                return urlencode([(k, MASK if k in SECRET_FIELDS else v) for k, v in pairs])
        return text
    return json.dumps(_mask(doc), ensure_ascii=False) if isinstance(doc, dict) else text


def _mask(doc: Any, depth: int = 0) -> Any:
    """Secret fields masked wherever they are nested (an answer may wrap its tokens), to a bounded depth."""
    if depth > 32:
        return MASK
    if isinstance(doc, dict):
        return {k: (MASK if k in SECRET_FIELDS and isinstance(v, str) else _mask(v, depth + 1))
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [_mask(v, depth + 1) for v in doc]
    return doc


def masked_url(url: str) -> str:
    """A URL with its secret query values (state, code) masked; the mask itself left readable (not percent-encoded)."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(f"{quote_plus(k)}={MASK}" if k in SECRET_FIELDS else urlencode([(k, v)]) for k, v in pairs)
    return urlunsplit(parts._replace(query=query))
