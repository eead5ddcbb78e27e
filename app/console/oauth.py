"""A session's OAuth: the one flow (app/mcp/oauth) driven for the console, its steps on the timeline, its secrets kept.

What differs from the command line is only the agent and the gate:
- the agent is the owner's browser: the session page offers the authorization page (a link the owner clicks, never
  opened for them), and `/oauth/callback` on the console's own origin brings the answer back by its `state`;
- the gate is "step through": with it on, the flow stops before each step and the owner may edit what the step
  uses (client id and secret, scopes, extra parameters, endpoints, redirect URI), then Continue or Stop.

Everyone sees the flow as `auth_changed` events (steps, findings, the grant decoded), never a token, a client secret
or a code: those live in the owner-only place of the store (beside the target's secrets), per session and per
issuer, so a restart keeps them and "Sign out" forgets them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import httpx

from app.console.events import AuthChanged, ExchangeFinished, ExchangeStarted, FindingRecorded
from app.mcp.lint.rules import RULES
from app.mcp.oauth.driver import AuthAborted, Authorizer
from app.mcp.oauth.grant import Grant, Registration
from app.mcp.oauth.machine import AuthMachine
from app.mcp.oauth.steps import Answer, Authorize, Settings
from app.mcp.wire import Recorder

if TYPE_CHECKING:
    from app.mcp.http import HttpTransport

log = logging.getLogger("mcp_console.oauth")
CALLBACK_PATH = "/oauth/callback"
CALLBACK_WAIT_S = 600.0  # an authorization page left open longer than this is asked again
SECRET_KEY = "oauth"     # the key of the session's OAuth secrets in the store's owner-only place
EDITABLE = ("client_id", "client_secret", "client_metadata_url", "scope", "authorization_endpoint",
            "token_endpoint", "redirect_uri")

# state → the session flow waiting for that callback (this process only: the callback comes back to the process
# whose page offered the authorization link).
_WAITING: dict[str, SessionAuth] = {}


def waiting_for(state: str) -> SessionAuth | None:
    return _WAITING.get(state)


# Every session's flow in this process, for a shutdown that must not wait on a person (app/serving.py).
_LIVE: weakref.WeakSet[SessionAuth] = weakref.WeakSet()


def stop_waiting_flows() -> None:
    """Stop every flow that waits on a person (paused, or on the authorization page): the process is going."""
    for auth in list(_LIVE):
        auth.stop()


def redirect_uri(settings: Any) -> str:
    """The console's own redirect URI: its public host and port (app/web/public_host.py), /oauth/callback."""
    port = int(settings.port)
    netloc = settings.public_host if port == 80 else f"{settings.public_host}:{port}"
    return f"http://{netloc}{CALLBACK_PATH}"


