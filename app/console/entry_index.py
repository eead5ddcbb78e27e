"""The entry index: one small row per timeline entry, so a filter searches the whole session in the store.

The page holds a bounded window of entries; a filter must still find an entry that left it long ago. Each
store keeps, beside its events, one row per entry with the facts the filter reads (method, status, the
searchable text, the finding count), updated as events are appended. The rules here are pure and shared by
every store: which entry an event belongs to, and how its facts merge (as the fold merges an entry's data).

`EntryQuery` is what the filter asks; `Store.find_entries` answers with a page of `EntryHit`s, newest first,
and the number of matches in the whole session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.console.events import EXCHANGE_KINDS, TimelineEvent
from app.console.live_events import OP_KINDS

# Status groups a person means when filtering; an exact status (e.g. "tool_error") works too.
STATUS_GROUPS: dict[str, frozenset[str]] = {
    "ok": frozenset({"ok", "complete"}),
    "error": frozenset({"error", "tool_error", "failed", "protocol_error", "timeout", "cancelled", "abandoned"}),
    "pending": frozenset({"pending", "running", "awaiting_input", "input_required"}),
}
# The facts of an entry the free-text search looks in (the page's script searches the same ones live).
TEXT_FIELDS = ("method", "name", "error", "message", "key", "op", "status")
FACT_FIELDS = (*TEXT_FIELDS, "level")
# The kinds of event that touch an index row (see `entry_key`; a frame never does).
INDEXED_KINDS = frozenset({*EXCHANGE_KINDS, *OP_KINDS, "notice", "finding"})
ROUND = "round"  # an index row of an operation's round: never a match itself; its findings go to the operation


@dataclass(frozen=True, slots=True)
class EntryQuery:
    method: str = ""                          # exact
    statuses: frozenset[str] = frozenset()    # any of these (an entry's status, or a notice's level)
    text: str = ""                            # casefolded substring of the entry's searchable text
    findings: bool = False                    # only entries the live lint found something on

    @property
    def active(self) -> bool:
        return bool(self.method or self.statuses or self.text or self.findings)


@dataclass(frozen=True, slots=True)
class EntryHit:
    key: str
    seq0: int       # the entry's first event: its place in the timeline, and the cursor for the next page
    kind: str       # exchange | notice | operation
    findings: int


@dataclass(frozen=True, slots=True)
class EntryMatches:
    hits: list[EntryHit] = field(default_factory=list)  # newest first, at most the limit asked for
    total: int = 0                                       # matches in the whole session


def statuses_for(status: str) -> frozenset[str]:
    """A status as the filter takes it: a group name, or one exact status."""
    return STATUS_GROUPS.get(status, frozenset({status})) if status else frozenset()


def entry_of(event: TimelineEvent) -> tuple[str, str] | None:
    """(key, kind) of the index row an event touches, or None when it is no entry's.

    A finding touches the row of the exchange it is about; the store resolves a round to its operation.
    """
    return entry_key(event.kind, event.seq, event.data)


def entry_key(kind: str, seq: int, data: dict[str, Any]) -> tuple[str, str] | None:
    """`entry_of` from an event's parts."""
    if kind in EXCHANGE_KINDS:
        return str(data.get("key") or ""), ROUND if data.get("op") else "exchange"
    if kind in OP_KINDS:
        return str(data.get("key") or ""), "operation"
    if kind == "notice":
        return f"n{seq}", "notice"
    if kind == "finding" and data.get("exchange"):
        return str(data["exchange"]), "finding"
    return None


def merge(facts: dict[str, Any], event: TimelineEvent) -> dict[str, Any]:
    """An entry's facts after one more of its events: later values win, as in the fold (`state._entry`)."""
    data = event.data
    return {**facts, **{f: data[f] for f in FACT_FIELDS if f in data}}


def search_text(facts: dict[str, Any]) -> str:
    """What a text query is looked for in: the searchable facts, joined and casefolded once, when stored."""
    return " ".join([str(facts.get(f) or "") for f in TEXT_FIELDS]).casefold()  # a list: join makes one anyway


def status_of(facts: dict[str, Any]) -> str:
    return str(facts.get("status") or facts.get("level") or "")


def matches(query: EntryQuery, facts: dict[str, Any], findings: int) -> bool:
    """The filter's rule on one entry's facts (the window in memory and the stores agree on it)."""
    if query.findings and not findings:
        return False
    if query.method and str(facts.get("method") or "") != query.method:
        return False
    if query.statuses and status_of(facts) not in query.statuses:
        return False
    # The text holds masks where the target's secret values were (app/console/scrub.py): every caller searches it.
    return not query.text or query.text in search_text(facts)
