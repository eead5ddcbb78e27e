"""Masking by name, for what the *server* sends back and for URLs the console did not type.

The target's own secret values are explicit (app/console/secrecy.py), held as `Secret`s and masked in everything
recorded (app/console/scrub.py). What is left is what no one typed: a header the server sends under a credential's
name (Set-Cookie, a token), masked by what it is called for whoever may not see secrets, and a 2024-11-05 endpoint's
`?sessionId=`, which binds a POST to the server's stream as Mcp-Session-Id does.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.mcp.secret import MASK

_EXACT = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
                    "x-auth-token", "x-access-token"})
_WORDS = ("token", "secret", "api-key", "apikey", "api_key", "password", "passwd", "credential", "session")


def is_secret(name: str) -> bool:
    lowered = name.lower()
    return lowered in _EXACT or any(word in lowered for word in _WORDS)


def mask_value(name: str, value: str) -> str:
    if name.lower() in ("authorization", "proxy-authorization") and " " in value:
        return value.split(" ", 1)[0] + " " + MASK  # keep the scheme: "Bearer ••••••" still explains itself
    return MASK


def mask_headers(headers: list[Any]) -> list[Any]:
    """[name, value] headers with a credential-named one's value masked; anything else in the list (an imported
    file's) masked whole: it raised in the middle of a masked export or a viewer's entry."""
    return [_masked_pair(pair) for pair in headers]


def mask_url(url: str) -> str:
    """Every query value and any userinfo in a URL masked; scheme, host, path and parameter names stay."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    # Names stay as typed (they say what the URL is for); every value goes, whatever it is called.
    query = "&".join(part.partition("=")[0] + ("=" + MASK if "=" in part else "")
                     for part in parts.query.split("&")) if parts.query else ""
    fragment = MASK if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def mask_wire(event: dict[str, Any]) -> dict[str, Any]:
    """A wire event with credential-named headers masked (the layer for what the server sends back), and the
    query values of the URL a request went to (the 2024-11-05 endpoint's `?sessionId=` binds a POST to its
    stream, a credential as Mcp-Session-Id is)."""
    url = event.get("url")
    if url:
        event = {**event, "url": mask_url(url) if type(url) is str else MASK}
    headers = event.get("headers")
    if not headers:
        return event
    if type(headers) is not list:  # a stored event of an imported file may hold anything here: nothing of it shown
        return {**event, "headers": MASK}
    return {**event, "headers": mask_headers(headers)}


def _masked_pair(pair: Any) -> Any:
    if type(pair) in (list, tuple) and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is str:
        name, value = pair
        return [name, mask_value(name, value) if is_secret(name) else value]
    return MASK
