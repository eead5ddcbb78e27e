"""Server data masked once, when recorded, on decoded values: no secret of the target reaches the event log.

A target's secret values (app/console/target.py) go to the wire; a server may say them back (an echo tool, an
error quoting the request, a log line). The timeline records what comes in through a `Scrubber`: every string of an
event's data is searched for each secret value as it is, percent-encoded (as the console writes it into a URL) and,
for a URL's user and password, as the Basic credential httpx sends; each occurrence becomes the mask. A frame's raw
text is decoded first when it holds an escape (`sk\\/live` is `sk/live`), so no escaped spelling has to be searched:
its masked copy is the decoded frame written again. The exact data of an event that was masked goes to the store's
owner-only place (`Store.save_exact`), so the owner can still see the bytes the server sent.

Escaping for HTML or JSON happens after this, when an event is shown: nothing downstream searches for secrets.
What a server can still do to leak a secret it was given: hash it, encrypt it, or re-encode it in a way the console
does not decode (base64 of a header value, hex, reversed, split across two messages, cut by the server itself).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from app.console.events import SessionCreated, TimelineEvent, Wire, load
from app.console.secrecy import basic_credential, credential_parts
from app.console.store import ImportRow
from app.mcp.client import Reply
from app.mcp.errors import McpError, RpcError
from app.mcp.headers import decode_value
from app.mcp.secret import MASK

if TYPE_CHECKING:
    from app.console.target import Target

# Shorter secrets are masked where they stand (the target display, a request's own headers) but not searched for in
# text: every "on" or "42" of every result would go.
MIN_SEARCHED = 3
CUT_MARK = "\u2026"  # how the console marks a text it shortened (a head of a secret may be left before it)
TOO_DEEP = "(nested too deep to check for secret values: not recorded)"
ESCAPE_LEVELS = 4  # JSON text inside JSON text inside a string, and so on: levels of escapes read in a string
# One escape of JSON text (or of Python's repr of it): \uXXXX, or a backslash and the character it escapes.
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SHORT = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _joined(text: str) -> str:
    """Surrogate halves a \\u escape pair gave, joined into their character (a lone half stays as it is)."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return text


def _unescape_one(found: re.Match[str]) -> str:
    body = found.group(1)
    if len(body) == 5:  # \uXXXX (a surrogate half stays as it is: the pair is read as two, joined when written)
        return chr(int(body[1:], 16))
    return _SHORT.get(body, body)


def secret_pieces(target: Target) -> list[str]:
    """Every secret value of a target as a server may echo it: each secret slot's value as typed and the parts of
    it a server may say alone (`secrecy.credential_parts`); a URL's user and password, decoded and as the Basic
    credential httpx sends; a secret path without its slashes."""
    typed = target.typed()
    values: list[str] = []
    for slot in target.secret or ():
        value = typed.get(slot, "")
        if slot == "userinfo":
            plain, basic = basic_credential(value)
            values += [value, plain.partition(":")[2], plain, basic]
        elif slot == "path":
            values += [value.strip("/"), unquote(value.strip("/"))]
        elif slot.startswith("query:"):  # as typed (perhaps percent-encoded) and decoded
            values += [value, *credential_parts(unquote_plus(value))]
        else:
            values += credential_parts(value)
    return [v for v in values if v]


