"""The timeline filter: method, status and free text, carried in the URL so a filtered view can be shared.

The session page and its JSON twin filter the same way (`?method=tools/call&status=error&q=timeout`);
the page's script applies the same rules to entries that arrive live, from the data attributes it renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from app.console.entry_index import EntryQuery, matches, statuses_for

MAX_TEXT = 200  # a query longer than this is cut: the filter is a search box, not a payload


@dataclass(frozen=True, slots=True)
class TimelineFilter:
    method: str = ""
    status: str = ""
    q: str = ""
    findings: bool = False  # only entries the live lint found something on

    @classmethod
    def from_query(cls, params: Any) -> TimelineFilter:
        def take(name: str) -> str:
            value = params.get(name)
            return value.strip()[:MAX_TEXT] if isinstance(value, str) else ""
        return cls(method=take("method"), status=take("status").lower(), q=take("q"),
                   findings=take("findings") in ("1", "on", "true"))

    @property
    def active(self) -> bool:
        return bool(self.method or self.status or self.q or self.findings)

    def query(self) -> str:
        """The query string that reproduces this filter ('' when there is none)."""
        parts = {k: v for k, v in (("method", self.method), ("status", self.status), ("q", self.q),
                                   ("findings", "1" if self.findings else "")) if v}
        return urlencode(parts)

    def entry_query(self) -> EntryQuery:
        """The filter as the store takes it (the same rules decide a match in the window and in the store)."""
        return EntryQuery(method=self.method, statuses=statuses_for(self.status), text=self.q.casefold(),
                          findings=self.findings)

    def matches(self, entry: dict[str, Any]) -> bool:
        return matches(self.entry_query(), entry, int(entry.get("finding_count") or 0))

    def apply(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in entries if self.matches(e)] if self.active else entries

    def to_json(self) -> dict[str, str]:
        return {"method": self.method, "status": self.status, "q": self.q}


# The requests a console sends: always among the filter's choices, so a tab can filter on a method before its first
# entry has come (the choices are rendered with the page; entries that come live do not add to them).
SENT_METHODS = ("completion/complete", "prompts/get", "prompts/list", "resources/list", "resources/read",
                "resources/templates/list", "server/discover", "subscriptions/listen", "tools/call", "tools/list")


def methods_seen(entries: list[dict[str, Any]]) -> list[str]:
    """The filter's choices: the methods in the window and those the console sends (a method typed in the URL is
    added by the caller)."""
    return sorted({str(e["method"]) for e in entries if e.get("method")} | set(SENT_METHODS))
