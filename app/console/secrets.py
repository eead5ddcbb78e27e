"""Masking for link holders, presenter mode and exports (the owner may opt in to see everything).

Two layers:
- `Redactor`: every value the owner *typed* into the target (header values, URL query values and userinfo,
  command arguments, environment assignments, the working directory) is a secret, whatever its name.
  It masks them in their structured places (the target's display) and as substrings of any string it is
  given (notes, status messages, raw frames, rendered HTML), so there is one function to call.
- Name-based masking (`is_secret`): headers the *server* sends back (Set-Cookie, tokens) are not typed by
  the owner, so their values are masked by what the header is called.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import shlex
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

from app.mcp.secret import Secret

if TYPE_CHECKING:
    from app.console.target import Target

MASK = "••••••"
_DONE = object()  # the end of a container's items in `Redactor._walk_deep`
# Shorter typed values are masked only where they stand (the target display): replacing every "1" or "on"
# in every string would destroy the timeline.
MIN_SUBSTRING = 4
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
    return {**event, "headers": [_masked_pair(pair) for pair in headers]}


def _masked_pair(pair: Any) -> Any:
    """One [name, value] header as `mask_headers` masks it; anything else (an imported file's) masked whole: it
    raised in the middle of a masked export or a viewer's entry, before any secret was looked at."""
    if type(pair) in (list, tuple) and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is str:
        name, value = pair
        return [name, mask_value(name, value) if is_secret(name) else value]
    return MASK


def _is_assignment(arg: str) -> bool:
    name, sep, _ = arg.partition("=")
    return bool(sep) and name.replace("_", "a").isalnum() and not name[:1].isdigit()


def split_command(argv: list[str]) -> tuple[list[str], list[str], str, list[str]]:
    """(launcher, NAME=value assignments, program, arguments) of a command line.

    `env A=1 B=2 python -m x` is launcher ["env"], assignments [A=1, B=2], program "python", arguments
    [-m, x]: the program and the variable names explain the command; everything after is the owner's input.
    """
    launcher: list[str] = []
    rest = list(argv)
    if rest and os.path.basename(rest[0]) == "env":
        launcher, rest = rest[:1], rest[1:]
    assignments: list[str] = []
    while rest and _is_assignment(rest[0]):
        assignments.append(rest.pop(0))
    program = rest.pop(0) if rest else ""
    return launcher, assignments, program, rest


def _mask_arg(arg: str) -> str:
    """A bare flag (`--stdio`) is the program's vocabulary, not the owner's data: it stays; values go."""
    if _is_assignment(arg):
        return arg.partition("=")[0] + "=" + MASK
    if arg.startswith("-") and len(arg) > 1:
        name, sep, _ = arg.partition("=")
        return f"{name}={MASK}" if sep else arg
    return MASK


def masked_argv(argv: list[str]) -> list[str]:
    """A command line with the program and names kept and every value the owner typed masked."""
    launcher, assignments, program, args = split_command(argv)
    shown = [*launcher, *(a.partition("=")[0] + "=" + MASK for a in assignments)]
    shown += [program] if program else []
    return shown + [_mask_arg(a) for a in args]


def mask_argv(argv: list[str]) -> str:
    # Quoted as a shell would need it, so the shown command pastes back; masks stay readable as masks.
    return " ".join(arg if MASK in arg else shlex.quote(arg) for arg in masked_argv(argv))


def typed_values(target: Target) -> list[str]:
    """Every secret value of the target (app/console/secrecy.py), as it was typed, and the pieces of it a server may
    echo: a header's credential without its scheme, a secret query value, a URL's password and Basic credential."""
    values: list[str] = []
    for value in target.headers.values():
        if isinstance(value, Secret):
            # "Bearer <token>": a server that echoes the credential alone ("token … is not valid") does not echo the
            # scheme, so the credential is a value of its own too.
            values.append(value.reveal())
            scheme, _, credential = value.reveal().strip().partition(" ")
            if credential and scheme.isalpha():
                values.append(credential.strip())
    if isinstance(target.url, Secret):
        chosen = target.secret or frozenset()
        try:
            parts = urlsplit(target.url.reveal())
        except ValueError:
            parts = None
        if parts is not None:
            values += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if f"query:{k}" in chosen]
            if "@" in parts.netloc and "userinfo" in chosen:
                userinfo = parts.netloc.rsplit("@", 1)[0]
                values.append(userinfo)
                values += _basic_credentials(userinfo)
    for arg in target.argv:
        if isinstance(arg, Secret):
            name, sep, value = arg.reveal().partition("=")
            values.append(value if sep and (name.startswith("-") or _is_assignment(arg.reveal())) else arg.reveal())
    if isinstance(target.cwd, Secret):
        values.append(target.cwd.reveal())
    return [v for v in values if v]