class SessionAuth:
    """One session's OAuth: its machine and driver, its agent (the owner's browser) and its gate."""

    SECRET_KEY = SECRET_KEY

    def __init__(self, session_id: str, mcp_url: str, redirect_uri: Callable[[], str],
                 load: Callable[[], dict[str, str]], save: Callable[[str], None], append: Callable[[Any], Any]) -> None:
        self.session_id = session_id
        _LIVE.add(self)
        self._load, self._save, self._append = load, save, append
        # The console's own redirect URI, read when a flow runs: `--port 0` knows its port only once it listens (the
        # demo's first session connects before that), and a restart may listen on another. Empty in the settings
        # means this one; a URI the owner typed (a pre-registered client's) is kept as typed.
        self._own_redirect = redirect_uri
        stored = self._stored()
        settings = Settings(redirect_uri="", client_name="MCP Console")
        for name, value in (stored.get("settings") or {}).items():
            if name in EDITABLE and isinstance(value, str):
                setattr(settings, name, value)
        self.custom_redirect = settings.redirect_uri
        settings.redirect_uri = self.custom_redirect or redirect_uri()
        extra = (stored.get("settings") or {}).get("extra_params")
        if isinstance(extra, dict):
            settings.extra_params = {str(k): str(v) for k, v in extra.items()}
        registrations = {issuer: Registration.from_dict(r) for issuer, r in (stored.get("registrations") or {}).items()
                         if isinstance(r, dict)}
        grant = Grant.from_dict(stored["grant"]) if isinstance(stored.get("grant"), dict) else None
        self.machine = AuthMachine(mcp_url, settings, registrations, grant)
        self.step_through = bool(stored.get("step_through"))
        self.authorizer: Authorizer | None = None
        self.url: str | None = None          # the authorization page waiting for the owner's click (owner only)
        self.status = "done" if grant is not None else "idle"
        self.message = ""
        self.refreshed = 0
        self._callback: asyncio.Future[dict[str, str]] | None = None
        self._state = ""
        self._resume: asyncio.Future[bool] | None = None
        self._findings_said: dict[tuple[int, int], int] = {}
        self._findings_seen: set[tuple[str, str]] = set()
        self._counted_run = 0
        self._on_finding: Callable[[FindingRecorded], Any] | None = None

    # --- wiring -------------------------------------------------------------------------------------------

    def driver(self, http: httpx.AsyncClient, record: Recorder, new_key: Callable[[], str],
               on_finding: Callable[[FindingRecorded], Any]) -> Authorizer:
        """The authorizer for a new connection's client (the machine and what it learned carry over)."""
        self._on_finding = on_finding
        self.authorizer = Authorizer(self.machine, http, record, self, new_key, gate=self._gate,
                                     on_change=self._changed, exchanges=self)
        return self.authorizer

    def bind(self, transport: HttpTransport) -> None:
        if self.authorizer is not None:
            self.authorizer.bind(transport)

    # --- each OAuth exchange an entry of the timeline, as every exchange is ------------------------------------

    def started(self, key: str, step: str, url: str) -> None:
        self._append(ExchangeStarted(key=key, method=f"oauth: {step}", name=url))

    def finished(self, key: str, answer: Answer, duration_ms: float) -> None:
        ok = answer.problem is None and (answer.status == 0 or 200 <= answer.status < 400)
        self._append(ExchangeFinished(key=key, status="ok" if ok else "error", duration_ms=duration_ms,
                                      http_status=answer.status or None,
                                      error=None if ok else (answer.problem or f"HTTP {answer.status}")))

    # --- the agent: the owner's browser ----------------------------------------------------------------------

    async def authorize(self, command: Authorize) -> dict[str, str]:
        loop = asyncio.get_running_loop()
        self._callback = loop.create_future()
        self._state = command.state
        self.url = command.url
        _WAITING[command.state] = self
        self._set("waiting", "open the authorization page (the link below) and sign in; this page follows when the "
                  "authorization server sends you back. If that page shows an error instead (a wrong client id or "
                  "redirect URI, a scope it does not know), Stop, fix it under What the steps use, and reconnect")
        try:
            return await asyncio.wait_for(self._callback, CALLBACK_WAIT_S)
        except TimeoutError:
            raise AuthAborted(f"no callback came within {CALLBACK_WAIT_S / 60:g} minutes: connect again to get a "
                              "new authorization page") from None
        finally:
            _WAITING.pop(command.state, None)
            self.url = None
            self._callback = None

    def called_back(self, params: dict[str, str]) -> bool:
        """The callback route's answer for this session's waiting flow; False when none waits for it."""
        future = self._callback
        if future is None or future.done() or params.get("state") != self._state:
            return False
        future.set_result(params)
        return True

    # --- the gate: step through -----------------------------------------------------------------------------

    async def _gate(self, machine: AuthMachine) -> None:
        if not self.step_through:
            return
        self._resume = asyncio.get_running_loop().create_future()
        self._set("paused", f"stopped before the {machine.phase} step: check or edit the settings, then Continue")
        try:
            go_on = await self._resume
        finally:
            self._resume = None
        if not go_on:
            raise AuthAborted(f"stopped by you before the {machine.phase} step")
        self._set("running", "")

    def resume(self, go_on: bool) -> bool:
        if self._resume is None or self._resume.done():
            return False
        self._resume.set_result(go_on)
        return True

    def stop(self) -> bool:
        """Stop a flow that waits (paused, or on the authorization page)."""
        if self.resume(False):
            return True
        if self._callback is not None and not self._callback.done():
            self._callback.set_exception(AuthAborted("stopped by you while the authorization page was open"))
            return True
        return False

    # --- the owner's edits and sign-out ---------------------------------------------------------------------------

    def edit(self, values: dict[str, str], extra_params: dict[str, str], step_through: bool) -> None:
        settings = self.machine.settings
        for name in EDITABLE:
            if name in values:
                if name == "client_secret" and not values[name]:
                    continue  # an empty secret field keeps the secret (it is never sent back to the page)
                if name == "redirect_uri":  # empty, or the console's own: follow the console's own from now on
                    typed = values[name].strip()
                    self.custom_redirect = "" if typed in ("", self._own_redirect()) else typed
                    settings.redirect_uri = self.custom_redirect or self._own_redirect()
                    continue
                setattr(settings, name, values[name].strip())
        settings.extra_params = extra_params
        self.step_through = step_through
        if self.authorizer is not None:
            self.authorizer.reset()
        self._persist()
        self._publish()

    def forget_secret(self) -> None:
        self.machine.settings.client_secret = ""
        self._persist()
        self._publish()

    def sign_out(self) -> None:
        """Forget the grant and the registrations (the settings stay): the next request starts from the challenge."""
        if self.authorizer is not None:
            self.authorizer.forget()
        else:
            self.machine.grant = None
            self.machine.registrations.clear()
        self.refreshed = 0
        self._set("signed_out", "signed out: the tokens and the client registrations are forgotten")

    # --- what changes -------------------------------------------------------------------------------------

    def _changed(self, auth: Authorizer) -> None:
        machine = auth.machine
        if not self.custom_redirect and machine.phase in ("resource metadata", "refresh"):
            machine.settings.redirect_uri = self._own_redirect()  # a run begins: the console's port as it is now
        for index, step in enumerate(machine.steps):
            said = self._findings_said.get((machine.runs, index), 0)
            for finding in step.findings[said:]:
                if (finding.rule, finding.message) in self._findings_seen:
                    continue  # the same finding of every run (a loopback endpoint, say) is one finding
                self._findings_seen.add((finding.rule, finding.message))
                if self._on_finding is not None and finding.rule in RULES:
                    rule = RULES[finding.rule]
                    self._on_finding(FindingRecorded(rule=finding.rule, severity=rule.severity,
                                                     message=finding.message, exchange=finding.exchange,
                                                     spec_url=rule.spec_url))
            self._findings_said[(machine.runs, index)] = len(step.findings)
        if auth.running:
            self.status, self.message = "running", ""  # the gate and the agent say paused or waiting themselves
        elif auth.failure is not None:
            self.status, self.message = "failed", f"{auth.failure.step}: {auth.failure.message}"
        elif machine.grant is not None:
            refreshed = any(s.name == "refresh" and s.status == "done" for s in machine.steps)
            if refreshed and self._counted_run != machine.runs:
                self.refreshed += 1
                self._counted_run = machine.runs
            self.status, self.message = "done", "the token was refreshed" if refreshed else ""
        self._persist()
        self._publish()

    def _set(self, status: str, message: str) -> None:
        self.status, self.message = status, message
        self._publish()

    def _publish(self) -> None:
        machine = self.machine
        settings = machine.settings
        shown = {name: getattr(settings, name) for name in EDITABLE if name != "client_secret"}
        shown.update(has_secret=bool(settings.client_secret), extra_params=dict(settings.extra_params),
                     step_through=self.step_through, redirect_is_own=not self.custom_redirect)
        self._append(AuthChanged(status=self.status, message=self.message, run=machine.runs,
                                 steps=[step.to_dict() for step in machine.steps],
                                 grant=machine.grant.shown() if machine.grant is not None else None,
                                 settings=shown, refreshed=self.refreshed))

    # --- the owner-only place ------------------------------------------------------------------------------------

    def _stored(self) -> dict[str, Any]:
        text = self._load().get(SECRET_KEY)
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            log.warning("session %s: its stored OAuth data did not parse; starting without it", self.session_id)
            return {}
        return data if isinstance(data, dict) else {}

    def _persist(self) -> None:
        machine = self.machine
        settings = asdict(machine.settings)
        settings["redirect_uri"] = self.custom_redirect  # "" : the console's own, whatever its port then
        data = {"settings": {k: settings[k] for k in (*EDITABLE, "extra_params")},
                "step_through": self.step_through,
                "registrations": {i: r.to_dict() for i, r in machine.registrations.items()},
                "grant": machine.grant.to_dict() if machine.grant is not None else None,
                "saved_at": time.time()}
        self._save(json.dumps(data))

    def secret_values(self) -> list[str]:
        """Every OAuth secret of the session (tokens, refresh and ID tokens, client secrets), for the timeline's
        scrubber: a server that says one back (in a title, an error, a 401 body) is recorded with it masked, as a
        typed Authorization header is."""
        machine = self.machine
        values = machine.grant.secrets() if machine.grant is not None else []
        values += [r.client_secret for r in machine.registrations.values() if r.client_secret]
        if machine.settings.client_secret:
            values.append(machine.settings.client_secret)
        return values
