"""What the OAuth machine (app/mcp/oauth/machine.py) takes and gives: its settings, its commands (fetch this,
send the person there, done, failed), the answers it is fed, and the steps it tells about.

Plain data, no logic beyond how a step is shown: the console and the command line read these, the machine makes
them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from app.mcp.oauth.grant import Grant

StepName = Literal["challenge", "resource metadata", "server metadata", "registration", "authorization",
                   "callback", "token", "refresh"]
TITLES: dict[str, str] = {
    "challenge": "The server's challenge", "resource metadata": "Protected resource metadata (RFC 9728)",
    "server metadata": "Authorization server metadata (RFC 8414 / OIDC)", "registration": "Client registration",
    "authorization": "Authorization request (PKCE S256)", "callback": "Authorization response",
    "token": "Token request", "refresh": "Token refresh"}
MAX_BODY = 64 * 1024  # a metadata document or token answer larger than this is not read as one


@dataclass(slots=True)
class Settings:
    """What the person (or the command line) may set before any step; empty means "as the specification says"."""

    redirect_uri: str
    client_id: str = ""
    client_secret: str = ""
    client_metadata_url: str = ""  # an https client id metadata document to use where the server supports them
    scope: str = ""
    extra_params: dict[str, str] = field(default_factory=dict)  # e.g. audience, login_hint, kc_idp_hint
    authorization_endpoint: str = ""
    token_endpoint: str = ""
    client_name: str = "MCP Console"
    application_type: str = ""  # native | web; empty: native for a loopback redirect URI, web otherwise
    offline_access: bool = True  # ask for offline_access when the authorization server lists it
    max_step_ups: int = 3


@dataclass(frozen=True, slots=True)
class Fetch:
    step: str
    method: Literal["GET", "POST"]
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    form: tuple[tuple[str, str], ...] | None = None
    json: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Authorize:
    """Send the person to `url`; report the callback's query parameters with `called_back`."""

    step: str
    url: str
    redirect_uri: str
    state: str


@dataclass(frozen=True, slots=True)
class Done:
    grant: Grant


@dataclass(frozen=True, slots=True)
class Failed:
    step: str
    message: str
    rule: str | None = None
    fix: str = ""


Command = Fetch | Authorize | Done | Failed


@dataclass(slots=True)
class Answer:
    """An HTTP answer as the driver read it (headers as sent, body as text, cut at MAX_BODY), or why none came."""

    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: str = ""
    problem: str | None = None
    exchange: str | None = None

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def said(self) -> str:
        return self.problem or f"HTTP {self.status}"


@dataclass(slots=True)
class AuthFinding:
    rule: str
    severity: Literal["error", "warning", "note"]
    message: str
    exchange: str | None = None


@dataclass(slots=True)
class Step:
    name: str
    status: Literal["running", "done", "failed"] = "running"
    found: list[str] = field(default_factory=list)
    decided: list[str] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)  # ("found" | "decided", text), in the order said
    exchanges: list[str] = field(default_factory=list)
    findings: list[AuthFinding] = field(default_factory=list)
    fix: str = ""

    def find(self, text: str) -> None:
        self.found.append(text)
        self.lines.append(("found", text))

    def decide(self, text: str) -> None:
        self.decided.append(text)
        self.lines.append(("decided", text))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": TITLES.get(self.name, self.name), "status": self.status,
                "lines": [list(line) for line in self.lines], "exchanges": list(self.exchanges),
                "findings": [{"rule": f.rule, "severity": f.severity, "message": f.message, "exchange": f.exchange}
                             for f in self.findings], "fix": self.fix}
