"""The target server of a session: a Streamable HTTP URL with headers, or a stdio command line.

The values the owner typed that are secret (app/console/secrecy.py) are held as `Secret`s: every display, event,
page and log line made from a target shows their masks, and only the transports reveal them. What the event log
records is `to_dict()` (the masks and which slots are secret); the values themselves are `secret_values()`, kept
by the store in its owner-only place, and `target_from` puts the two back together.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, unquote_plus, urlsplit

from app.console import secrecy
from app.mcp.secret import MASK, Secret, header_masks, reveal

# "sse-2024": 2025-11-25 messages over the older HTTP+SSE transport (2024-11-05), for servers that only have it.
Era = Literal["auto", "modern", "legacy", "sse-2024"]
ERAS: tuple[Era, ...] = ("auto", "modern", "legacy", "sse-2024")

Value = str | Secret


def readable_quote(arg: str) -> str:
    """One argument as a shell reads it back, quoted the way a person would write it: `shlex.quote` alone turns
    `print('hi')` into `'print('"'"'hi'"'"')'`, which is exact but unreadable in a title."""
    quoted = shlex.quote(arg)
    if quoted == arg or "'" not in arg:
        return quoted
    if not any(c in arg for c in '"\\$`!'):
        return f'"{arg}"'  # inside double quotes only " \\ $ ` (and ! interactively) are special
    return quoted


def _short_path(arg: str) -> str:
    """`/usr/bin/node` → `node`; a longer path keeps its last three segments."""
    if "/" not in arg or arg.startswith("-") or "://" in arg:
        return arg
    parts = [p for p in arg.split("/") if p]
    if arg.startswith("/") and len(parts) == 3 and parts[1] == "bin":
        return parts[-1]
    return arg if len(parts) <= 3 else "…/" + "/".join(parts[-3:])


@dataclass(slots=True)
class Target:
    kind: Literal["http", "stdio"]
    url: Value = ""
    headers: dict[str, Value] = field(default_factory=dict)
    argv: list[Value] = field(default_factory=list)
    cwd: Value | None = None
    # Which revision to speak: auto probes server/discover and falls back to initialize.
    era: Era = "auto"
    # The slots (app/console/secrecy.py) that are secret; None when made: the credential-shaped ones.
    secret: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self.seal(self.secret)

    def seal(self, secret: Iterable[str] | None) -> None:
        """Hold exactly the slots in `secret` as secrets (None: the defaults), every other value plain."""
        url, headers = reveal(self.url), {k: reveal(v) for k, v in self.headers.items()}
        argv, cwd = [reveal(a) for a in self.argv], None if self.cwd is None else reveal(self.cwd)
        slots = self.slots()
        known = {s.id for s in slots}
        chosen = frozenset(s.id for s in slots if s.default) if secret is None else frozenset(secret) & known
        chosen |= _holding_a_secret(url, headers, argv, cwd, chosen)
        self.secret = chosen
        url_secret = frozenset(s for s in chosen if s in ("userinfo", "path") or s.startswith("query:"))
        self.url = Secret(url, secrecy.masked_url(url, url_secret)) if url_secret else url
        self.headers = {k: Secret(v, secrecy.mask_header(k, v)) if f"header:{k}" in chosen else v
                        for k, v in headers.items()}
        first_assignment, program, _ = secrecy.command_parts(argv)
        self.argv = [Secret(a, secrecy.masked_arg(a)) if _arg_slot(a, i, first_assignment, program) in chosen else a
                     for i, a in enumerate(argv)]
        self.cwd = Secret(cwd, MASK) if cwd is not None and "cwd" in chosen else cwd

    def slots(self) -> list[secrecy.Slot]:
        """Every value the owner typed, named, with whether it is secret by default."""
        if self.kind == "http":
            return secrecy.url_slots(reveal(self.url)) + [
                secrecy.Slot(f"header:{k}", f"header {k}", secrecy.credential_name(k)) for k in self.headers]
        found = secrecy.argv_slots([reveal(a) for a in self.argv])
        return found + ([secrecy.Slot("cwd", "working directory", False)] if self.cwd else [])

    def typed(self) -> dict[str, str]:
        """Each slot's value as typed, for the owner's own connect form (never for a display others see)."""
        return _slot_values(reveal(self.url), {k: reveal(v) for k, v in self.headers.items()},
                            [reveal(a) for a in self.argv], None if self.cwd is None else reveal(self.cwd))

    def describe(self) -> str:
        """The target for its owner: every value as typed, pasteable back into a shell."""
        return reveal(self.url) if self.kind == "http" else " ".join(readable_quote(reveal(a)) for a in self.argv)

    def shown(self) -> str:
        """The target for anyone: the secret values masked, everything else as typed."""
        if self.kind == "http":
            return str(self.url) + "".join(f" · {name}: {value}" for name, value in self.headers.items())
        command = " ".join(str(a) if isinstance(a, Secret) else readable_quote(a) for a in self.argv)
        return command + (f" (in {self.cwd})" if self.cwd else "")

    def short(self, limit: int = 80) -> str:
        """A name for the target when nothing better is known: the URL, or the command with its long paths cut to
        their last segments (`node …/server-memory/dist/index.js`), secret values masked."""
        if self.kind == "http":
            text = str(self.url)
        else:
            text = " ".join(str(a) if isinstance(a, Secret) else _short_path(readable_quote(a)) for a in self.argv)
        return text if len(text) <= limit else text[:limit - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        """What the event log records: the secret values as their masks, and which slots are secret."""
        return {"kind": self.kind, "url": str(self.url), "headers": {k: str(v) for k, v in self.headers.items()},
                "argv": [str(a) for a in self.argv], "cwd": None if self.cwd is None else str(self.cwd),
                "era": self.era, "secret": sorted(self.secret or ())}

    def secret_values(self) -> dict[str, str]:
        """The secret values by slot, for the store's owner-only place (empty when nothing is secret)."""
        values: dict[str, str] = {}
        if isinstance(self.url, Secret):
            values["url"] = self.url.reveal()
        values |= {f"header:{k}": v.reveal() for k, v in self.headers.items() if isinstance(v, Secret)}
        values |= {f"argv:{i}": a.reveal() for i, a in enumerate(self.argv) if isinstance(a, Secret)}
        if isinstance(self.cwd, Secret):
            values["cwd"] = self.cwd.reveal()
        return values

    def reveal_headers(self, pairs: Iterable[Any]) -> list[list[str]]:
        """Recorded request headers as they were sent: a secret header's mask (as the transport records it) back to
        its value, for the owner's own copy (cURL, HAR with secrets)."""
        masks = header_masks(self.url, self.headers)
        values = {k.lower(): reveal(v) for k, v in self.headers.items() if isinstance(v, Secret)}
        basic = _basic_authorization(reveal(self.url)) if "authorization" not in values else None
        shown = []
        for name, value in pairs:
            lowered = name.lower()
            if masks.get(lowered) == value:
                value = values.get(lowered, basic or value)
            shown.append([name, value])
        return shown

    def revealed(self) -> dict[str, Any]:
        """Every value as typed (the owner's export with secrets, and telling two targets apart)."""
        return {**self.to_dict(), "url": reveal(self.url), "headers": {k: reveal(v) for k, v in self.headers.items()},
                "argv": [reveal(a) for a in self.argv], "cwd": None if self.cwd is None else reveal(self.cwd)}


