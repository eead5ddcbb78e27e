"""The entry index: one small row per timeline entry, so a filter searches the whole session in the store.

The page holds a bounded window of entries; a filter must still find an entry that left it long ago. Each
store keeps, beside its events, one row per entry with the facts the filter reads (method, status, the
searchable text, the finding count), updated as events are appended. The rules here are pure and shared by
every store: which entry an event belongs to, and how its facts merge (as the fold merges an entry's data).

`EntryQuery` is what the filter asks; `Store.find_entries` answers with a page of `EntryHit`s, newest first,
and the number of matches in the whole session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from app.console.events import EXCHANGE_KINDS, TimelineEvent
from app.console.live_events import OP_KINDS
from app.console.secrets import MASK

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
    # Casefolded values the caller may not see (what the owner typed, for a link holder or a presenter): the
    # text is searched as if each were already masked, so a count of matches says nothing about them.
    hidden: tuple[str, ...] = ()
    # The same values in any escaped spelling (another JSON writer's escapes, JSON inside JSON), a case-blind
    # pattern over the casefolded text (`Redactor.hidden_pattern`). No store's SQL runs it: a store finds the rows
    # that hold the query as they are and checks each again here (`refined`).
    hidden_pattern: re.Pattern[str] | None = field(default=None, compare=False)

    @property
    def active(self) -> bool:
        return bool(self.method or self.statuses or self.text or self.findings)

    @property
    def checked_here(self) -> bool:
        """Whether a store must check its text matches with `refined`: the caller may not see some spellings."""
        return bool(self.text) and self.hidden_pattern is not None

    @property
    def text_in_sql(self) -> bool:
        """Whether a store may keep to the rows whose text holds the query as it is (`refined`): hiding only takes
        matches away, unless the query itself holds the mask."""
        return bool(self.text) and MASK[0] not in self.text


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
    return not query.text or query.text in hide(search_text(facts), query.hidden, query.hidden_pattern)


def hide(text: str, hidden: tuple[str, ...], pattern: re.Pattern[str] | None = None) -> str:
    """The searchable text as a caller who may not see `hidden` sees it: the escaped spellings and the heads a cut
    left first, then the plain forms longest first, as the Redactor masks."""
    if pattern is not None and ("\\" in text or "%" in text or "&#" in text or "\u2026" in text):  # see Redactor
        text = pattern.sub(MASK, text)
    for value in hidden:
        text = text.replace(value, MASK)
    return text


REFINED_CHARS = 65_536


def refined(rows: Iterable[tuple[str, Any, str, Any, str]], query: EntryQuery, clean: Callable[[str], str],
            before_seq: int | None, limit: int) -> EntryMatches:
    """A masked caller's matches among the rows a store found (key, seq0, kind, findings, text; newest first), each
    checked with every spelling hidden, and the page from `before_seq`: the count says nothing of what is masked."""
    text, hidden = clean(query.text.casefold()), tuple(clean(v) for v in query.hidden)
    # Each entry's text is checked up to REFINED_CHARS: a server's 2 MB error message checked whole, with every
    # spelling hidden, held the loop for seconds per link holder's query. Past it a link holder's filter finds no
    # more in that entry (fewer matches than the owner's, never more).
    hits = [EntryHit(key, int(seq0), kind, int(findings)) for key, seq0, kind, findings, stored in rows
            if text in hide(stored[:REFINED_CHARS], hidden, query.hidden_pattern)]
    page = [h for h in hits if before_seq is None or h.seq0 < before_seq][:limit]
    return EntryMatches(page, len(hits))