def _basic_credentials(userinfo: str) -> list[str]:
    """What the console sends for a URL's userinfo, and so what a server may echo: the password as decoded, and the
    Basic credential made of them (httpx: base64 of "user:password", percent-decoded, in UTF-8), which a server
    that shows its request head repeats in full."""
    user, _, password = userinfo.partition(":")
    user, password = unquote(user), unquote(password)
    basic = base64.b64encode(f"{user}:{password}".encode("utf-8", "surrogatepass")).decode("ascii")
    return [password, f"{user}:{password}", basic]


def _spellings(value: str) -> set[str]:
    """How a typed value may appear in a string: as typed, URL-encoded, inside JSON text, HTML-escaped."""
    forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1],
             json.dumps(value, ensure_ascii=False)[1:-1]}
    return forms | {html.escape(f) for f in forms} | {_jinja_escape(f) for f in forms}


def _jinja_escape(value: str) -> str:
    """Escaped as Jinja (markupsafe) escapes, which spells quotes differently from `html.escape`."""
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;"))


# JSON's short escapes: json.dumps writes these for " \\ and the control characters; PHP's json_encode also writes
# "/" as "\\/" (its default), and any writer may. The letter (or character) after the backslash:
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
# A character as HTML shows it (html.escape and Jinja), for a frame's raw text rendered in a page.
_HTML_ESCAPES = {"&": ("&amp;",), "<": ("&lt;",), ">": ("&gt;",), '"': ("&quot;", "&#34;"), "'": ("&#x27;", "&#39;")}
# An escape's backslash at any depth: JSON text inside a JSON string (a PHP or Go tool returning json_encode'd
# data as its text) doubles it once more per level ("\\/", "\\\\\\/", "\\\\u0026"), and so does Python's repr of a
# body (an HTTP error's message). Up to 63 (six levels), then the escape: bounded, so a run of backslashes costs the
# engine at most that many tries where a match may start (see `_escaped_spellings`).
_BACKSLASHES = r"\\{1,63}"


def _hex_class(hexes: str) -> str:
    """`hexes` (hex digits) in either case of each letter: Go writes "\\u002f", Java and C# "\\u002F"."""
    return "".join(f"[{h.lower()}{h.upper()}]" if h.isalpha() else h for h in hexes)


