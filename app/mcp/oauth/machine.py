"""The OAuth flow of an MCP client, sans I/O: a refused request in, the steps to a token out.

The machine takes what happened (the server's challenge, an HTTP answer, the authorization callback) and answers
with the next thing to do: fetch this URL, send the person to that authorization page, or stop, with a grant or
with the step that failed, the rule it breaks and the fix. It sends nothing itself: the console and the command
line run the same commands (app/mcp/oauth/driver.py), so both take the same steps for the same reasons.

`pending()` builds the current command from the current state and settings without changing either: a driver that
pauses before a step (the console's "step through") calls it again after the person edited the settings, and the
step goes with what they typed. Every step says what it found and what it decided (`steps`), for the timeline.

The order is the specification's (2026-07-28 `basic/authorization`; 2025-11-25 takes the same steps, laxer on a
few): protected resource metadata (RFC 9728) → authorization server metadata (RFC 8414, OIDC discovery, `issuer`
checked) → a client id (pre-registered, a client id metadata document, dynamic registration) → authorization with
PKCE S256, `resource` (RFC 8707), the scope chosen → the callback (`state`, RFC 9207 `iss`) → the token request.
A later 401 refreshes first; a 403 `insufficient_scope` authorizes again with the union of the scopes.
"""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from authlib.oauth2.rfc7636 import create_s256_code_challenge

from app.mcp.oauth.challenge import Challenge
from app.mcp.oauth.grant import Grant, Registration
from app.mcp.oauth.steps import (
    MAX_BODY,
    TITLES,
    Answer,
    AuthFinding,
    Authorize,
    Command,
    Done,
    Failed,
    Fetch,
    Settings,
    Step,
)
from app.mcp.oauth.urls import (
    canonical_resource,
    is_https,
    is_loopback,
    origin,
    prm_urls,
    resource_covers,
    server_metadata_urls,
    with_query,
)