def _slot_values(url: str, headers: dict[str, str], argv: list[str], cwd: str | None) -> dict[str, str]:
    """Each slot's value as typed (a query parameter given twice: its values joined)."""
    values: dict[str, str] = {}
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is not None:
        if "@" in parts.netloc:
            values["userinfo"] = parts.netloc.rsplit("@", 1)[0]
        if parts.path.strip("/"):  # (offered as a slot only when it may hold a key; made secret when it holds one)
            values["path"] = parts.path
        for piece in parts.query.split("&") if parts.query else ():  # as typed (a server may echo it so)
            raw_name, _, value = piece.partition("=")
            slot = f"query:{unquote_plus(raw_name)}"
            values[slot] = (values[slot] + " " + value) if slot in values else value
    values |= {f"header:{k}": v for k, v in headers.items()}
    first_assignment, program, _ = secrecy.command_parts(argv)
    for i, arg in enumerate(argv):
        slot = _arg_slot(arg, i, first_assignment, program)
        name, sep, value = arg.partition("=")
        if slot:  # the value of `--name=value` or `NAME=value`; any other argument whole (a URL may hold "=")
            values[slot] = value if sep and (name.startswith("-") or slot.startswith("env:")) else arg
    if cwd:
        values["cwd"] = cwd
    return values


def _holding_a_secret(url: str, headers: dict[str, str], argv: list[str], cwd: str | None,
                      chosen: frozenset[str]) -> frozenset[str]:
    """The slots not chosen whose value holds a chosen one's (a path that repeats a header's token): shown, they
    would show the secret, and the live target is made from what is shown."""
    values = _slot_values(url, headers, argv, cwd)
    secrets = [part for slot, v in values.items() if slot in chosen
               for part in secrecy.credential_parts(v) if len(part) >= 3]  # a credential without its scheme, too
    return frozenset(slot for slot, v in values.items()
                     if slot not in chosen and any(secret in v or secret in unquote(v) for secret in secrets))


def _basic_authorization(url: str) -> str | None:
    """The Authorization httpx sends for a URL's user and password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return None
    return "Basic " + secrecy.basic_credential(parts.netloc.rsplit("@", 1)[0])[1]


def _arg_slot(arg: str, i: int, first_assignment: int, program: int) -> str:
    if first_assignment <= i < program:
        return f"env:{arg.partition('=')[0]}"
    return f"arg:{i}" if i > program else ""


def target_from(raw: Any, secrets: dict[str, str] | None = None) -> Target:
    """A Target from stored or imported data, taking only the fields it knows, each of the type a form gives, with
    the secret values (`Target.secret_values`) put back where the data holds their masks.

    An imported file's target may hold anything (headers as a string, argv of numbers): every page listing
    sessions, the masking of exports and a stdio start take these as typed, so a field of another type is
    dropped (its default stands), never carried on to fail there. Data without a `secret` list (recorded before
    secrets were explicit) gets the default slots.
    """
    raw = raw if isinstance(raw, dict) else {}
    values = secrets or {}
    kind: Literal["http", "stdio"] = "stdio" if raw.get("kind") == "stdio" else "http"
    era: Era = next((e for e in ERAS if e == raw.get("era")), "auto")
    url, headers, argv, cwd = raw.get("url"), raw.get("headers"), raw.get("argv"), raw.get("cwd")
    secret = raw.get("secret")
    url = values.get("url", url if type(url) is str else "")
    headers = {k: values.get(f"header:{k}", v) for k, v in headers.items()} \
        if type(headers) is dict and _strings(headers.items()) else {}
    argv = [values.get(f"argv:{i}", a) for i, a in enumerate(argv)] if type(argv) is list and _strings([argv]) else []
    cwd = values.get("cwd", cwd if type(cwd) is str else None)
    chosen = frozenset(secret) if type(secret) is list and _strings([secret]) else None
    return Target(kind=kind, era=era, url=url, headers=headers, argv=argv, cwd=cwd, secret=chosen)


def _strings(groups: Iterable[Iterable[Any]]) -> bool:
    return all(type(v) is str for group in groups for v in group)
