"""Checking a bearer token the way a resource server must (RFC 9068, RFC 8707): a JWT signed by the issuer's key.

`IssuerKeys` finds the issuer's `jwks_uri` in its discovery document and caches the key set, fetching it again when
a token names a key it does not hold (the issuer rotated its keys, or restarted with new ones). `check_token` turns
a token into its granted scopes or a `TokenRejected` whose message is safe to send back: it never quotes the token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import ExpiredTokenError, InvalidClaimError, JoseError, MissingClaimError
from joserfc.jwk import KeySet

FETCH_TIMEOUT_S = 5.0
# A token naming an unknown key makes us fetch the key set again, but not more often than this: otherwise anyone
# could make the demo hammer its issuer by sending tokens with made-up key ids.
REFETCH_INTERVAL_S = 5.0
ALGORITHMS = ["RS256"]
# RFC 9068 §2.1: a JWT access token says so in its header, which keeps an ID token from passing as one.
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})


class TokenRejected(Exception):
    """The token is not one this server accepts; the message says why, without quoting it."""


class IssuerUnreachable(Exception):
    """The issuer's discovery document or key set could not be fetched, so no token can be checked."""


@dataclass(frozen=True)
class Grant:
    """What a valid token allows: its subject and its scopes."""

    subject: str
    scopes: frozenset[str]


class IssuerKeys:
    """The issuer's signing keys, fetched once and again when a token names a key not among them."""

    def __init__(self, issuer: str, refetch_interval: float = REFETCH_INTERVAL_S) -> None:
        self.issuer = issuer
        self.refetch_interval = refetch_interval
        self._keys: KeySet | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def key_for(self, kid: str | None) -> Any:
        async with self._lock:
            if self._keys is None or (not _holds(self._keys, kid)
                                      and time.monotonic() - self._fetched_at >= self.refetch_interval):
                self._keys = await self._fetch()
                self._fetched_at = time.monotonic()
            keys = self._keys
        if not _holds(keys, kid):
            raise TokenRejected("the token is signed with a key the issuer does not publish")
        return keys.get_by_kid(kid)

    async def _fetch(self) -> KeySet:
        discovery = self.issuer.rstrip("/") + "/.well-known/oauth-authorization-server"
        try:
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_S) as client:
                metadata = (await client.get(discovery)).raise_for_status().json()
                jwks_uri = metadata.get("jwks_uri") if isinstance(metadata, dict) else None
                if not isinstance(jwks_uri, str):
                    raise IssuerUnreachable(f"{discovery} names no jwks_uri")
                document = (await client.get(jwks_uri)).raise_for_status().json()
            return KeySet.import_key_set(document)
        except (httpx.HTTPError, ValueError, JoseError) as exc:
            raise IssuerUnreachable(f"cannot fetch the signing keys of {self.issuer}: {exc}") from exc


def _holds(keys: KeySet, kid: str | None) -> bool:
    return any(key.kid == kid for key in keys.keys) or (kid is None and len(keys.keys) == 1)


async def check_token(token: str, keys: IssuerKeys, audience: str) -> Grant:
    """The grant of a JWT access token whose signature, issuer, audience and lifetime all check out."""
    try:
        header = jws.extract_compact(token.encode("ascii")).headers()
    except (JoseError, ValueError, UnicodeError) as exc:
        raise TokenRejected("the token is not a JWT") from exc
    if str(header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
        raise TokenRejected("the token is not a JWT access token (typ at+jwt)")
    kid = header.get("kid")
    key = await keys.key_for(kid if isinstance(kid, str) else None)
    try:
        claims = jwt.decode(token, key, algorithms=ALGORITHMS).claims
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": keys.issuer},
            aud={"essential": True, "value": audience},
            exp={"essential": True},
            sub={"essential": True},
        ).validate(claims)
    except ExpiredTokenError as exc:
        raise TokenRejected("the token has expired") from exc
    except InvalidClaimError as exc:
        raise TokenRejected(f"the token's {exc.claim} claim is not {_expected(exc.claim, keys, audience)}") from exc
    except MissingClaimError as exc:
        raise TokenRejected(f"the token lacks a claim this server needs ({exc.description})") from exc
    except (JoseError, ValueError) as exc:
        raise TokenRejected("the token's signature does not verify") from exc
    return Grant(subject=str(claims["sub"]), scopes=scopes_of(claims))


def _expected(claim: str, keys: IssuerKeys, audience: str) -> str:
    return {"iss": keys.issuer, "aud": audience}.get(claim, "valid")


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The `scope` claim (RFC 9068 §2.2.3: space-separated), or no scope when it is absent or malformed."""
    scope = claims.get("scope")
    return frozenset(scope.split()) if isinstance(scope, str) else frozenset()
