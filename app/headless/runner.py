"""One headless connection: a transport, a client, every wire event kept and linted, and MRTR rounds answered.

Built on `app.mcp` alone (no web app): what `call` and `check` share.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Mapping
from typing import Any

import httpx

from app.headless.answers import Elicitor, elicitor
from app.headless.masking import Masking
from app.headless.oauth import OAuthOptions
from app.headless.report import MAX_NOTES, Said, cut_note, notes_text
from app.headless.tasks import follow_task
from app.mcp.client import ClientConfig, McpClient, Reply, reply_json
from app.mcp.connecting import Connected, ConnectMachine, Failed, Initialize, NotifyInitialized, Probe, StartClient
from app.mcp.era import Era, LegacyEra, ModernEra, ServerAnswer
from app.mcp.errors import AuthChallenged, ConnectFailed, McpError, ProcessExited
from app.mcp.handshake import HandshakeFailed, send_initialized
from app.mcp.http import HttpTransport
from app.mcp.jsonrpc import Frame
from app.mcp.lint import Linter
from app.mcp.mrtr import kind_of
from app.mcp.oauth.agents import FollowRedirects, LoopbackCallback
from app.mcp.oauth.driver import Authorizer
from app.mcp.oauth.machine import AuthMachine
from app.mcp.operation import AskInput, Ended, OperationMachine, SendRound
from app.mcp.secret import reveal
from app.mcp.sse_transport import HttpSseTransport
from app.mcp.stdio import StdioTransport
from app.mcp.task import TaskChoice, as_task
from app.mcp.task_extension import declaring
from app.mcp.transport import Transport
from app.mcp.upstream import upstream_client
from app.mcp.wire import Recorder, WireEvent

CLIENT_INFO = {"name": "mcp-console-cli", "version": "0.1.0"}
MAX_ROUNDS = 10
REFUSING = (401, 403)
ROOTS_WAIT_S = 1.0  # how long a 2025-11-25 connection waits for the server's first roots/list when --root is given
ROOTS_SETTLE_S = 0.2  # and then for the server to apply the roots it was given (see Headless._first_roots)


class AuthRefused(ConnectFailed):
    """The server answered 401 or 403: the credentials are missing or not enough. Nothing more is sent (every
    later request would be refused the same way, and a CI log of ProtocolViolations says less than the status)."""

    def __init__(self, status: int, reason: str, challenge: str | None, exchange: str | None = None,
                 detail: str = "") -> None:
        self.status, self.challenge, self.exchange = status, challenge, exchange
        said = f"; WWW-Authenticate: {challenge}" if challenge else " (it sent no WWW-Authenticate challenge)"
        super().__init__(f"the server refused the request: HTTP {status}{f' {reason}' if reason else ''}{said}{detail}")


NOT_CONNECTED = (ConnectFailed, ProcessExited)


# A request's overall maximum in a script: a server that sends a frame every few seconds forever never trips the
# idle deadline, and CI would wait the console's hour for it.
DEFAULT_MAX_S = 300.0


class Headless:
    """A connection that keeps every wire event and lints it as it is recorded."""

    def __init__(self, target: str, stdio: bool, idle_timeout_s: float, headers: Mapping[str, str] | None = None,
                 era: str = "modern", answer: Elicitor | None = None, max_s: float = DEFAULT_MAX_S,
                 era_named: bool = False, masking: Masking | None = None, oauth: OAuthOptions | None = None) -> None:
        self.target = target
        self.oauth = oauth
        self.auth: Authorizer | None = None  # the OAuth flow's driver, made with the first HTTP transport
        self._auth_said: dict[tuple[int, int], tuple[int, int, int]] = {}
        self._auth_found: set[tuple[str, str]] = set()  # (run, step) -> lines and findings said
        self.stdio = stdio
        # What is secret of the typed target (app/headless/masking.py); a script that made none shows it all.
        self.masking = masking or Masking(target, stdio, dict(headers or {}), reveal=True)
        self.refused: AuthRefused | None = None  # a 401 or 403 seen: nothing else is sent
        self.roots_offered = False  # --root gave roots: a 2025-11-25 server's first roots/list is waited for
        self._roots_asked = asyncio.Event()
        # modern, legacy, sse-2024 (legacy over HTTP+SSE), or auto (probe server/discover, fall back to initialize)
        self.era = era
        self.era_named = era_named  # the command has --era (call does, check does not): its notes name it
        self._answer = answer   # how a 2025-11-25 server's own requests (elicitation, roots) are answered
        self.events: list[WireEvent] = []
        # What the web timeline would show as notes and notices, in order: `call` prints them, so a CI log says
        # why something happened (a fallback, a status line, a stream's note) and not only what came of it.
        self.said: list[Said] = []
        self.said_more = 0  # notes past MAX_NOTES: counted, not kept (the HAR has their frames)
        self.said_printed = 0  # notes already on stderr (interactive OAuth prints those before its URL)
        self._methods: dict[str, str] = {}  # exchange key → the method its request sent
        self.linter = Linter()
        self._http: httpx.AsyncClient | None = None
        self._idle_timeout_s, self._max_s = idle_timeout_s, max_s
        self._caps: dict[str, Any] = {"elicitation": {"form": {}}, "roots": {}}
        self.connected: Connected | None = None  # what connecting settled (app/mcp/connecting.py)
        self.discovery: Reply | None = None  # the server/discover probe's reply, when one was sent
        self.client = self._new_client(ModernEra())

    def _new_client(self, era: Era) -> McpClient:
        record = self.linter.recorder(self._keep)
        transport: Transport
        if self.stdio:
            transport = StdioTransport(self.masking.argv, record, cwd=self.masking.target.cwd)
        else:
            if self._http is None:
                self._http = upstream_client()  # the console's own client
            url, headers = self.masking.url, self.masking.headers
            if self.era == "sse-2024":  # 2025-11-25 over the older HTTP+SSE transport, as a console target has it
                transport = HttpSseTransport(url, self._http, record, extra_headers=headers)
            else:
                transport = HttpTransport(url, self._http, record, extra_headers=headers)
        first = getattr(self, "client", None)
        authorizer = self._authorizer(transport, record)
        return McpClient(transport, ClientConfig(client_info=CLIENT_INFO, capabilities=self._capabilities, era=era,
                                                 authorizer=authorizer,
                                                 idle_timeout_s=self._idle_timeout_s, max_s=self._max_s,
                                                 deadlines_named=("--timeout", "--max-time"),
                                                 answerer=self._server_request,
                                                 first_key=first.next_key_number if first is not None else 1))

    @property
    def max_s(self) -> float:
        """The overall deadline of a request (--max-time), and of following a task (app/headless/tasks.py)."""
        return self._max_s

    def _capabilities(self) -> dict[str, Any]:
        """What each request declares: on 2026-07-28 also the tasks extension, which this command follows
        (`_follow_task`); 2025-11-25's initialize gets the plain capabilities."""
        client = getattr(self, "client", None)
        if client is None or client.config.era.name != "modern":
            return self._caps
        return declaring(self._caps)

    def _authorizer(self, transport: Transport, record: Recorder) -> Authorizer | None:
        """The OAuth driver for an HTTP transport when --oauth asks for one (and no Authorization was typed)."""
        if self.oauth is None or not isinstance(transport, HttpTransport) or transport.typed_authorization:
            return None
        if self.auth is None:
            assert self._http is not None
            machine = AuthMachine(reveal(self.masking.url), self.oauth.settings)
            agent = FollowRedirects(self._http, self.say) if self.oauth.mode == "follow" else \
                LoopbackCallback(self._announce, wait_s=self._max_s)
            self.auth = Authorizer(machine, self._http, record, agent, lambda: self.client.new_key(),
                                   on_change=self._auth_changed)
        self.auth.bind(transport)
        return self.auth

    def _announce(self, url: str) -> None:
        """The authorization URL for the person, after the notes that led to it (discovery, registration): they
        read what is happening while the command waits, not only once it is over."""
        print(notes_text(self.said[self.said_printed:]), file=sys.stderr)
        self.said_printed = len(self.said)
        print(f"· mcp-console: open this URL in a browser to authorize (waiting for the callback):\n{url}",
              file=sys.stderr, flush=True)

    def _auth_changed(self, auth: Authorizer) -> None:
        """Each step's new lines said once, in order; its findings kept with the lint's."""
        machine = auth.machine
        for index, step in enumerate(machine.steps):
            said_lines, _unused, said_findings = self._auth_said.get((machine.runs, index), (0, 0, 0))
            title = f"OAuth {step.name}"
            for kind, line in step.lines[said_lines:]:
                self.say(f"{title}: {line}" if kind == "found" else f"{title}: → {line}")
            for finding in step.findings[said_findings:]:
                if (finding.rule, finding.message) not in self._auth_found:  # once, however many runs show it
                    self._auth_found.add((finding.rule, finding.message))
                    self.linter.report(finding.rule, finding.message, finding.exchange)
            if step.status == "failed" and said_findings < len(step.findings) and step.fix:
                self.say(f"{title} failed; fix: {step.fix}")
            self._auth_said[(machine.runs, index)] = (len(step.lines), 0, len(step.findings))

    def _keep(self, event: WireEvent) -> None:
        self.events.append(event)
        if event.direction == "transport" and event.http_status in REFUSING and self.refused is None \
                and self.auth is None and event.signal != "oauth":
            challenge = next((value for name, value in event.headers or () if name.lower() == "www-authenticate"),
                             None)
            reason = (event.note or "").split(" ", 2)[2] if (event.note or "").count(" ") >= 2 else ""
            self.refused = AuthRefused(event.http_status or 0, reason,
                                       self.masking.text(challenge) if challenge is not None else None, event.exchange)
        if event.direction == "out" and event.exchange is not None and event.frame is not None and event.frame.method:
            self._methods.setdefault(event.exchange, event.frame.method)
        if event.note and event.direction != "stderr":  # the process's own lines are its output, not notes
            if len(self.said) >= MAX_NOTES:
                self.said_more += 1
                return
            # Masked (unless --reveal): a note may quote what the server said back, a typed secret in it.
            self.said.append(Said(event.direction, cut_note(self.masking.text(event.note)), event.exchange,
                                  self._methods.get(event.exchange or ""), event.http_status))

    def _say_era(self, note: str) -> None:
        self.said.append(Said("era", note))

    def say(self, note: str, method: str | None = None) -> None:
        """A note of mcp-console's own doing (an answer it gave the server, an MRTR round it sent), said with the
        transport's notes, in order."""
        if len(self.said) >= MAX_NOTES:
            self.said_more += 1
            return
        self.said.append(Said("client", cut_note(self.masking.text(note)), method=method))

    @property
    def answerer(self) -> Elicitor:
        """How input requests are answered (the schema's defaults when the command set nothing)."""
        return self._answer if self._answer is not None else elicitor("defaults")

    def answer_with(self, answer: Elicitor) -> None:
        """How the server's own requests (2025-11-25) are answered: set before connecting."""
        self._answer = answer

    def stop_if_refused(self, reply: Reply | None = None) -> None:
        """After every request: a 401 or 403 ends the run before anything else is sent (with OAuth: one the flow
        could not answer, said with the step that failed)."""
        if reply is not None and isinstance(reply.error, AuthChallenged) and self.refused is None:
            failure = self.auth.failure if self.auth is not None else None
            detail = (f"; OAuth stopped at {failure.step}: {failure.message}" if failure is not None else
                      "; OAuth got tokens the server still refused" if self.auth is not None else "")
            challenge = reply.error.challenge
            self.refused = AuthRefused(challenge.status, "", self.masking.text(challenge.raw) or None,
                                       reply.error.exchange, detail)
        if self.refused is not None:
            raise self.refused

    async def request(self, method: str, params: dict[str, Any]) -> Reply:
        """One request, unless the server has refused the credentials already (then AuthRefused, as after it)."""
        self.stop_if_refused()
        reply = await self.client.request(method, params)
        self.stop_if_refused(reply)
        return reply

    async def __aenter__(self) -> Headless:
        """Connect as the console does (the same machine): the probe, the fallback, the handshake. A server that
        cannot be reached raises its NOT_CONNECTED error; one reached that settles no era raises HandshakeFailed.
        Either way what was started is closed first (`async with` runs no exit for an entry that raised): a stdio
        server that answered badly was left running, its parent gone."""
        try:
            return await self._connect()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.__aexit__()
            raise

    async def _connect(self) -> Headless:
        machine = ConnectMachine(self.era, CLIENT_INFO, self._caps, stdio=self.stdio)
        command = machine.start()
        fresh = True
        while True:
            for note in machine.take_notes():
                self._say_era(note.message)
            if isinstance(command, StartClient):
                if command.keep_transport:
                    self.client.config.era = LegacyEra()
                    command = machine.started()
                    continue
                if not fresh:  # the probe took the process with it: a new one for the handshake
                    with contextlib.suppress(Exception):
                        await self.client.close()
                    self.client = self._new_client(LegacyEra())
                elif command.era == "legacy":
                    self.client.config.era = LegacyEra()
                fresh = False
                await self.client.transport.start()  # refused or unreachable: raised as it is
                command = machine.started()
            elif isinstance(command, Probe):
                self.discovery = reply = await self.client.request("server/discover", {})
                self.stop_if_refused(reply)
                if isinstance(reply.error, NOT_CONNECTED):
                    raise reply.error
                command = machine.probed(reply, transport_alive=getattr(self.client.transport, "alive", True))
            elif isinstance(command, Initialize):
                reply = await self.client.request("initialize", command.params)
                self.stop_if_refused(reply)
                if isinstance(reply.error, NOT_CONNECTED):
                    raise reply.error
                command = machine.initialized(reply)
            elif isinstance(command, NotifyInitialized):
                command = machine.notified(await send_initialized(self.client, command.protocol_version))
            elif isinstance(command, Failed):
                raise HandshakeFailed(command.message)
            else:
                self.connected = command
                # The rules of the revision it speaks (app/mcp/lint); a refused probe is no finding of a 2025-11-25 one.
                self.linter.settle(command.protocol_version, command.probe if command.era == "legacy" else None)
                if command.era == "legacy" and self.roots_offered:
                    await self._first_roots()
                forced = f" (--era {command.chosen})" if self.era_named and command.chosen != "auto" else ""
                self._say_era(f"{command.protocol_version}: {command.reason}{forced}")
                return self

    async def _server_request(self, frame: Frame, _key: str) -> ServerAnswer:
        """A 2025-11-25 server's request on a stream, answered as an MRTR input request of the same kind would be."""
        if frame.method == "roots/list":
            self._roots_asked.set()
        if self._answer is None:
            return ServerAnswer(error={"code": -32601, "message": f"{frame.method} is not answered headless"})
        return ServerAnswer(result=self._answer("server-request", {"method": frame.method, "params": frame.params}))

    async def _first_roots(self) -> None:
        """A 2025-11-25 server asks for roots right after `initialized` and applies the answer in its own time
        (server-filesystem replaces its allowed directories with them): a call sent at once was answered with the
        directories it was started on. So, when --root gave roots, the first roots/list is waited for (at most
        ROOTS_WAIT_S: a server may never ask), its answer sent, a ping's round trip shows the server has read it, and
        ROOTS_SETTLE_S more let it apply them (server-filesystem checks each directory on disk first: a few ms, after
        the ping's answer about one time in three)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._roots_asked.wait(), ROOTS_WAIT_S)
        if not self._roots_asked.is_set():
            return
        waiting = list(self.client.asks.waiting)
        if waiting:
            await asyncio.wait(waiting, timeout=ROOTS_WAIT_S)
        await self.request("ping", {})
        await asyncio.sleep(ROOTS_SETTLE_S)

    async def __aexit__(self, *_exc: object) -> None:
        try:
            await self.client.close()
        finally:
            if self._http is not None:
                await self._http.aclose()

    async def operation(self, method: str, params: dict[str, Any], answer: Elicitor,
                        task_choice: TaskChoice | None = None) -> Reply:
        """One MRTR operation, driven as the console drives it (`app/mcp/operation.py`): its rounds are answered by
        `answer`, requestState-only rounds go again at once, at most MAX_ROUNDS. The last reply comes back."""
        machine = OperationMachine(method, params, max_rounds=MAX_ROUNDS)
        command = machine.start()
        last: Reply | None = None
        while not isinstance(command, Ended):
            if isinstance(command, SendRound):
                self._say_round(method, machine, command)
                self.stop_if_refused()
                # A progress token per round: the lint then ties late progress to its request on stdio too.
                params = self._as_task(method, command.params, task_choice)
                last = await self.client.request(method, params, progress_token=self.client.new_key())
                self.stop_if_refused(last)
                if method == "tools/call" and last.error is None and (
                        last.result_type == "task" or (params is not command.params and
                                                       isinstance((last.result or {}).get("task"), dict))):
                    return await follow_task(self, last, answer)
                command = machine.took(last)
                if isinstance(command, AskInput):
                    asked = ", ".join(f"{kind_of(r)} {k!r}" for k, r in command.requests.items())
                    self.say(f"round {command.round}: the server asked for input ({asked})", method)
                continue
            key, request = next(iter(command.requests.items()))
            taken = machine.answer(key, answer(key, request), command.round)
            assert taken is not None  # the key was asked in this very round
            command = taken
        if command.status == "capped":
            self.said.append(Said("operation", command.message, method=method))
        elif len(machine.rounds) > 1:
            self.say(f"ended after {len(machine.rounds)} rounds: {command.status}", method)
        assert last is not None  # the first command of a new machine is always a round to send
        return last


    def _as_task(self, method: str, params: dict[str, Any], choice: TaskChoice | None = None) -> dict[str, Any]:
        """2025-11-25: a tools/call of a tool that requires a task goes as one, and one that allows it when --task
        chose it (app/mcp/task.py `as_task`)."""
        if method != "tools/call" or self.connected is None or self.connected.era != "legacy":
            return params
        return as_task(params, self.connected.discovered.get("capabilities"),
                       self.client.task_support.get(str(params.get("name"))), choice)

    def _say_round(self, method: str, machine: OperationMachine, command: SendRound) -> None:
        """Each round after the first, said: with how many answers, or sent again at once (only requestState)."""
        n = command.round.n
        if n < 2:
            return
        before = machine.rounds[-2]
        how = "sent again at once (the server returned only requestState)" if before.retried_at_once else \
            f"sent with {len(command.params.get('inputResponses') or {})} answer(s)"
        self.say(f"round {n}: {how}", method)



def printed_json(reply: Reply) -> dict[str, Any]:
    """What `call` prints: the request's identity, the result or the error, the warnings: the keys of the one
    encoding of a reply (app/mcp/client.py reply_json) a script needs."""
    full = reply_json(reply)
    out: dict[str, Any] = {"method": full["method"], "id": full["id"]}
    for name in ("result", "error"):
        if full[name] is not None:
            out[name] = full[name]
    if full["warnings"]:
        out["warnings"] = full["warnings"]
    return out


def failed(reply: Reply) -> bool:
    """A protocol error, a tool that says it failed (isError), or a call that never completed: a server that
    asks for input round after round (or names a resultType of its own) ends with no result to pass on."""
    return (reply.error is not None or reply.result is None or reply.result.get("isError") is True
            or reply.result_type != "complete")


def outcome(reply: Reply) -> str:
    """What a failed reply was, in a few words."""
    if reply.error is not None or reply.result is None:
        return str(reply.error)
    if reply.result.get("isError") is True:
        return "isError"
    return f"did not complete (resultType {reply.result.get('resultType')!r})"


__all__ = ["NOT_CONNECTED", "AuthRefused", "Headless", "McpError", "elicitor", "failed", "outcome", "printed_json"]
