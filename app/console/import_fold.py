"""The fold of an imported session without folding every entry: the same state, a fraction of the work.

A session file of 100,000 entries holds some 400,000 events; folding each (a typed record, a dict merged
into an entry) cost more than storing it, and all but the last `timeline_window` entries are evicted from
the state by the end. So an import goes in two passes:

1. Every event is stored from the file's own rows (`Store.append_rows`), and `WindowTracker` follows
   which keys the fold's windows would hold — the entries' and the rounds' — exactly as `state._entry` and
   `state._exchange` evict them (by first insertion; a key evicted and seen again comes back as new), with
   the two facts of an entry event that outlive its entry (the highest request id, the store-quota notice).
2. `window_events` reads back from the store every event the state needs: all the kinds that are not
   entries, fully; the entry events (exchanges, notices) only after the first event of the final window, and
   of those only the ones of a key in the final window, from the event that (last) brought it in. An
   operation's change outside the window still updates the operations: the same `apply`, told that the entry
   is not in the window (`in_window=False`).

Folded (`state.apply`), this gives what the full fold gives for the window, the rounds, the operations and
everything that is not an entry; the entries before the window are counted (`Timeline.set_total`).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

from app.console.events import EXCHANGE_KINDS, RECORDS, TimelineEvent
from app.console.live_events import OP_KINDS
from app.console.state import SessionState, apply
from app.console.store import Store, iter_events

# Entry events read back only from the window's first event on; every other kind is read whole.
WINDOW_KINDS = (*EXCHANGE_KINDS, "notice")
OTHER_KINDS = tuple(k for k in RECORDS if k not in WINDOW_KINDS and k != "wire")
TRACKED_KINDS = frozenset({*WINDOW_KINDS, *OP_KINDS})  # the kinds `WindowTracker.see` follows
ROUNDS_PER_ENTRY = 4  # the fold keeps window * 4 rounds (state._exchange)


class WindowTracker:
    """Which keys the fold's entry and round windows hold after the events seen so far: key → the sequence
    number of the event that brought it in. Bounded by the windows, whatever the session's size."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.entries: OrderedDict[str, int] = OrderedDict()
        self.rounds: OrderedDict[str, int] = OrderedDict()
        self.last_id = 0
        self.quota_reached = False
        # What `Store.entry_count` would answer, counted as the rows go by: that query scans every exchange
        # event's JSON once more (0.7 s at 100k entries). The same rule: an entry is a distinct value of the
        # stored `exchange` column (a notice's own "n<seq>" when it has none), rounds of an operation not counted.
        self._counted: set[Any] = set()

    @property
    def entry_count(self) -> int:
        return len(self._counted)

    def see(self, seq: int, kind: str, data: dict[str, Any]) -> None:
        self.see_rows([(seq, kind, None, data, None)])

    def see_rows(self, rows: Sequence[tuple[int, str, Any, dict[str, Any], Any]]) -> None:
        """`see` of each row, as an import's chunk holds them (seq, kind, at, data, text): the exchange events'
        steps written out in one loop, 200,000 of them at 100k entries (a call per step was a third of it)."""
        entries, rounds, counted = self.entries, self.rounds, self._counted
        window, last_id = self.window, self.last_id
        # The kinds not followed (the frames, half of a file's events) are left out in C
        for seq, kind, _, data, _ in compress(rows, map(TRACKED_KINDS.__contains__, map(itemgetter(1), rows))):
            if kind not in EXCHANGE_KINDS:
                self._see_other(seq, kind, data)
                continue
            get = data.get
            key, op = get("key", ""), get("op")
            if op is None:  # a round of an operation is no entry of its own (`_count` written out)
                exchange = get("exchange") or get("key")
                if exchange is None:
                    exchange = f"n{seq}"
                elif type(exchange) is not str:
                    exchange = (type(exchange).__name__, repr(exchange))
                counted.add(exchange)
            if kind == "exchange_started":
                rid = get("id")
                if isinstance(rid, int) and rid > last_id:  # `max(last_id, rid)`: of two equal, the first stays
                    last_id = rid
            keys, limit = (rounds, window * ROUNDS_PER_ENTRY) if op or key in rounds else (entries, window)
            if key not in keys:  # `_enter` written out
                keys[key] = seq
                while len(keys) > limit:
                    keys.popitem(last=False)
        self.last_id = last_id

    def _see_other(self, seq: int, kind: str, data: dict[str, Any]) -> None:
        if kind == "notice":
            self._count(seq, data)
            if data.get("signal") == "store_quota":
                self.quota_reached = True
            self._enter(self.entries, f"n{seq}", seq, self.window)
        elif kind in OP_KINDS:
            self._count(seq, data)
            self._enter(self.entries, data.get("key", ""), seq, self.window)

    def _count(self, seq: int, data: dict[str, Any]) -> None:
        exchange = data.get("exchange") or data.get("key")  # the column `append_rows` stores
        if exchange is None:
            exchange = f"n{seq}"
        elif type(exchange) is not str:  # a file's odd key (a number, a list): distinct by type too, as in SQL
            exchange = (type(exchange).__name__, repr(exchange))
        self._counted.add(exchange)

    @staticmethod
    def _enter(keys: OrderedDict[str, int], key: str, seq: int, limit: int) -> None:
        if key not in keys:  # a key already held keeps its place, as a dict assignment does
            keys[key] = seq
            while len(keys) > limit:
                keys.popitem(last=False)

    @property
    def first_seq(self) -> int:
        """The first event of the final windows (entry events before it are not read back)."""
        return min([*self.entries.values(), *self.rounds.values()], default=0)

    def in_window(self, event: TimelineEvent) -> bool:
        """Whether the full fold would show this entry event in the final state (its key held from it on)."""
        data = event.data
        key = f"n{event.seq}" if event.kind == "notice" else data.get("key", "")
        for keys in (self.rounds, self.entries) if event.kind in EXCHANGE_KINDS else (self.entries,):
            if key in keys and event.seq >= keys[key]:
                return True
        return False


def window_events(store: Store, session_id: str, tracker: WindowTracker) -> Iterator[TimelineEvent]:
    """The stored events the final state needs, in sequence order (see the module's docstring)."""
    others = (e for chunk in iter_events(store, session_id, OTHER_KINDS) for e in chunk)
    after = max(tracker.first_seq - 1, 0)
    entries = (e for chunk in iter_events(store, session_id, WINDOW_KINDS, after=after) for e in chunk)
    yield from heapq.merge(others, entries, key=lambda e: e.seq)


def fold_window(state: SessionState, events: Iterator[TimelineEvent],
                tracker: WindowTracker) -> Iterator[TimelineEvent]:
    """`window_events` folded into `state`: an entry event outside the final window folds only what outlives
    its entry. Yields the events it folded whole (for a caller that folds through its own timeline)."""
    for event in events:
        if (event.kind in WINDOW_KINDS or event.kind in OP_KINDS) and not tracker.in_window(event):
            apply(state, event, in_window=False)
            continue
        yield event
    state.last_id = max(state.last_id, tracker.last_id)
    state.store_quota_reached = state.store_quota_reached or tracker.quota_reached
