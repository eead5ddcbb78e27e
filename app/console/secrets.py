"""Masking credentials for viewers, presenter mode and exports (the owner may opt in to see them)."""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "••••••"
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


def mask_headers(headers: list[list[str]] | list[tuple[str, str]] | None) -> list[list[str]] | None:
    if headers is None:
        return None
    return [[k, mask_value(k, v) if is_secret(k) else v] for k, v in headers]


def mask_url(url: str) -> str:
    """Hide credential-looking query parameters and userinfo in a URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = urlencode([(k, MASK if is_secret(k) or k.lower() in ("key", "sig", "code") else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="•")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_wire(event: dict[str, Any]) -> dict[str, Any]:
    """A wire event as a viewer may see it."""
    if not event.get("headers"):
        return event
    return {**event, "headers": mask_headers(event["headers"])}


def mask_argv(argv: list[str]) -> str:
    """A command line for display: values of credential-looking flags and NAME=value pairs masked."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        name, sep, _value = arg.partition("=")
        if sep and is_secret(name.lstrip("-")):
            out.append(f"{name}={MASK}")
        elif arg.startswith("-") and is_secret(arg.lstrip("-")):
            out.append(arg)
            hide_next = True
        else:
            out.append(arg)
    # Quoted as a shell would need it, so the shown command pastes back; masks stay readable as masks.
    return " ".join(arg if MASK in arg else shlex.quote(arg) for arg in out)