def _char_pattern(ch: str) -> str:
    """Every way one character of a typed value may be spelled inside JSON text another writer made, at any depth
    of JSON inside JSON, or that text rendered in HTML: itself, its HTML escapes, its \\u escape (any case) and its
    short escape (with its character HTML-escaped too) behind any number of backslashes; a character other than a
    letter or digit also percent-encoded (once or twice, either case) or as a numeric character reference."""
    code = ord(ch)
    if code > 0xFFFF:  # JSON spells a character past the BMP as its UTF-16 surrogate pair
        code -= 0x10000
        high, low = f"{0xD800 + (code >> 10):04x}", f"{0xDC00 + (code & 0x3FF):04x}"
        escape = f"{_BACKSLASHES}u{_hex_class(high)}{_BACKSLASHES}u{_hex_class(low)}"
    else:
        escape = f"{_BACKSLASHES}u{_hex_class(f'{code:04x}')}"
    forms = [re.escape(f) for f in (ch, *_HTML_ESCAPES.get(ch, ()))] + [escape]
    if not (ch.isascii() and ch.isalnum()):
        # Percent-encoded in either case, or twice (a URL inside a URL's query), and as a numeric HTML character
        # reference (Go's html/template writes "+" as "&#43;").
        forms.append("".join(f"%(?:25)?{_hex_class(f'{b:02x}')}" for b in ch.encode("utf-8", "surrogatepass")))
        forms.append(f"&#(?:0*{ord(ch)}|[xX]0*{_hex_class(f'{ord(ch):x}')});")
        if ch == " ":
            forms.append(r"\+")  # a form's (quote_plus's) space
    if ch in _SHORT_ESCAPES:
        short = _SHORT_ESCAPES[ch]
        bodies = [re.escape(f) for f in (short, *_HTML_ESCAPES.get(short, ()))]
        forms.append(f"{_BACKSLASHES}(?:{'|'.join(bodies)})")
    # The character as it is goes last: tried first, a typed backslash took the first character of its own escape
    # ("\\u005c") and left "u005c" after the mask.
    plain = len(_HTML_ESCAPES.get(ch, ())) + 1
    return "(?:" + "|".join(forms[plain:] + forms[:plain]) + ")"


def _escaped_pattern(value: str) -> str:
    """A regex for `value` spelled with any of JSON's escapes, character by character (`_char_pattern`): the
    spelling a frame's raw text keeps when its writer escapes what json.dumps does not (PHP's "\\/", Go's
    "\\u0026"), at any depth. It reads the same text inside JSON written by json.dumps: that only adds backslashes
    before a backslash or a quote and writes other characters as \\u escapes, which the pattern already takes."""
    return "".join(_char_pattern(ch) for ch in value)


@functools.lru_cache(maxsize=64)
def _escaped_spellings(typed: tuple[str, ...], flags: int = 0) -> re.Pattern[str] | None:
    """The typed values' escaped spellings as one regex, made once per set of values: a Redactor is built for every
    answer a link holder gets and every fragment pushed to their sockets, and spelling a 60-character token's every
    escape took ~2 ms (re's own cache only spares the compile)."""
    if not typed:
        return None
    # Where a match can start: a value's first character, an HTML escape, or the first backslash of a run (never
    # one inside it: a server's megabyte of backslashes was tried at each of them, each try running to the end of
    # the run, and the search took time quadratic in its length). Said first, it lets the engine skip every other
    # position at once (a 3 kB fragment took 330 µs to search without it, 30 µs with).
    return re.compile(_starts(typed) + "(?:" + "|".join(_escaped_pattern(v) for v in typed) + ")", flags)


def _starts(typed: tuple[str, ...]) -> str:
    """Where a match of any of `typed` in any spelling can start: its first character, an HTML or numeric reference,
    a percent-encoding, a form's "+" for a space, or the first backslash of a run (never one inside it)."""
    chars = "".join(sorted({re.escape(ch) for ch in {"&", "%", "+", *(v[0] for v in typed)}}))
    return f"(?:(?=[{chars}])|(?<!\\\\)(?=\\\\))"


def _may_escape(text: str) -> bool:
    """Whether `text` may hold an escaped spelling at all: each holds a backslash, a percent sign or "&#"."""
    return "\\" in text or "%" in text or "&#" in text


# A server text the console shortened for a message ends in "…" (an HTTP error's body, a line that is not JSON, a
# repr'd value, a stderr line past its bound): a typed value the cut went through leaves its head just before it.
CUT_MARK = "\u2026"
_CUT_AHEAD = r"(?=\s?(?:\u2026|\\u2026))"  # the mark itself, or as JSON text written by json.dumps spells it


