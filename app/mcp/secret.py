"""A secret value: shown as its mask everywhere, revealed only where it is written to the wire.

Starlette's `Secret` and httpx's `[secure]` URL password put the mask on the value, not on the output: a `Secret`
passed by mistake to a template, a log line, an f-string or a JSON encoder shows the mask, because its `str`,
`repr` and `__html__` are the mask and the console's JSON encoders write its mask too (`json_default`). Only
`reveal` gives the value; the transports call it when they build a request or start a process.

A secret may carry how it is shown: a header "Bearer <token>" shows "Bearer ••••••" (the scheme explains the
header), a URL with a secret query value shows the URL with only that value masked.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

MASK = "••••••"


class Secret:
    __slots__ = ("_shown", "_value")

    def __init__(self, value: str, shown: str = MASK) -> None:
        self._value = value
        self._shown = shown

    def reveal(self) -> str:
        return self._value

    def __str__(self) -> str:
        return self._shown

    def __repr__(self) -> str:
        return f"Secret({self._shown!r})"

    def __html__(self) -> str:  # Jinja (markupsafe) renders this instead of str(): escaped, as any string is
        return html.escape(self._shown)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value and other._shown == self._shown

    def __hash__(self) -> int:
        return hash((self._value, self._shown))

    def __bool__(self) -> bool:
        return bool(self._value)


def reveal(value: str | Secret) -> str:
    """The value to write to the wire: a secret's own, a plain string as it is."""
    return value.reveal() if isinstance(value, Secret) else value


def shown(value: str | Secret) -> str:
    """The value as anyone may see it: a secret's mask, a plain string as it is."""
    return str(value)


def header_masks(url: str | Secret, headers: Mapping[str, str | Secret]) -> dict[str, str]:
    """How a request's secret headers are recorded (lowercased name → mask): the target's secret headers, and the
    Basic Authorization httpx makes from a URL whose user and password are secret."""
    masks = {name.lower(): str(value) for name, value in headers.items() if isinstance(value, Secret)}
    if isinstance(url, Secret) and MASK + "@" in str(url) and "authorization" not in masks:
        masks["authorization"] = "Basic " + MASK
    return masks


def json_default(value: Any) -> Any:
    """For `json.dumps(default=…)` and orjson: a secret serializes as its mask, anything else is refused."""
    if isinstance(value, Secret):
        return str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
