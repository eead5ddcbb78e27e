"""The target server of a session: a Streamable HTTP URL with headers, or a stdio command line."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field, fields
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
    """A Target from stored or imported data, taking only the fields it knows."""
    raw = raw if isinstance(raw, dict) else {}
    known = {f.name for f in fields(Target)}
    data = {k: v for k, v in raw.items() if k in known}
    if data.get("kind") not in ("http", "stdio"):
        data["kind"] = "http"
    if data.get("era") not in ERAS:
        data["era"] = "auto"
    return Target(**data)
