"""JSON-RPC 2.0 framing. A frame that does not parse is kept as data, never raised."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

import orjson

FrameKind = Literal["request", "notification", "response", "error", "invalid"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One JSON-RPC message as received or sent: its raw text and what it parsed to."""

    raw: str
    kind: FrameKind
    message: dict[str, Any] | None = None
    problem: str | None = None
    http_status: int | None = None  # set by the HTTP transport: an error's meaning depends on it

    @property
    def id(self) -> Any:
        return self.message.get("id") if self.message else None

    @property
    def method(self) -> str | None:
        if not self.message:
            return None
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def params(self) -> dict[str, Any]:
        params = self.message.get("params") if self.message else None
        return params if isinstance(params, dict) else {}


def classify(message: Any) -> tuple[FrameKind, str | None]:
    """Name the JSON-RPC shape of a decoded value, with the reason when it has none."""
    if isinstance(message, list):
        return "invalid", "JSON-RPC batches are not allowed in 2026-07-28"
    if not isinstance(message, dict):
        return "invalid", f"expected a JSON object, got {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return "invalid", 'missing or wrong "jsonrpc": "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return "invalid", '"method" is not a string'
        return ("request" if "id" in message else "notification"), None
    if "id" not in message:
        if "error" in message:  # an error without id is legal for a rejected notification
            return _error_shape(message["error"])
        return "invalid", "neither a method nor an id"
    if "result" in message and "error" in message:
        return "invalid", 'both "result" and "error"'
    if "result" in message:
        return "response", None
    if "error" in message:
        return _error_shape(message["error"])
    return "invalid", 'a response without "result" or "error"'


def _error_shape(error: Any) -> tuple[FrameKind, str | None]:
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
        return "invalid", "error object without an integer code"
    return "error", None


_decode = json.JSONDecoder().decode  # one decoder: json.loads looks up its default one on every call
_DEEP = 512  # brackets from which the stdlib decides: it refuses nesting past some 990 levels, orjson past 1024
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19  # 19 digits in a row: maybe an integer past 64 bits, which orjson reads as a float


def decode(raw: str) -> Any:
    """`json.loads(raw)`, exactly: the same value, or the same refusal (its ValueError or RecursionError).

    orjson reads a frame in a quarter of the stdlib's time (a flood is thousands a second). Where the two could
    differ the stdlib decides: orjson refuses what only the stdlib reads (a lone surrogate, NaN, a float past the
    double's range, a str orjson cannot take) and those fall back; what orjson reads differently, an integer past
    64 bits (as a float), needs 19 digits in a row, so a text with such a run is not given to it; nor a text that
    may nest deeper than the stdlib reads (it must be refused as before). A fuzzed comparison is in the tests."""
    if (len(raw) < 2 * _DEEP or raw.count("{") + raw.count("[") < _DEEP) \
            and _LONG_RUN not in raw.encode("utf-8", "surrogatepass").translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return _decode(raw)


def parse_frame(raw: str, http_status: int | None = None) -> Frame:
    """Decode one frame; malformed JSON or a non-JSON-RPC shape becomes an "invalid" frame.

    `http_status` is stamped on the frame as it is made (the HTTP readers' hot path: no copy per frame)."""
    try:
        message = decode(raw)
    except (ValueError, RecursionError) as exc:
        # An invisible U+FEFF first made "Expecting value: line 1 column 1" read as if the JSON itself were broken.
        bom = " (it begins with a byte order mark, U+FEFF, which JSON sent over a network must not carry: " \
              "RFC 8259 section 8.1)" if raw.startswith("\ufeff") else ""
        return Frame(raw=raw, kind="invalid", problem=f"malformed JSON: {exc}{bom}", http_status=http_status)
    kind, problem = classify(message)
    return Frame(raw=raw, kind=kind, message=message if isinstance(message, dict) else None, problem=problem,
                 http_status=http_status)


def parse_line(raw: str) -> Frame:
    """A stdio stdout line: like parse_frame, but a line that is not JSON at all is named for what it
    usually is, a server logging to stdout (the stdio transport reserves stdout for messages)."""
    frame = parse_frame(raw)
    if frame.kind == "invalid" and frame.message is None and (frame.problem or "").startswith("malformed JSON") \
            and not raw.lstrip().startswith(("{", "[")):
        # JSON-looking lines keep the parser's reason: an answer nested deeper than it goes, or with a number of
        # more digits than it reads, is no log line, and was named one.
        shown = raw if len(raw) <= 120 else raw[:120] + "…"
        return replace(frame, problem=f"stdout line is not JSON-RPC: {shown!r} (stdio servers must log to stderr)")
    return frame


def with_status(frame: Frame, status: int) -> Frame:
    return replace(frame, http_status=status)


def encode(message: dict[str, Any]) -> str:
    """Serialize compactly, on one line (stdio framing forbids embedded newlines).

    NaN and Infinity raise ValueError: they are not JSON, and a console must never send non-JSON.
    """
    text = _ENCODER.encode(message)
    params = message.get("params")
    if not text.isascii() and isinstance(params, dict) and (
            any(_lone_surrogate(params.get(name)) for name in _ECHOED) or _lone_key(params.get("inputResponses"))):
        return _echoed_state(message, text)
    return text


# The params a request echoes from the server: the state it handed out, and the name or URI of what it listed (a
# tool, a prompt, a resource). A lone surrogate escape there is the server's own spelling, sent back as it came.
_ECHOED = ("requestState", "name", "uri")


# A lone surrogate: what a JSON escape such as \ud800 decodes to, a character with no UTF-8 form.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """`text` with U+FFFD for each lone surrogate: what a browser's form sends for it, and what a store can hold."""
    return text if text.isascii() else LONE_SURROGATE.sub("\ufffd", text)