@functools.lru_cache(maxsize=64)
def _cut_heads(typed: tuple[str, ...], flags: int = 0) -> re.Pattern[str] | None:
    """A typed value's head (MIN_SUBSTRING characters or more, in any spelling `_char_pattern` knows) right before
    the mark of a cut: masked as the whole value is, since no whole value is left there to find."""
    heads = []
    for value in typed:
        chars = [_char_pattern(ch) for ch in value]
        rest = ""
        for char in reversed(chars[MIN_SUBSTRING:-1]):  # longer heads as nested optional groups, longest tried first
            rest = f"(?:{char}{rest})?"
        heads.append("".join(chars[:MIN_SUBSTRING]) + rest)
    # Started only where a value can (`_starts`): unguarded, a megabyte of backslashes before a "…" was tried at every
    # backslash, each try as long as the value (320 ms for `text`, 2.5 s for the filter's check).
    return re.compile(_starts(typed) + "(?:" + "|".join(heads) + ")" + _CUT_AHEAD, flags) if heads else None


@functools.lru_cache(maxsize=64)
def _index_hiding(values: tuple[str, ...]) -> re.Pattern[str] | None:
    """The escaped spellings and the heads before a cut, as one case-blind pattern over the entry index's
    casefolded text (`Redactor.hidden_pattern`)."""
    escaped, heads = _escaped_spellings(values, re.IGNORECASE), _cut_heads(values, re.IGNORECASE)
    if escaped is None or heads is None:
        return None
    return re.compile(f"{escaped.pattern}|{heads.pattern}", re.IGNORECASE)


# How far around a cut `Redactor.safe_cut` looks for an escaped spelling that straddles it.
CUT_WINDOW = 16_384