class AuthMachine:
    def __init__(self, mcp_url: str, settings: Settings, registrations: dict[str, Registration] | None = None,
                 grant: Grant | None = None) -> None:
        self.mcp_url = mcp_url
        self.resource = canonical_resource(mcp_url)
        self.settings = settings
        self.registrations = registrations if registrations is not None else {}
        self.grant = grant
        self.steps: list[Step] = []
        self.runs = 0
        self.phase = "idle"
        self.challenge: Challenge | None = None
        self.prm: dict[str, Any] | None = None
        self.issuer: str | None = None
        self.metadata: dict[str, Any] | None = None
        self.legacy_endpoints = False  # 2025-03-26 servers: no metadata at all, endpoints on the server's origin
        self.registration: Registration | None = None
        self._urls: list[str] = []
        self._url_index = 0
        self._verifier = ""
        self._state = ""
        self._code = ""
        self._scope: str | None = None
        self._step_up_scope: str | None = None
        self._step_ups = 0
        self._answered = False  # some metadata URL answered with an HTTP status (not only connection failures)
        self._dcr_type = ""
        self._retried_type = False

    # --- the way in -----------------------------------------------------------------------------------------

    def challenged(self, challenge: Challenge, exchange: str | None = None) -> Command:
        """A request was refused (on `exchange`): a run begins (a refresh, a step-up, or the whole flow)."""
        self.runs += 1
        self.steps = []
        self.challenge = challenge
        step = self._open("challenge")
        if exchange:
            step.exchanges.append(exchange)
        step.find(challenge.describe())
        if not challenge.bearer:
            self._find(step, "oauth.challenge-missing", "warning", f"HTTP {challenge.status} without a "
                       "`WWW-Authenticate: Bearer` challenge: the client has to guess where the metadata is")
        elif not challenge.exposed:
            self._find(step, "oauth.cors-expose", "note", "no Access-Control-Expose-Headers: WWW-Authenticate: a "
                       "browser-based client cannot read this challenge (the console reads it server-side)")
        if challenge.insufficient_scope:
            asked = (self.grant.requested or self.grant.scope or "") if self.grant else (self._scope or "")
            wanted = union(asked, challenge.scope or "")
            if set(wanted.split()) - set(asked.split()):
                self._step_ups = 0  # a scope not asked before: progress, not the same refusal again
            if self._step_ups >= self.settings.max_step_ups:
                return self._fail(step, f"the server asked for more scope {self._step_ups + 1} times in a row "
                                  f"({challenge.scope or 'no scope named'}); stopped at the limit of "
                                  f"{self.settings.max_step_ups}", "oauth.step-up-limit",
                                  "the token the authorization server grants never satisfies the server: check "
                                  "which scopes the user may consent to, or the server's scope check")
            self._step_up_scope = wanted
            self._step_ups += 1
            step.decide(f"step-up {self._step_ups} of {self.settings.max_step_ups}: authorize again with "
                                f"the union of the scopes asked before and those challenged: {self._step_up_scope}")
        elif self.grant is not None and self.grant.refresh_token and challenge.status == 401:
            step.decide("a token is held and it has a refresh token: refresh it first")
            # The refresh names the resource the grant was issued for (the metadata's own name for it, kept with
            # the grant), not the URL's canonical form: RFC 8707 wants the same value in every token request.
            self.resource = self.grant.resource or self.resource
            step.status = "done"
            self.phase = "refresh"
            self._open("refresh")
            return self.pending()
        elif self.grant is not None:
            step.decide("the token held was refused and there is no refresh token: authorize again")
        else:
            step.decide("no token is held: discover the authorization server")
        self.grant = None if not challenge.insufficient_scope else self.grant
        step.status = "done"
        return self._begin_discovery()

    def pending(self) -> Command:
        """The command of the current phase, built from the current settings (changes nothing)."""
        if self.phase in ("resource metadata", "server metadata"):
            return Fetch(self.phase, "GET", self._urls[self._url_index], (("Accept", "application/json"),))
        if self.phase == "registration":
            return Fetch("registration", "POST", self._endpoint("registration_endpoint"),
                         (("Content-Type", "application/json"), ("Accept", "application/json")),
                         json=self._registration_body())
        if self.phase == "authorization":
            return Authorize("authorization", self._authorization_url(), self.settings.redirect_uri, self._state)
        if self.phase == "token":
            return self._token_fetch("token", [("grant_type", "authorization_code"), ("code", self._code),
                                               ("redirect_uri", self.settings.redirect_uri),
                                               ("code_verifier", self._verifier), ("resource", self.resource)])
        if self.phase == "refresh":
            assert self.grant is not None and self.grant.refresh_token
            return self._token_fetch("refresh", [("grant_type", "refresh_token"),
                                                 ("refresh_token", self.grant.refresh_token),
                                                 ("resource", self.resource)])
        raise RuntimeError(f"no command is pending in phase {self.phase!r}")

    @property
    def step(self) -> Step | None:
        return self.steps[-1] if self.steps else None

    # --- answers ---------------------------------------------------------------------------------------------

    def fetched(self, answer: Answer) -> Command:
        step = self.steps[-1]
        if answer.exchange:
            step.exchanges.append(answer.exchange)
        handler = {"resource metadata": self._prm_answer, "server metadata": self._metadata_answer,
                   "registration": self._registration_answer, "token": self._token_answer,
                   "refresh": self._refresh_answer}[self.phase]
        return handler(step, answer)

    def called_back(self, params: dict[str, str]) -> Command:
        """The authorization response: the redirect's query parameters, as the person's browser brought them."""
        self.steps[-1].status = "done"
        step = self._open("callback")
        if params.get("state") != self._state:
            return self._fail(step, "the callback's state is not the one sent (or is missing)", "oauth.state-mismatch",
                              "open the authorization page from this session again; an old or foreign callback "
                              "is never used")
        step.find("state: matches the one sent")
        # The scope the authorization request carried (the settings may have been edited while it paused there).
        self._scope = self._choose_scope()[0]
        supported = (self.metadata or {}).get("authorization_response_iss_parameter_supported") is True
        iss = params.get("iss")
        if iss is not None and iss != self.issuer:
            return self._fail(step, f"the callback's iss {iss!r} is not the issuer {self.issuer!r} the request went "
                              "to (RFC 9207; compared exactly): nothing it says is used, not even an error",
                              "oauth.iss-mismatch", "a mix-up attack, or an authorization server whose metadata "
                              "names another issuer than it signs with: fix its issuer setting")
        if iss is None and supported:
            return self._fail(step, "the authorization server says it sends iss (authorization_response_iss_"
                              "parameter_supported) but the callback has none", "oauth.iss-missing",
                              "the server must send iss on every authorization response it advertises it on")
        step.find(f"iss: {iss} (matches)" if iss is not None else
                          "iss: absent, and the server does not advertise it: proceed")
        if "error" in params:
            text = params["error"] + (f": {params['error_description']}" if params.get("error_description") else "")
            return self._fail(step, f"the authorization server refused: {text}", "oauth.authorization-refused",
                              "see the authorization server's message; the scopes, the redirect URI and the "
                              "client id are the usual causes")
        code = params.get("code")
        if not code:
            return self._fail(step, "the callback carries neither a code nor an error", "oauth.authorization-refused",
                              "the authorization server's redirect is malformed")
        self._code = code
        self._state = ""  # used once: a second callback with it matches nothing
        step.find("an authorization code (kept for the token request only)")
        step.status = "done"
        self.phase = "token"
        token = self._open("token")
        if self.registration is not None:
            token.decide(f"client authentication: {self.registration.auth_method} (client "
                         f"{self.registration.client_id}, {self.registration.how})")
        return self.pending()

    # --- discovery ----------------------------------------------------------------------------------------------

    def _begin_discovery(self) -> Command:
        self._answered = False
        self.resource = canonical_resource(self.mcp_url)  # until the metadata publishes its own name for it
        self.phase = "resource metadata"
        self._urls = prm_urls(self.mcp_url, self.challenge.resource_metadata if self.challenge else None)
        self._url_index = 0
        step = self._open("resource metadata")
        step.decide("try, in order: " + ", ".join(self._urls))
        return self.pending()

    def _prm_answer(self, step: Step, answer: Answer) -> Command:
        url = self._urls[self._url_index]
        doc = answer.json() if answer.status == 200 else None
        servers = doc.get("authorization_servers") if isinstance(doc, dict) else None
        if not isinstance(servers, list) or not [s for s in servers if isinstance(s, str) and s]:
            step.find(f"{url}: {answer.said()}" + ("" if answer.status != 200 else
                                                             ", but no authorization_servers in it"))
            if answer.status == 200:
                self._find(step, "oauth.prm-invalid", "error", f"{url} answered 200 without a JSON document "
                           "naming authorization_servers", answer.exchange)
            self._url_index += 1
            self._answered = self._answered or answer.status > 0
            if self._url_index < len(self._urls):
                return self.pending()
            if not self._answered:  # no URL answered at all: an outage, not a 2025-03-26 server
                step.status = "failed"
                self.phase = "failed"
                return Failed(step.name, f"no protected resource metadata URL could be reached ({answer.said()})",
                              None, "check that the server is reachable, then connect again")
            self._find(step, "oauth.prm-missing", "warning", "no protected resource metadata at any URL: taking "
                       "the server's origin as its authorization server, as 2025-03-26 servers had it")
            step.decide(f"no metadata: the authorization server is the MCP server's origin "
                                f"{origin(self.mcp_url)} (2025-03-26)")
            step.status = "done"
            self.prm = {}
            return self._begin_server_metadata(origin(self.mcp_url), legacy=True)
        assert isinstance(doc, dict)
        self.prm = doc
        step.find(f"{url} answered: resource {doc.get('resource')!r}, authorization_servers {servers}"
                          + (f", scopes_supported {doc.get('scopes_supported')}" if doc.get("scopes_supported")
                             else ""))
        resource = doc.get("resource")
        if not isinstance(resource, str) or not resource_covers(resource, self.mcp_url):
            return self._fail(step, f"the metadata's resource {resource!r} does not name this server "
                              f"({self.resource}): no authorization request is made for it", "oauth.resource-mismatch",
                              "if that is this very server under another name (localhost for 127.0.0.1, say), "
                              f"connect to {resource!r} as the metadata names it; else the server must publish "
                              "metadata whose resource is its own URL (RFC 9728 §3.3)")
        if resource != self.resource:
            # The identifier goes in the authorization and token requests exactly as the metadata publishes it
            # (an origin where ours has a path, say): the authorization server knows the resource by that name.
            step.decide(f"resource parameter: {resource} (as the metadata publishes it; it covers "
                                f"{canonical_resource(self.mcp_url)})")
            self.resource = resource
        issuer = next(s for s in servers if isinstance(s, str) and s)
        step.decide(f"authorization server: {issuer}" + (f" (the first of {len(servers)})"
                                                                   if len(servers) > 1 else ""))
        step.status = "done"
        return self._begin_server_metadata(issuer, legacy=False)

    def _begin_server_metadata(self, issuer: str, legacy: bool) -> Command:
        if self.issuer is not None and issuer != self.issuer:
            self.registration = None  # credentials are per issuer: a new server means registering anew
        if self.grant is not None and self.grant.issuer != issuer:
            # Nor is another server's grant kept: its tokens are never sent to this one, nor refreshed because of it.
            self.steps[-1].decide(f"a new authorization server: the token from {self.grant.issuer} is dropped")
            self.grant = None
        if issuer != self.issuer:
            self.metadata = None
        self.issuer = issuer
        self.legacy_endpoints = legacy
        self.phase = "server metadata"
        self._urls = [url for url, _kind in server_metadata_urls(issuer)]
        self._url_index = 0
        step = self._open("server metadata")
        step.decide("try, in order: " + ", ".join(self._urls))
        return self.pending()

    def _metadata_answer(self, step: Step, answer: Answer) -> Command:
        url = self._urls[self._url_index]
        doc = answer.json() if answer.status == 200 else None
        if not isinstance(doc, dict):
            step.find(f"{url}: {answer.said()}" + (", not a JSON object" if answer.status == 200 else ""))
            self._url_index += 1
            if self._url_index < len(self._urls):
                return self.pending()
            if self.legacy_endpoints:
                base = origin(self.mcp_url)
                self.metadata = {"issuer": base, "authorization_endpoint": base + "/authorize",
                                 "token_endpoint": base + "/token", "registration_endpoint": base + "/register",
                                 "code_challenge_methods_supported": ["S256"]}
                self._find(step, "oauth.default-endpoints", "warning", "no authorization server metadata: "
                           "using /authorize, /token and /register on the server's origin (2025-03-26 defaults)")
                step.decide(f"endpoints by the 2025-03-26 defaults on {base}")
                step.status = "done"
                return self._begin_registration()
            return self._fail(step, f"no authorization server metadata for {self.issuer} at any of its URLs",
                              "oauth.server-metadata-missing", "publish RFC 8414 or OpenID Connect discovery "
                              "metadata, or set the authorization and token endpoints by hand")
        if doc.get("issuer") != self.issuer:
            return self._fail(step, f"{url} names issuer {doc.get('issuer')!r}, not {self.issuer!r}, the issuer "
                              "its URL was built from", "oauth.metadata-issuer",
                              "the metadata's issuer must be byte-identical to the authorization server's URL")
        methods = doc.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            return self._fail(step, f"{url} does not list S256 in code_challenge_methods_supported "
                              f"({methods!r}): PKCE cannot be checked, so the flow stops", "oauth.pkce-unsupported",
                              "the authorization server must advertise code_challenge_methods_supported with S256")
        self.metadata = doc
        step.find(f"{url} answered: issuer {doc.get('issuer')}, authorization_endpoint "
                          f"{doc.get('authorization_endpoint')}, token_endpoint {doc.get('token_endpoint')}"
                          + (f", registration_endpoint {doc['registration_endpoint']}"
                             if doc.get("registration_endpoint") else ""))
        for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            value = self._endpoint(name)
            if not value and name == "registration_endpoint":
                continue  # optional: without one, the client id comes another way
            if not value:
                return self._fail(step, f"the metadata has no {name}", "oauth.server-metadata-missing",
                                  f"set the {name.replace('_', ' ')} by hand")
            if not is_https(value):
                if not is_loopback(value) or not value.lower().startswith("http://"):
                    return self._fail(step, f"{name} {value} is not https", "oauth.insecure-endpoint",
                                      "authorization server endpoints must use https (loopback hosts excepted "
                                      "for development)")
                self._find(step, "oauth.loopback-http", "note", f"{name} {value} is plain http on a loopback "
                           "host: allowed for development only")
        step.status = "done"
        return self._begin_registration()

    # --- registration -----------------------------------------------------------------------------------------

    def _begin_registration(self) -> Command:
        assert self.issuer is not None and self.metadata is not None
        step = self._open("registration")
        settings, meta = self.settings, self.metadata
        known = self.registrations.get(self.issuer)
        elsewhere = next((r.issuer for r in self.registrations.values() if r.how == "pre-registered"
                          and r.client_id == settings.client_id and r.issuer != self.issuer), None)
        if settings.client_id and elsewhere is not None:
            # Kept with the registrations (so it holds across a restart): a client id is one server's.
            return self._fail(step, f"the pre-registered client id {settings.client_id} was used with "
                              f"{elsewhere}; the server now names {self.issuer}, and a client id is never offered "
                              "to another authorization server", "oauth.no-client",
                              f"register a client with {self.issuer} and set its id (or clear the client id to "
                              "let the console register one)")
        if settings.client_id:
            self.registration = Registration(self.issuer, settings.client_id, settings.client_secret or None,
                                             "pre-registered", self._auth_method(bool(settings.client_secret)),
                                             settings.redirect_uri)
            self.registrations[self.issuer] = self.registration
            step.decide(f"pre-registered client id {settings.client_id} (set by you)"
                                + (", with a client secret" if settings.client_secret else ", no secret"))
        elif known is not None and known.redirect_uri == settings.redirect_uri:
            self.registration = known
            step.decide(f"client {known.client_id}, registered at {self.issuer} before ({known.how})")
        elif meta.get("client_id_metadata_document_supported") is True and settings.client_metadata_url:
            self.registration = Registration(self.issuer, settings.client_metadata_url, None,
                                             "client id metadata document", "none", settings.redirect_uri)
            step.decide(f"the server supports client id metadata documents: client id "
                                f"{settings.client_metadata_url}")
        elif self._endpoint("registration_endpoint"):
            if meta.get("client_id_metadata_document_supported") is True:
                step.find("the server supports client id metadata documents, but no https document URL "
                                  "is set for this client")
            self._dcr_type = settings.application_type or application_type(settings.redirect_uri)
            self._retried_type = False  # one retry per registration, not one per machine
            step.decide(f"dynamic client registration at {self._endpoint('registration_endpoint')} "
                                f"(deprecated in 2026-07-28, but the only way this server offers), "
                                f"application_type {self._dcr_type}")
            self.phase = "registration"
            return self.pending()
        else:
            return self._fail(step, "the authorization server offers no registration endpoint and no client id is "
                              "set", "oauth.no-client", "register a client with the authorization server and "
                              "type its client id (and secret) in the settings, then continue")
        step.status = "done"
        return self._begin_authorization()

    def _registration_body(self) -> dict[str, Any]:
        supported = self._supported_methods()
        method = "none" if "none" in supported else next(
            (m for m in ("client_secret_basic", "client_secret_post") if m in supported), "none")
        return {"client_name": self.settings.client_name, "redirect_uris": [self.settings.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "token_endpoint_auth_method": method, "application_type": self._dcr_type}

    def _registration_answer(self, step: Step, answer: Answer) -> Command:
        doc = answer.json()
        if answer.status in (200, 201) and isinstance(doc, dict) and isinstance(doc.get("client_id"), str):
            assert self.issuer is not None
            secret = doc.get("client_secret") if isinstance(doc.get("client_secret"), str) else None
            method = doc.get("token_endpoint_auth_method")
            if not isinstance(method, str):
                method = self._registration_body()["token_endpoint_auth_method"]
            self.registration = Registration(self.issuer, doc["client_id"], secret, "dynamic registration", method,
                                             self.settings.redirect_uri)
            self.registrations[self.issuer] = self.registration
            step.find(f"registered: client id {doc['client_id']}, token endpoint authentication {method}"
                              + (", with a client secret" if secret else ""))
            step.status = "done"
            return self._begin_authorization()
        error = _error_text(doc) or answer.said()
        if answer.status == 400 and not self._retried_type and not self.settings.application_type:
            # OIDC servers refuse redirect URIs that do not fit the application type: the other type, once.
            self._retried_type = True
            self._dcr_type = "web" if self._dcr_type == "native" else "native"
            step.find(f"refused ({error})")
            step.decide(f"register again with application_type {self._dcr_type}")
            return self.pending()
        return self._fail(step, f"dynamic registration refused: {error}", "oauth.registration-refused",
                          "type a pre-registered client id, or fix the redirect URI or application type")

    # --- authorization and token -----------------------------------------------------------------------------------

    def _begin_authorization(self) -> Command:
        step = self._open("authorization")
        self._verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-], within RFC 7636's 43-128
        self._state = secrets.token_urlsafe(24)
        self._scope, why = self._choose_scope()
        step.decide(f"scope: {self._scope} ({why})" if self._scope else f"no scope parameter ({why})")
        listed: set[str] = set()
        for doc in (self.prm or {}, self.metadata or {}):
            values = doc.get("scopes_supported")
            if isinstance(values, list):
                listed |= {value for value in values if isinstance(value, str)}
        unknown = [s for s in (self._scope or "").split() if listed and s not in listed]
        if unknown:
            step.find(f"note: {', '.join(unknown)} is not among the scopes the metadata lists "
                      f"({', '.join(sorted(listed))}): the authorization server may refuse it")
        step.decide(f"resource: {self.resource}; redirect URI: {self.settings.redirect_uri}")
        self.phase = "authorization"
        return self.pending()

    def _choose_scope(self) -> tuple[str | None, str]:
        if self._step_up_scope:
            scope, why = self._step_up_scope, "step-up: the union of the scopes asked before and those challenged"
        elif self.settings.scope:
            scope, why = self.settings.scope, "set by you"
        elif self.challenge is not None and self.challenge.scope:
            scope, why = self.challenge.scope, "from the challenge's scope"
        elif isinstance((self.prm or {}).get("scopes_supported"), list) and self.prm and self.prm["scopes_supported"]:
            scope = " ".join(s for s in self.prm["scopes_supported"] if isinstance(s, str))
            why = "every scope the resource metadata lists (scopes_supported), the challenge named none"
        else:
            return None, "neither the challenge nor the resource metadata names any scope"
        listed = (self.metadata or {}).get("scopes_supported")
        if self.settings.offline_access and isinstance(listed, list) and "offline_access" in listed \
                and "offline_access" not in scope.split():
            scope, why = scope + " offline_access", why + "; offline_access added: the authorization server lists it"
        return scope, why

    def _authorization_url(self) -> str:
        assert self.registration is not None
        params: list[tuple[str, str]] = [
            ("response_type", "code"), ("client_id", self.registration.client_id),
            ("redirect_uri", self.settings.redirect_uri),
            ("code_challenge", create_s256_code_challenge(self._verifier)), ("code_challenge_method", "S256"),
            ("state", self._state)]
        scope = self._choose_scope()[0]  # from the settings as they are now: pending() after an edit sends it
        if scope:
            params.append(("scope", scope))
        params.append(("resource", self.resource))
        # What the token request repeats (or checks) must not be changed here alone: an extra redirect_uri,
        # resource or client_id made the two requests disagree (RFC 6749 §4.1.3, RFC 8707's consistency).
        fixed = {"state", "code_challenge", "code_challenge_method", "response_type", "client_id", "redirect_uri",
                 "resource"}
        for name, value in self.settings.extra_params.items():
            if name and name not in fixed:
                params = [(n, v) for n, v in params if n != name] + [(name, value)]
        return with_query(self._endpoint("authorization_endpoint"), params)

    def _token_fetch(self, step: str, form: list[tuple[str, str]]) -> Fetch:
        if step == "refresh":
            # A refresh goes to the server that issued the grant, with that server's client only: never to the
            # issuer the latest metadata names (a server switching it would collect the refresh token).
            assert self.grant is not None
            issuer = self.grant.issuer
            registration = self.registrations.get(issuer) or (
                self.registration if self.registration is not None and self.registration.issuer == issuer else None)
            url = self.grant.token_endpoint
        else:
            registration = self.registration
            url = self._endpoint("token_endpoint")
        headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
        if registration is not None:
            if registration.auth_method == "client_secret_basic" and registration.client_secret:
                pair = f"{quote(registration.client_id, safe='')}:{quote(registration.client_secret, safe='')}"
                headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
            else:
                form.append(("client_id", registration.client_id))
                if registration.auth_method == "client_secret_post" and registration.client_secret:
                    form.append(("client_secret", registration.client_secret))
        return Fetch(step, "POST", url, tuple(headers), form=tuple(form))

    def _token_answer(self, step: Step, answer: Answer) -> Command:
        grant = self._grant_from(step, answer, refresh_token=None)
        if not isinstance(grant, Grant):
            return grant or self.abort("the token request gave nothing")
        self._step_up_scope = None
        return self._done(step, grant)

    def _refresh_answer(self, step: Step, answer: Answer) -> Command:
        held = self.grant
        assert held is not None
        grant = self._grant_from(step, answer, refresh_token=held.refresh_token, failing=False)
        if isinstance(grant, Grant):
            return self._done(step, grant)
        step.status = "failed"
        step.decide("the refresh was refused: authorize again")
        self.grant = None
        return self._begin_discovery()

    def _grant_from(self, step: Step, answer: Answer, refresh_token: str | None,
                    failing: bool = True) -> Grant | Failed | None:
        doc = answer.json()
        if answer.status != 200 or not isinstance(doc, dict) or not isinstance(doc.get("access_token"), str):
            error = _error_text(doc) or answer.said()
            step.find(f"refused: {error}")
            if not failing:
                return None
            return self._fail(step, f"the token request was refused: {error}", "oauth.token-refused",
                              "check the client authentication method, the redirect URI and the resource the "
                              "authorization server accepts")
        token_type = doc.get("token_type")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            return self._fail(step, f"token_type {token_type!r} is not Bearer", "oauth.token-invalid",
                              "MCP servers take Bearer tokens only")
        expires = doc.get("expires_in")
        assert self.issuer is not None or self.grant is not None
        issuer = self.issuer or (self.grant.issuer if self.grant else "")
        asked = self._scope or None
        if self.phase == "refresh" and self.grant is not None:
            asked = self.grant.scope  # RFC 6749 §5.1: no scope in the answer means the scope granted before
        grant = Grant(issuer=issuer, resource=self.resource, access_token=doc["access_token"],
                      refresh_token=doc["refresh_token"] if isinstance(doc.get("refresh_token"), str)
                      else refresh_token,
                      expires_at=(time.time() + float(expires)) if isinstance(expires, int | float) else None,
                      scope=doc["scope"] if isinstance(doc.get("scope"), str) else asked,
                      requested=self._scope or (self.grant.requested if self.grant else None),
                      id_token=doc["id_token"] if isinstance(doc.get("id_token"), str) else None,
                      token_endpoint=self._endpoint("token_endpoint") or (self.grant.token_endpoint
                                                                          if self.grant else ""))
        step.find(f"an access token ({'a JWT' if grant.shown()['access_token'] else 'opaque'})"
                          + (f", expires in {float(expires):g} s" if isinstance(expires, int | float) else
                             ", no expiry given")
                          + (", with a refresh token" if isinstance(doc.get("refresh_token"), str) else
                             ", no refresh token")
                          + (f", scope {grant.scope}" if grant.scope else ""))
        return grant

    def _done(self, step: Step, grant: Grant) -> Command:
        step.status = "done"
        self.grant = grant
        self.phase = "done"
        return Done(grant)

    def abort(self, message: str) -> Failed:
        """The person (or the agent that stood in for them) stopped the flow at the current step."""
        step = self.steps[-1] if self.steps else self._open("challenge")
        step.status = "failed"
        self.phase = "failed"
        return Failed(step.name, message)

    # --- helpers ------------------------------------------------------------------------------------------------

    def _endpoint(self, name: str) -> str:
        override = {"authorization_endpoint": self.settings.authorization_endpoint,
                    "token_endpoint": self.settings.token_endpoint}.get(name, "")
        value = override or (self.metadata or {}).get(name)
        return value if isinstance(value, str) else ""

    def _supported_methods(self) -> list[str]:
        listed = (self.metadata or {}).get("token_endpoint_auth_methods_supported")
        # RFC 8414: absent means client_secret_basic
        return [m for m in listed if isinstance(m, str)] if isinstance(listed, list) else ["client_secret_basic"]

    def _auth_method(self, has_secret: bool) -> str:
        supported = self._supported_methods()
        with_secret = {"client_secret_basic", "client_secret_post"} & set(supported)
        if not has_secret or ("none" in supported and not with_secret):
            return "none"  # a secret the server has no method for is not sent at all
        if "client_secret_basic" in supported:
            return "client_secret_basic"
        return "client_secret_post" if "client_secret_post" in supported else "client_secret_basic"

    def _open(self, name: str) -> Step:
        step = Step(name)
        self.steps.append(step)
        return step

    def _find(self, step: Step, rule: str, severity: Literal["error", "warning", "note"], message: str,
              exchange: str | None = None) -> None:
        step.findings.append(AuthFinding(rule, severity, message, exchange or (step.exchanges[-1]
                                                                                if step.exchanges else None)))

    def _fail(self, step: Step, message: str, rule: str, fix: str) -> Failed:
        step.status = "failed"
        step.fix = fix
        self._find(step, rule, "error" if rule != "oauth.step-up-limit" else "warning", message)
        self.phase = "failed"
        return Failed(step.name, message, rule, fix)


def union(first: str, second: str) -> str:
    """Two space-separated scope lists as one, in order, each scope once."""
    return " ".join(dict.fromkeys(first.split() + second.split()))


def _error_text(doc: Any) -> str:
    if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
        return ""
    text = str(doc["error"])
    if isinstance(doc.get("error_description"), str):
        text += f": {doc['error_description'][:300]}"
    return text


# The machine's vocabulary lives in app/mcp/oauth/steps.py; named here too for whoever imports it with the machine.
__all__ = ["MAX_BODY", "TITLES", "Answer", "AuthFinding", "AuthMachine", "Authorize", "Command", "Done", "Failed",
           "Fetch", "Settings", "Step", "union"]


def application_type(redirect_uri: str) -> str:
    """The DCR application_type for a redirect URI: native for a literal loopback host (localhost, 127.0.0.1,
    [::1]), as desktop and command-line clients are; web otherwise, a `*.localhost` name included (OpenID providers
    take http loopback redirects for native clients only on those literal hosts; the console's own host name is
    a `*.localhost` one, served like a web app)."""
    host = (urlsplit(redirect_uri).hostname or "").lower()
    return "native" if host in ("localhost", "127.0.0.1", "::1") else "web"
