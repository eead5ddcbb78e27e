"""The target server of a session: a Streamable HTTP URL with headers, or a stdio command line."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from app.console.secrets import Redactor

# "sse-2024": 2025-11-25 messages over the older HTTP+SSE transport (2024-11-05), for servers that only have it.
Era = Literal["auto", "modern", "legacy", "sse-2024"]
ERAS: tuple[Era, ...] = ("auto", "modern", "legacy", "sse-2024")


@dataclass(slots=True)
class Target:
    kind: Literal["http", "stdio"]
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    cwd: str | None = None
    # Which revision to speak: auto probes server/discover and falls back to initialize.
    era: Era = "auto"

    def describe(self) -> str:
        return self.url if self.kind == "http" else shlex.join(self.argv)  # pasteable back into a shell

    def shown(self) -> str:
        """How to show the target to a non-owner: every value the owner typed masked, short ones too."""
        return Redactor(self).target_display()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_from(raw: Any) -> Target:
    """A Target from stored or imported data, taking only the fields it knows, each of the type a form gives.

    An imported file's target may hold anything (headers as a string, argv of numbers): every page listing
    sessions, the masking of exports and a stdio start take these as typed, so a field of another type is
    dropped (its default stands), never carried on to fail there.
    """
    raw = raw if isinstance(raw, dict) else {}
    kind: Literal["http", "stdio"] = "stdio" if raw.get("kind") == "stdio" else "http"
    era: Era = next((e for e in ERAS if e == raw.get("era")), "auto")
    url, headers, argv, cwd = raw.get("url"), raw.get("headers"), raw.get("argv"), raw.get("cwd")
    return Target(kind=kind, era=era, url=url if type(url) is str else "",
                  headers=dict(headers) if type(headers) is dict and _strings(headers.items()) else {},
                  argv=list(argv) if type(argv) is list and _strings([argv]) else [],
                  cwd=cwd if type(cwd) is str else None)


def _strings(groups: Iterable[Iterable[Any]]) -> bool:
    return all(type(v) is str for group in groups for v in group)
