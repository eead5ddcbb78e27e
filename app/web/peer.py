"""A request one console process of a team forwards to another, signed with the team key.

The forwarding process has identified the caller; the owner must believe who it says the caller is, and nobody
else may say it. The owner token cannot be that proof: every owner's browser holds it, and a forged registration
in Redis once made a process send it to an address of the attacker's choosing. So a forwarded request carries
`X-MCP-Console-Peer: v1;<from>;<to>;<time>;<nonce>;<signature>` beside `X-MCP-Console-Principal`, the signature
made with the team key over the method, path, query, principal, both process ids, the time, the nonce and the
body's SHA-256. The receiver checks that it is the `<to>`, that the time is within `MAX_SKEW_S` of its own clock
and that it has not seen the nonce in that window (a recorded request cannot be replayed), and the signature.

The answer comes back signed too (`X-MCP-Console-Peer-Answer`: the nonce, the status, the headers passed on and
the body's SHA-256), and only the headers of `ANSWER_HEADERS` are passed on to the caller: whatever answers at
an owner's address must be the owner, or its answer (a cookie, a redirect, a page) never reaches the browser.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from app.console.team_key import TeamKey

PEER_HEADER = "x-mcp-console-peer"
PRINCIPAL_HEADER = "x-mcp-console-principal"
ANSWER_HEADER = "x-mcp-console-peer-answer"
# What of an owner's answer reaches the caller (an action's answer: a fragment or JSON, htmx's instructions, a
# redirect after a delete). No cookie: no forwarded action sets one. No Vary or Cache-Control: the middleware outside
# the routing adds them, on the owner and again here.
ANSWER_HEADERS = frozenset({"content-type", "location"})
MAX_SKEW_S = 30.0
NONCES_KEPT = 100_000  # past this many in the window, the oldest are forgotten (each is a few dozen bytes)


def passed_on(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers of an owner's answer that reach the caller, names lower-cased, in order."""
    return [(name.lower(), value) for name, value in headers
            if name.lower() in ANSWER_HEADERS or name.lower().startswith("hx-")]


def answer_signature(key: TeamKey, nonce: str, status: int, headers: list[tuple[str, str]], body: bytes) -> str:
    canonical = "\n".join(f"{name}: {value}" for name, value in passed_on(headers))
    return key.sign("peer", "answer", nonce, status, canonical, hashlib.sha256(body).hexdigest())


def answer_proven(key: TeamKey, nonce: str, status: int, headers: list[tuple[str, str]], body: bytes) -> bool:
    """Whether an owner's answer (its headers include the signature) is the answer to the request of `nonce`."""
    given = next((v for k, v in headers if k.lower() == ANSWER_HEADER), None)
    canonical = "\n".join(f"{name}: {value}" for name, value in passed_on(headers))
    return key.verify("peer", given, "answer", nonce, status, canonical, hashlib.sha256(body).hexdigest())


def nonce_of(headers: list[tuple[str, str]]) -> str:
    """The nonce of a request `peer_headers` signed."""
    value = next(v for k, v in headers if k == PEER_HEADER)
    return value.split(";")[4]


def peer_headers(key: TeamKey, sender: str, receiver: str, method: str, path: str, query: str, principal: str,
                 body: bytes, now: float | None = None) -> list[tuple[str, str]]:
    stamp = f"{time.time() if now is None else now:.3f}"
    nonce = secrets.token_hex(12)
    signature = key.sign("peer", method, path, query, principal, sender, receiver, stamp, nonce,
                         hashlib.sha256(body).hexdigest())
    return [(PEER_HEADER, f"v1;{sender};{receiver};{stamp};{nonce};{signature}"), (PRINCIPAL_HEADER, principal)]


@dataclass(frozen=True, slots=True)
class Verdict:
    principal: str | None  # the principal header's value, when the request is proven
    problem: str = ""
    nonce: str = ""  # the proven request's, which its answer's signature names


class PeerCheck:
    """Checks forwarded requests arriving at one process (`process_id`)."""

    def __init__(self, key: TeamKey | None, process_id: str, clock: Callable[[], float] = time.time) -> None:
        self.key, self.process_id, self.clock = key, process_id, clock
        self._nonces: OrderedDict[str, float] = OrderedDict()  # nonce -> when it may be forgotten

    def verify(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Verdict:
        try:
            return self._verify(method, path, query, headers, body)
        except Exception:  # whatever the headers hold, a refusal, never a crash
            return Verdict(None, "the request's peer headers are unreadable")

    def _verify(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Verdict:
        if self.key is None:
            return Verdict(None, "this console is no member of a team")
        fields = headers.get(PEER_HEADER, "").split(";")
        principal = headers.get(PRINCIPAL_HEADER)
        if len(fields) != 6 or fields[0] != "v1" or principal is None:
            return Verdict(None, "the request is not signed as a team's forwarded request")
        _, sender, receiver, stamp, nonce, signature = fields
        if receiver != self.process_id:
            return Verdict(None, "the request was signed for another console process")
        try:
            sent = float(stamp)
        except ValueError:
            return Verdict(None, "the request's time is unreadable")
        now = self.clock()
        if not abs(now - sent) <= MAX_SKEW_S:
            return Verdict(None, f"the request's time is more than {MAX_SKEW_S:g} s from this process's clock")
        if not self.key.verify("peer", signature, method, path, query, principal, sender, receiver, stamp, nonce,
                               hashlib.sha256(body).hexdigest()):
            return Verdict(None, "the request's signature does not hold")
        self._forget_old(now)
        if nonce in self._nonces:
            return Verdict(None, "the request was already received once (a replay)")
        self._nonces[nonce] = now + 2 * MAX_SKEW_S
        return Verdict(principal, nonce=nonce)

    def _forget_old(self, now: float) -> None:
        while self._nonces and (len(self._nonces) >= NONCES_KEPT or next(iter(self._nonces.values())) < now):
            self._nonces.popitem(last=False)
