"""The target server of a session: a Streamable HTTP URL with headers, or a stdio command line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from app.console.secrets import mask_argv, mask_url


@dataclass(slots=True)
class Target:
    kind: Literal["http", "stdio"]
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    cwd: str | None = None

    def describe(self) -> str:
        return self.url if self.kind == "http" else " ".join(self.argv)

    def shown(self) -> str:
        """How to show the target to anyone: credentials in the URL or the command line masked."""
        return mask_url(self.url) if self.kind == "http" else mask_argv(self.argv)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_from(raw: Any) -> Target:
    """A Target from stored or imported data, taking only the fields it knows."""
    raw = raw if isinstance(raw, dict) else {}
    known = {f.name for f in fields(Target)}
    data = {k: v for k, v in raw.items() if k in known}
    if data.get("kind") not in ("http", "stdio"):
        data["kind"] = "http"
    return Target(**data)
