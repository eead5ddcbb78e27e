"""What an OAuth flow leaves behind: a client registered at an authorization server, and a grant of tokens.

Both are kept per authorization server `issuer` (a client id of one server is never offered to another, and a
server named anew means registering anew). They hold secrets: whoever stores them keeps them in the owner-only
place; `shown()` is what may be displayed to anyone (never a token, a secret or a JWT signature).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError

from app.mcp.jsonrpc import clipped


@dataclass(slots=True)
class Registration:
    issuer: str
    client_id: str
    client_secret: str | None = None
    how: str = "pre-registered"   # pre-registered | client id metadata document | dynamic registration
    auth_method: str = "none"     # the token endpoint's client authentication
    redirect_uri: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Registration:
        return cls(**{k: data[k] for k in cls.__slots__ if k in data})


@dataclass(slots=True)
class Grant:
    issuer: str
    resource: str
    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    expires_at: float | None = None   # wall clock
    scope: str | None = None          # granted, as the token answer said (else what was asked)
    requested: str | None = None      # what the authorization request asked for
    id_token: str | None = None
    token_endpoint: str = ""          # where a refresh goes (the flow may be long gone by then)
    obtained_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grant:
        return cls(**{k: data[k] for k in cls.__slots__ if k in data})

    def expires_in(self, now: float | None = None) -> float | None:
        return None if self.expires_at is None else self.expires_at - (now if now is not None else time.time())

    def shown(self) -> dict[str, Any]:
        """What anyone may see of the grant: issuer, scopes, expiry, whether a refresh token is held, and the
        access and ID tokens decoded when they are JWTs (header and claims, never the signature)."""
        return {"issuer": self.issuer, "resource": self.resource, "token_type": self.token_type,
                "scope": self.scope, "requested": self.requested, "expires_at": self.expires_at,
                "obtained_at": self.obtained_at, "refresh_token": self.refresh_token is not None,
                "access_token": _shown_jwt(self.access_token),
                "id_token": _shown_jwt(self.id_token) if self.id_token else None}

    def secrets(self) -> list[str]:
        """Every value of the grant a server must never see said back to a link holder."""
        return [v for v in (self.access_token, self.refresh_token, self.id_token) if v]


TIME_CLAIMS = ("iat", "exp", "nbf", "auth_time")


def _shown_jwt(token: str) -> dict[str, Any] | None:
    """A JWT decoded for showing: clipped where a server nested it past what a page can encode (a token is a server's
    value too), and its time claims also as UTC times (an epoch number is no reading aid)."""
    decoded = decoded_jwt(token)
    if decoded is None:
        return None
    shown: dict[str, Any] = clipped(decoded)
    claims = shown.get("claims")
    if isinstance(claims, dict):
        shown["times"] = {name: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(claims[name]))
                          for name in TIME_CLAIMS if isinstance(claims.get(name), int | float)
                          and not isinstance(claims.get(name), bool) and 0 <= claims[name] < 2**33}
    return shown


def decoded_jwt(token: str) -> dict[str, Any] | None:
    """A JWT's header and claims, read without checking the signature (a client shows them; the resource server
    is the one that verifies), by joserfc's compact parser. None for an opaque token or anything that does not
    decode to two JSON objects."""
    if token.count(".") != 2:
        return None
    try:
        compact = jws.extract_compact(token.encode("ascii"))
        header, claims = compact.headers(), json.loads(compact.payload)
    except (JoseError, ValueError, UnicodeError, TypeError, RecursionError):  # claims nested past the parser
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return {"header": dict(header), "claims": claims}
