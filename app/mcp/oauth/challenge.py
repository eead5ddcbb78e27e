"""The `WWW-Authenticate` challenge of a refused MCP request (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

A header may carry several challenges (`Basic realm="x", Bearer scope="a b"`) and a response several headers;
only the Bearer one matters to an MCP client. Parsed by hand because the grammar is small and a server's
malformed header must still give whatever it did say (a debugging console shows what came, never raises on it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
MAX_HEADER = 8192  # a challenge longer than this is cut: nothing legitimate needs more


@dataclass(frozen=True, slots=True)
class Challenge:
    """What a refused request said: its status, and the Bearer challenge's parameters (lowercased names)."""

    status: int
    params: dict[str, str] = field(default_factory=dict)
    raw: str = ""          # the WWW-Authenticate header(s) as they came, joined
    bearer: bool = False   # a Bearer challenge was there at all
    exposed: bool = True   # Access-Control-Expose-Headers lets a browser read WWW-Authenticate

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata") or None

    @property
    def scope(self) -> str | None:
        value = self.params.get("scope", "").strip()
        return value or None

    @property
    def error(self) -> str | None:
        return self.params.get("error") or None

    @property
    def insufficient_scope(self) -> bool:
        return self.status == 403 and self.error == "insufficient_scope"

    def describe(self) -> str:
        said = f"WWW-Authenticate: {self.raw}" if self.raw else "no WWW-Authenticate challenge"
        return f"HTTP {self.status} ({said})"


def parse_challenges(value: str) -> list[tuple[str, dict[str, str]]]:
    """Every challenge in one header value: (scheme lowercased, params with lowercased names). The value is split at
    the commas outside quotes; an item `Scheme name=value` (or a lone `Scheme`) opens a challenge, `name=value`
    adds to the open one. A token68 (`Negotiate abc==`) is kept under the empty name."""
    out: list[tuple[str, dict[str, str]]] = []
    for item in _items(value[:MAX_HEADER]):
        head = _TOKEN.match(item)
        if head is None:
            continue  # not a token: nothing a client can use
        rest = item[head.end():]
        if rest.lstrip(" \t").startswith("=") and out and not rest.lstrip(" \t").startswith("=="):
            name, val = _param(item)
            out[-1][1][name] = val
            continue
        params: dict[str, str] = {}
        out.append((head.group().lower(), params))
        rest = rest.strip(" \t")
        if not rest:
            continue
        named = _TOKEN.match(rest)
        after = rest[named.end():].lstrip(" \t") if named is not None else ""
        # `name=value` is a parameter; `abc=` and `abc==` (padding, nothing after it) are a token68
        if named is not None and after.startswith("=") and not after.startswith("==") and after[1:].strip(" \t"):
            name, val = _param(rest)
            params[name] = val
        else:
            params[""] = rest
    return out


def _items(text: str) -> list[str]:
    """The value split at commas outside quoted strings, each item stripped."""
    items: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            items.append("".join(current).strip(" \t"))
            current = []
            continue
        current.append(char)
    items.append("".join(current).strip(" \t"))
    return [item for item in items if item]


def _param(item: str) -> tuple[str, str]:
    """`name = value` or `name="quoted \\" value"`: the lowercased name and the unescaped value."""
    name, _, value = item.partition("=")
    value = value.strip(" \t")
    if value.startswith('"'):
        value = _unquote(value)
    return name.strip(" \t").lower(), value


def _unquote(text: str) -> str:
    """A quoted-string's value (an unterminated one runs to the end: kept, not thrown away)."""
    out: list[str] = []
    pos = 1
    while pos < len(text):
        char = text[pos]
        if char == "\\" and pos + 1 < len(text):
            out.append(text[pos + 1])
            pos += 2
            continue
        if char == '"':
            break
        out.append(char)
        pos += 1
    return "".join(out)


def bearer_challenge(status: int, headers: list[tuple[str, str]]) -> Challenge:
    """The Bearer challenge among a response's WWW-Authenticate headers (status kept, params empty without one)."""
    values = [v for n, v in headers if n.lower() == "www-authenticate"]
    raw = ", ".join(values)[:MAX_HEADER]
    exposed = any(item.strip().lower() in ("www-authenticate", "*") for n, v in headers
                  if n.lower() == "access-control-expose-headers" for item in v.split(","))
    for value in values:
        for scheme, params in parse_challenges(value):
            if scheme == "bearer":
                return Challenge(status, dict(params), raw, True, exposed)
    return Challenge(status, {}, raw, False, exposed)