def _lone_surrogate(value: Any) -> bool:
    return isinstance(value, str) and not value.isascii() and LONE_SURROGATE.search(value) is not None


def _lone_key(responses: Any) -> bool:
    return isinstance(responses, dict) and any(_lone_surrogate(key) for key in responses)


def _echoed_state(message: dict[str, Any], text: str) -> str:
    """The message with the lone surrogates of what it echoes (`_ECHOED`, and the inputResponses keys) written as
    JSON escapes (\\ud800), as the server wrote them: all are the server's, echoed exactly, and as a character a
    lone surrogate has no UTF-8 form, so the request could not be sent at all (a tool so named could never be
    called). Anywhere else (arguments or answers someone typed) a lone surrogate is still refused by the transport,
    as before: the text is left alone when the rest holds one."""
    params = message["params"]
    answers = params.get("inputResponses")
    rest = {**message, "params": {k: v for k, v in params.items() if k not in (*_ECHOED, "inputResponses")},
            "answers": list(answers.values()) if isinstance(answers, dict) else answers}
    if LONE_SURROGATE.search(_ENCODER.encode(rest)) is not None:
        return text
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# What `json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)` builds on every call, built
# once: the same text (json.dumps makes exactly this encoder for those arguments), without a new one per request.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class InexactNumber(ValueError):
    """A typed number that would go out as another number (see `exact_float`)."""


def exact_float(text: str) -> float:
    """The double a typed number (JSON number text) goes out as, when it is that number; else ValueError.

    A double carries about 17 digits and a bounded exponent: 1e-400 became 0.0 and 3.14159265358979323846 became
    3.141592653589793, and what reached the server was another number than the one typed, with nothing said.
    Compared as decimals, 1e16 and 1e+16, 1.10 and 1.1 are the same number and go as typed."""
    value = float(text)
    if not math.isfinite(value):
        raise InexactNumber("a number too large for JSON (it would become Infinity)")
    if Decimal(text) != Decimal(repr(value)):
        raise InexactNumber(f"{text} has more digits than the console can send as a number: it would go as {value!r}")
    return value


def request(id_: int | str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def pretty(raw: str) -> str:
    """The frame's own text laid out on lines, when it is JSON; the raw text otherwise (for display only).

    Only the whitespace between tokens changes: every string, escape and number is the target's own spelling. A
    decode and re-encode showed another message in the frame's place: a duplicate key lost, -0 as 0, 1e400 as
    Infinity (not JSON at all), a lone surrogate escape as U+FFFD, "caf\\u00e9" as "café". Past the same bound
    as `indented` (a value nested hundreds deep), the raw text is shown as it came."""
    try:
        decode(raw)  # laid out only when it is JSON: anything else is shown exactly as it came
    except (ValueError, RecursionError):
        return raw
    limit = max(PRETTY_FLOOR, PRETTY_FACTOR * len(raw))
    pieces: list[str] = []
    size = depth = 0
    last = ""
    for token in _TOKEN.findall(raw):
        if token in "}]" and last not in "{[":
            pieces.append("\n" + "  " * (depth - 1))
        elif last in "{[," and last and not (token in "}]" and last in "{["):
            pieces.append("\n" + "  " * depth)
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
        piece = ": " if token == ":" else token
        pieces.append(piece)
        size += len(piece) + 2 * depth + 1
        if size > limit:
            return raw
        last = token if token in "{}[],:" else "v"
    return "".join(pieces)


# The tokens of a JSON text: a whole string (escapes and all), a structural character, or a bare word (a number,
# true, false, null) as written. Whitespace between them is what `pretty` lays out anew.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+', re.DOTALL)


# Indenting multiplies a value's size by about its depth (each level a line, each line its depth's indent): a
# target's 36 KB of brackets nested 900 deep became 65 MB of HTML, rendered on the event loop. Past
# PRETTY_FACTOR times the compact text (and PRETTY_FLOOR) the compact text is shown instead.
PRETTY_FLOOR = 64 * 1024
PRETTY_FACTOR = 8
_INDENTED = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)


def indented(value: Any, compact: Callable[[], str]) -> str:
    """`value` as `json.dumps(value, indent=2, ensure_ascii=False, default=str)` makes it, unless that passes the
    bound: then `compact()` (the same value, unindented). The indented text is made a piece at a time and given
    up at the bound, so a value that would indent into gigabytes costs no more than the bound."""
    pieces: list[str] = []
    size, limit, text = 0, PRETTY_FLOOR, None
    for piece in _INDENTED.iterencode(value):
        size += len(piece)
        if size > limit:
            if text is not None:
                return text
            text = compact()
            limit = max(PRETTY_FLOOR, PRETTY_FACTOR * len(text))
            if size > limit:
                return text
        pieces.append(piece)
    return "".join(pieces)


MAX_SHOWN_DEPTH = 200  # levels of a value kept when it is too deep to encode whole (orjson takes 254)
CLIPPED = "(nested too deep to show here: see the frame on the wire)"


def clipped(value: Any, left: int = MAX_SHOWN_DEPTH) -> Any:
    """`value` with whatever lies deeper than `left` levels replaced by CLIPPED. A target's value nested nearly as
    deep as the decoder takes, inside the page's or answer's own nesting, is past what the stdlib's encoder and
    repr recurse to (how far depends on the stack beneath: a test runner's, a server's): shown clipped instead of
    answering 500. The wire record keeps it whole."""
    if isinstance(value, dict | list | tuple) and left <= 0:
        return CLIPPED
    if isinstance(value, dict):
        return {k: clipped(v, left - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clipped(v, left - 1) for v in value]
    return value