class Scrubber:
    """Masks a target's secret values in decoded data; built once per target (see ConsoleSession.scrubber)."""

    def __init__(self, pieces: Iterable[str]) -> None:
        needles = set()
        for piece in pieces:
            if len(piece) >= MIN_SEARCHED:
                needles |= {piece, quote(piece, safe=""), quote_plus(piece)}
        # Longest first: a value that contains another goes whole, not leaving its tail behind.
        self.needles = sorted(needles, key=len, reverse=True)
        # Each needle as json.dumps spells it inside JSON text: a quick test of an event's JSON before walking it.
        self._in_json = [json.dumps(n)[1:-1] for n in self.needles]
        # Whether a number can hold one (a secret of digits): only then are numbers read as text.
        self.digits = any(n.replace(".", "").replace("-", "").isdigit() for n in self.needles)

    def __bool__(self) -> bool:
        return bool(self.needles)

    def text(self, value: str) -> str:
        value = self._plain(value)
        if "\\" in value:
            value = self._unescaped(value)
        return value

    def _plain(self, value: str) -> str:
        for needle in self.needles:
            if needle in value:
                value = value.replace(needle, MASK)
        if CUT_MARK in value:
            value = self._cut_heads(value)
        return value

    def _unescaped(self, value: str) -> str:
        """A string that holds JSON text (a tool returning json_encode'd data, an error quoting a body with its
        escapes): decoded one level at a time, up to ESCAPE_LEVELS; where a level holds a secret, that level, masked,
        is what is recorded (its escapes read, not searched for in every spelling)."""
        level = value
        for _ in range(ESCAPE_LEVELS):
            decoded = _joined(_ESCAPE.sub(_unescape_one, level))
            if decoded == level:
                return value
            masked = self._plain(decoded)
            if masked is not decoded:
                return masked
            if "\\" not in decoded:
                return value
            level = decoded
        return value

    def _cut_heads(self, value: str) -> str:
        """A secret's head right before the mark of a cut the console made ("…sk-live-ab…", "sk-live-ab … [4 more
        bytes]"): masked, since no whole value is left there to find."""
        for needle in self.needles:
            for size in range(len(needle) - 1, MIN_SEARCHED - 1, -1):
                for mark in (CUT_MARK, " " + CUT_MARK):
                    head = needle[:size] + mark
                    if head in value:
                        value = value.replace(head, MASK + mark)
        return value

    def safe_cut(self, text: str, keep: int) -> int:
        """The largest cut at or before `keep` characters that cuts no secret value in two (as it is, or as JSON
        text spells it): the kept head of one would be masked nowhere. A value across the cut is left out whole."""
        forms = {*self.needles, *self._in_json}
        for _ in range(16):  # each step moves left past one value; values across the cut are few
            cut = keep
            for form in forms:
                at = text.find(form, max(0, keep - len(form) + 1), keep + len(form) - 1)
                while at != -1 and at < keep:
                    cut = min(cut, at)
                    at = text.find(form, at + 1, keep + len(form) - 1)
            if cut == keep:
                return keep
            keep = cut
        return keep

    def may_hold(self, json_text: str) -> bool:
        """False when JSON text written by json.dumps (ASCII) holds no secret in any string: nothing to walk."""
        # A string holding a backslash (JSON text inside it: its escapes are read by `text`) is walked too.
        return any(n in json_text for n in self._in_json) or CUT_MARK in json_text or "\\" in json_text

    def value(self, data: Any) -> Any:
        """Any JSON-like value with every string (keys too) masked; the same object when nothing changed."""
        try:
            return self._walk(data)
        except RecursionError:  # nested past Python's stack: not shown, rather than checked in part
            return TOO_DEEP

    def _walk(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.text(data)  # the same object when nothing was masked
        if isinstance(data, dict):
            out, changed = {}, False
            for key, item in data.items():
                shown_key = self.text(key) if isinstance(key, str) else key
                shown = self._walk(item)
                changed = changed or shown_key is not key or shown is not item
                out[shown_key] = shown
            return out if changed else data
        if isinstance(data, list | tuple):
            items = [self._walk(item) for item in data]
            return items if any(a is not b for a, b in zip(data, items, strict=True)) else data
        if self.digits and isinstance(data, int | float) and not isinstance(data, bool):
            # A secret of digits said back as a JSON number: the number goes, as the mask.
            shown = repr(data)
            return MASK if self._plain(shown) is not shown else data
        return data

    def headers(self, headers: Any) -> Any:
        """A frame's headers masked as values are, and a value the console shows decoded (the `=?base64?…?=` form
        of an Mcp-Param header, app/mcp/headers.decode_value) masked whole when its decoded text holds a secret."""
        shown = self.value(headers)
        if not isinstance(shown, list):
            return shown
        out, changed = [], shown is not headers
        for pair in shown:
            if type(pair) is list and len(pair) == 2 and type(pair[1]) is str and pair[1].startswith("=?base64?"):
                decoded = decode_value(pair[1])
                if decoded is not pair[1] and self.text(decoded) is not decoded:
                    pair, changed = [pair[0], MASK], True
            out.append(pair)
        return out if changed else headers

    def raw_frame(self, raw: str) -> str:
        """A frame's raw text as a link holder may see it: when it holds an escape, decoded, masked and written
        again (only if a secret was found); else masked as text."""
        if "\\" in raw or self.digits:  # escapes to read, or numbers that may spell a secret of digits
            try:
                parsed = json.loads(raw)
            except ValueError:
                return self.text(raw)
            masked = self.value(parsed)
            if masked is not parsed:
                return json.dumps(masked, ensure_ascii=False, separators=(",", ":"))
            return self._plain(raw)  # its escapes were read by the parse: what is left are the literal forms
        return self.text(raw)


def scrubber_for(target: Target) -> Scrubber | None:
    """The scrubber of a target's secret values; None when it has none worth searching for."""
    scrubber = Scrubber(secret_pieces(target))
    return scrubber if scrubber else None


def scrubbed_event(scrubber: Scrubber, event: TimelineEvent) -> TimelineEvent:
    """The event with the secret values masked in its data; the same event when it holds none."""
    record = event.record
    if type(record) is SessionCreated:
        # Its target is the display already (secret slots masked; a value holding a secret is secret: see
        # Target.seal), and the live target is made from it: rewriting it would send a mask to the server.
        return event
    if type(record) is Wire:
        shown = scrubbed_frame(scrubber, record)
        return event if shown is record else TimelineEvent(event.session_id, event.seq, shown, event.at)
    if not scrubber.may_hold(event.data_json):
        return event
    data = scrubber.value(event.data)
    return event if data is event.data else TimelineEvent(event.session_id, event.seq, load(event.kind, data), event.at)


def scrubbed_frame(scrubber: Scrubber, record: Wire) -> Wire:
    """A frame with the secrets masked in its raw text (decoded when it holds an escape), note, URL and headers; the
    same record when it holds none."""
    raw, note, url, problem = record.raw, record.note, record.url, record.problem
    shown_raw = scrubber.raw_frame(raw) if raw else raw
    shown_note = scrubber.text(note) if note else note
    shown_url = scrubber.text(url) if url else url
    shown_problem = scrubber.text(problem) if problem else problem
    headers = record.headers
    shown_headers = scrubber.headers(headers) if headers else headers
    if shown_raw is raw and shown_note is note and shown_url is url and shown_headers is headers \
            and shown_problem is problem:
        return record
    return dataclasses.replace(record, raw=shown_raw, note=shown_note, url=shown_url, headers=shown_headers,
                               problem=shown_problem)


def scrubbed_rows(scrubber: Scrubber | None, rows: list[ImportRow], target: dict[str, Any]) -> list[ImportRow]:
    """An imported file's rows with the secret values of its target masked (an owner's file with its secrets), and
    its creation recording `target` (the masks and the secret list: a log that needs no carrying out)."""
    out = []
    for row in rows:
        if row.kind == "session_created" and isinstance(row.data, dict):
            data = {**row.data, "target": target}
            row = ImportRow(row.seq, row.kind, row.at, data, json.dumps(data, separators=(",", ":")))
        elif scrubber is not None and (scrubber.may_hold(row.text) or (row.kind == "wire" and (
                "\\\\" in row.text or "=?base64?" in row.text or scrubber.digits))):
            event = TimelineEvent("", row.seq, load(row.kind, row.data), row.at)
            masked = scrubbed_event(scrubber, event)
            if masked is not event:
                row = ImportRow(row.seq, row.kind, row.at, masked.data, masked.data_json)
        out.append(row)
    return out


def shown_reply(scrubber: Scrubber | None, reply: Reply) -> Reply:
    """A reply as the log has it: what a route answers with a live reply (a replay, a completion) holds no secret
    value the server said back, for any caller (the owner's exact frames are in the entry's detail)."""
    if scrubber is None:
        return reply
    error = reply.error
    if isinstance(error, RpcError):
        error = RpcError(error.code, scrubber.text(error.message), scrubber.value(error.data), error.http_status)
    elif error is not None:
        try:
            error = type(error)(scrubber.text(str(error)))
        except TypeError:  # an error type made otherwise: its text is what is shown
            error = McpError(scrubber.text(str(error)))
    return dataclasses.replace(reply, params=scrubber.value(reply.params), result=scrubber.value(reply.result),
                               error=error, warnings=[scrubber.text(w) for w in reply.warnings])
