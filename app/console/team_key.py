"""The team secret: what the console processes of one deployment prove to each other, and nothing else does.

Anything that can reach Redis can write to it, and on a team deployment that includes every stdio server a
console starts (code the console must treat as hostile). So nothing read from Redis is believed on its word:
- a process registration (`proc:<id>` → its internal URL) carries a signature, and a process forwards actions
  only to a registration whose signature holds (a forged one would receive the caller's action);
- every bus message and every entry of a session's stream carries one (a forged event would be folded into
  the replicas and pushed to the owner's tabs);
- a request forwarded from one process to another carries one over its method, path, query, body, the
  principal it acts for, its target process and a time (a forwarded request no longer carries the owner token).

The secret itself (setting `team_secret`) is given to each process by its environment. It is never written to
Redis or PostgreSQL, never sent to Redis as a script argument (Redis's MONITOR would show it), and never passed
to a started server. Each purpose signs with its own key derived from it, so a signature made for one purpose
(a bus message) is never valid for another (a forwarded request).

HMAC-SHA256 over the parts, each length-prefixed so no two different lists of parts sign the same bytes.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

Purpose = Literal["proc", "bus", "ev", "peer"]
MIN_SECRET_CHARS = 32


def secret_problem(secret: str, token: str | None) -> str | None:
    """Why a team secret is refused (None when it is fine)."""
    if not secret:
        return (f"team_secret (MCP_CONSOLE_TEAM_SECRET) is not set: a team needs one of at least {MIN_SECRET_CHARS} "
                "random characters, the same on every console process of the deployment (e.g. `openssl rand -hex "
                "32`), and never the owner token.")
    if len(secret) < MIN_SECRET_CHARS:
        return (f"team_secret (MCP_CONSOLE_TEAM_SECRET) is {len(secret)} characters long; a team needs one of at "
                f"least {MIN_SECRET_CHARS} random characters, the same on every console process of the deployment "
                "(e.g. `openssl rand -hex 32`).")
    if token is not None and hmac.compare_digest(secret.encode(), token.encode()):
        return ("team_secret must not be the owner token: every browser of the owner holds the token, the secret "
                "must stay between the console processes.")
    return None


def _raw(text: str) -> bytes:
    """Any text as bytes: what Redis hands back is decoded with surrogateescape (so a forged value of any bytes is
    still a string), and a hostile header may hold any latin-1; neither may make a check raise."""
    return text.encode("utf-8", "surrogatepass")


def _encode(parts: tuple[str | int, ...]) -> bytes:
    out = bytearray()
    for part in parts:
        raw = _raw(str(part))
        out += len(raw).to_bytes(8, "big") + raw
    return bytes(out)


class TeamKey:
    """Signs and checks for one deployment. `str()` and `repr()` never show the secret."""

    __slots__ = ("_keys",)

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("a team key needs the team secret")
        root = secret.encode("utf-8")
        self._keys = {purpose: hmac.new(root, b"mcp-console team key\0" + purpose.encode(), hashlib.sha256).digest()
                      for purpose in ("proc", "bus", "ev", "peer")}

    def sign(self, purpose: Purpose, *parts: str | int) -> str:
        return hmac.new(self._keys[purpose], _encode(parts), hashlib.sha256).hexdigest()

    def verify(self, purpose: Purpose, signature: object, *parts: str | int) -> bool:
        """Whether `signature` is this key's for these parts. Never raises, whatever `signature` holds (compare_digest
        refuses text that is not ASCII, and one such bus message once stopped every process's reader)."""
        if not isinstance(signature, str) or not signature:
            return False
        return hmac.compare_digest(self.sign(purpose, *parts).encode("ascii"), _raw(signature))

    def __repr__(self) -> str:
        return "TeamKey(••••••)"

    __str__ = __repr__