class Redactor:
    """The one masking function for a non-owner's eyes: built from the session's target, applied to anything."""

    def __init__(self, target: Target) -> None:
        self.target = target
        forms: set[str] = set()
        for value in typed_values(target):
            if len(value) >= MIN_SUBSTRING:
                forms |= {f for f in _spellings(value) if len(f) >= MIN_SUBSTRING}
        # Longest first: a value that contains another must go whole, not leave its tail behind.
        self._forms = sorted(forms, key=len, reverse=True)
        # Each form as it reads inside JSON text: JSON escapes a string character by character, so a string
        # that contains a form has the form's escaped spelling in its JSON (the test below is never wrong
        # to say no).
        self._in_json = sorted({json.dumps(f)[1:-1] for f in self._forms}, key=len, reverse=True)
        # The same values spelled with escapes json.dumps does not write: each such spelling holds a backslash, so
        # only a text with one is searched for them (most texts have none: the plain forms above suffice).
        typed = sorted({v for v in typed_values(target) if len(v) >= MIN_SUBSTRING}, key=len, reverse=True)
        self._typed = typed
        self._escaped = _escaped_spellings(tuple(typed))
        self._heads = _cut_heads(tuple(typed))
        # A typed header where it stands in a request's header list ([name, value], or HAR's {name, value}):
        # masked there whatever its length (a short one is not masked as a substring anywhere else).
        self._headers = {(name.lower(), value.reveal()) for name, value in target.headers.items()
                         if isinstance(value, Secret)}

    def target_dict(self) -> dict[str, Any]:
        """The target's serialized form (session files) with every secret value masked where it stands."""
        return self.target.to_dict()

    def might_mask(self, json_text: str) -> bool:
        """False when nothing in a value serialized as `json_text` (json.dumps, ASCII) has a typed value to mask:
        then `self(value)` is the value as it is, and a caller may skip walking it."""
        if any(form in json_text for form in self._in_json):
            return True
        # An escape inside one of the value's strings reads as a doubled backslash in its JSON text.
        if self._escaped is not None and ("\\\\" in json_text or "%" in json_text or "&#" in json_text) \
                and self._escaped.search(json_text) is not None:
            return True
        return self._heads is not None and ("\\u2026" in json_text or CUT_MARK in json_text) \
            and self._heads.search(json_text) is not None

    def hidden_text(self) -> tuple[str, ...]:
        """The typed values as the entry index holds text (casefolded), longest first: what a masked caller's
        filter must not find (see `EntryQuery.hidden`)."""
        return tuple(sorted({f.casefold() for f in self._forms}, key=len, reverse=True))

    def hidden_pattern(self) -> re.Pattern[str] | None:
        """The typed values' escaped spellings as the entry index holds text (casefolded): what a masked caller's
        filter must not find either (see `EntryQuery.hidden_pattern`); `hidden_text` has the plain forms."""
        values = tuple(sorted({*self._typed, *(v.casefold() for v in self._typed)}, key=len, reverse=True))
        return _index_hiding(values)

    def safe_cut(self, text: str, keep: int) -> int:
        """The largest cut at or before `keep` characters that cuts no typed value in two (in any spelling the mask
        knows): the kept head of one would be masked nowhere. A value that straddles the cut is left out whole."""
        for _ in range(16):  # each step moves left past one value; values that overlap the cut are few
            cut = keep
            for form in self._forms:
                at = text.find(form, max(0, keep - len(form) + 1), keep + len(form) - 1)
                while at != -1 and at < keep:
                    cut = min(cut, at)
                    at = text.find(form, at + 1, keep + len(form) - 1)
            if self._escaped is not None:
                for found in self._escaped.finditer(text, max(0, keep - CUT_WINDOW), keep + CUT_WINDOW):
                    if found.start() < keep < found.end():
                        cut = min(cut, found.start())
            if cut == keep:
                return keep
            keep = cut
        return keep

    def text(self, value: str) -> str:
        # The escaped spellings first: a plain form masked first can cut one in two ("0000" typed, "\\u0030000"
        # echoed: its plain tail "0000" went, and "\\u003" plus the mask was left for the pattern to miss).
        if self._escaped is not None and _may_escape(value):
            value = self._escaped.sub(MASK, value)
        for form in self._forms:
            if form in value:
                value = value.replace(form, MASK)
        if self._heads is not None and CUT_MARK in value:
            value = self._heads.sub(MASK, value)
        return value

    def __call__(self, value: Any) -> Any:
        """Any JSON-like value with every string (keys too) masked; other values as they are."""
        try:
            return self._walk(value)
        except RecursionError:  # a server's value nested past the stack (JSON parsing takes some 1000 levels)
            return self._walk_deep(value)

    def _walk_deep(self, value: Any) -> Any:
        """`_walk` with its own stack instead of Python's: as slow as it is rare, and bounded by the value."""
        if not isinstance(value, dict | list | tuple):
            return self._walk(value)
        root: list[Any] = []
        stack: list[tuple[Iterator[Any], dict[Any, Any] | list[Any], bool]] = [(iter([value]), root, False)]
        while stack:
            items, out, keyed = stack[-1]
            item: Any = next(items, _DONE)
            if item is _DONE:
                stack.pop()
                continue
            key: Any
            child: Any
            key, child = item if keyed else (None, item)
            if isinstance(child, dict | list | tuple) and not self._header_pair(child):
                shown: Any = {} if isinstance(child, dict) else []
                stack.append((iter(child.items()) if isinstance(child, dict) else iter(child), shown,
                              isinstance(child, dict)))
            else:
                shown = self._walk(child)  # a string, a number, or a typed header's pair (masked whole)
            if keyed:
                cast(dict[Any, Any], out)[self.text(key) if isinstance(key, str) else key] = shown
            else:
                cast(list[Any], out).append(shown)
        return root[0]

    def _header_pair(self, value: Any) -> bool:
        if not self._headers or len(value) != 2:
            return False
        if isinstance(value, dict):
            return self._typed_header(value.get("name"), value.get("value"))
        return self._typed_header(value[0], value[1])

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            if self._header_pair(value):
                return {"name": self.text(value["name"]), "value": mask_value(value["name"], value["value"])}
            return {self.text(k) if isinstance(k, str) else k: self._walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            if self._header_pair(value):
                return [self.text(value[0]), mask_value(value[0], value[1])]
            return [self._walk(v) for v in value]
        return value

    def _typed_header(self, name: Any, value: Any) -> bool:
        return type(name) is str and type(value) is str and (name.lower(), value) in self._headers
