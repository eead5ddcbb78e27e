"""A look inside requestState for people, never for the protocol: it stays opaque and unaltered.

Guesses the encoding (JWT, JSON, base64url, base64, or opaque), decodes it for display when it can,
and says what changed between two rounds.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from typing import Any

_B64URL = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")
_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _b64decode(text: str, urlsafe: bool) -> bytes | None:
    padded = text + "=" * (-len(text) % 4)
    try:
        return (base64.urlsafe_b64decode if urlsafe else base64.b64decode)(padded)
    except (binascii.Error, ValueError):
        return None


def _as_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in text)
    return text if text and printable / len(text) > 0.95 else None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def entropy_bits_per_char(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def analyze(state: str) -> dict[str, Any]:
    # surrogatepass: a server's state may hold a lone surrogate escape (\\ud800); measured in UTF-8 it raised.
    size = len(state.encode("utf-8", "surrogatepass"))
    info: dict[str, Any] = {"size": size, "entropy": round(entropy_bits_per_char(state), 2),
                            "encoding": "opaque", "decoded": None, "note": ""}
    parts = state.split(".")
    if len(parts) == 3 and all(_B64URL.fullmatch(p) for p in parts[:2]):
        header = _json(_as_text(_b64decode(parts[0], True) or b"") or "")
        payload = _json(_as_text(_b64decode(parts[1], True) or b"") or "")
        if isinstance(header, dict) and "alg" in header:
            info.update(encoding="JWT", decoded={"header": header, "payload": payload})
            return info
    if _json(state) is not None:
        info.update(encoding="JSON", decoded=_json(state),
                    note="plain JSON: the server keeps readable state on the client; it should be sealed")
        return info
    for name, pattern, urlsafe in (("base64url", _B64URL, True), ("base64", _B64, False)):
        body = state
        if pattern.match(body) and len(body) >= 8:
            raw = _b64decode(body, urlsafe)
            text = _as_text(raw) if raw is not None else None
            if text is not None:
                decoded = _json(text)
                info.update(encoding=name, decoded=decoded if decoded is not None else text,
                            note="decodes to readable text: not encrypted")
                return info
    prefix = parts[0] if len(parts) > 1 and len(parts[0]) <= 8 else None
    info["note"] = (f"version prefix {prefix!r}, then sealed bytes (not decodable: good)" if prefix
                    else "does not decode: sealed or encrypted, as the spec advises")
    return info


def compare(previous: str | None, current: str | None) -> str:
    """One line for people: how this round's requestState relates to the last one."""
    if previous is None and current is None:
        return "no requestState"
    if previous is None:
        return "first requestState"
    if current is None:
        return "no requestState this round (the last one is not reused)"
    if previous == current:
        return "unchanged from the previous round"
    common = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        common += 1
    return (f"changed: {len(previous)} → {len(current)} bytes, first {common} characters shared")
