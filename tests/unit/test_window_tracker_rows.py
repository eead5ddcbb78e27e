"""`WindowTracker.see_rows` (an import's chunk in one loop) ends where the per-event steps it writes out end.

The reference is the tracker's `see` as it was before the loop, one event and one helper call at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.console.events import EXCHANGE_KINDS
from app.console.import_fold import ROUNDS_PER_ENTRY, WindowTracker


class ReferenceTracker(WindowTracker):
    def see(self, seq: int, kind: str, data: dict[str, Any]) -> None:
        if kind in EXCHANGE_KINDS:
            key = data.get("key", "")
            if data.get("op") is None:
                self._count(seq, data)
            if kind == "exchange_started":
                rid = data.get("id")
                if isinstance(rid, int):
                    self.last_id = max(self.last_id, rid)
            if data.get("op") or key in self.rounds:
                self._enter(self.rounds, key, seq, self.window * ROUNDS_PER_ENTRY)
            else:
                self._enter(self.entries, key, seq, self.window)
        elif kind == "notice":
            self._count(seq, data)
            if data.get("signal") == "store_quota":
                self.quota_reached = True
            self._enter(self.entries, f"n{seq}", seq, self.window)
        elif kind in ("op_started", "op_round", "op_ended"):
            self._count(seq, data)
            self._enter(self.entries, data.get("key", ""), seq, self.window)


def state(tracker: WindowTracker) -> tuple[Any, ...]:
    return (list(tracker.entries.items()), list(tracker.rounds.items()), tracker.last_id, type(tracker.last_id),
            tracker.quota_reached, tracker.entry_count, sorted(map(repr, tracker._counted)))


KEYS = st.sampled_from(["a", "b", "c", "d", ""]) | st.integers(0, 2) | st.none()
DATA = st.fixed_dictionaries({}, optional={
    "key": KEYS, "op": st.sampled_from([None, "", "o1", "o2"]), "id": st.none() | st.integers(-2, 9) | st.booleans()
    | st.floats(0, 9) | st.text(max_size=1), "exchange": KEYS, "signal": st.sampled_from(["store_quota", "x"])})
EVENTS = st.lists(st.tuples(st.sampled_from(["exchange_started", "exchange_finished", "notice", "op_started",
                                             "op_round", "op_ended", "wire", "status"]), DATA), max_size=40)


@settings(max_examples=300, deadline=None)
@given(events=EVENTS, window=st.integers(1, 3), chunk=st.integers(1, 7))
def test_a_chunk_s_rows_leave_the_tracker_as_its_events_one_by_one_do(events: list[tuple[str, dict[str, Any]]],
                                                                       window: int, chunk: int) -> None:
    rows = [(seq, kind, float(seq), data, "{}") for seq, (kind, data) in enumerate(events, 1)]
    reference, tracker = ReferenceTracker(window), WindowTracker(window)
    for seq, kind, _, data, _ in rows:
        reference.see(seq, kind, data)
    for i in range(0, len(rows), chunk):
        tracker.see_rows(rows[i:i + chunk])
    assert state(tracker) == state(reference)


def test_one_event_seen_alone_is_one_row() -> None:
    tracker, reference = WindowTracker(2), ReferenceTracker(2)
    for t in (tracker, reference):
        t.see(1, "exchange_started", {"key": "k", "id": 3})
        t.see(2, "notice", {"signal": "store_quota"})
    assert state(tracker) == state(reference)
    assert isinstance(tracker.entries, OrderedDict) and tracker.last_id == 3 and tracker.quota_reached


def test_an_id_equal_to_the_highest_keeps_the_highest_as_it_was() -> None:
    rows = [(1, "exchange_started", 1.0, {"key": "a", "id": False}, "{}"),
            (2, "exchange_started", 2.0, {"key": "b", "id": 1}, "{}"),
            (3, "exchange_started", 3.0, {"key": "c", "id": True}, "{}")]
    tracker, reference = WindowTracker(2), ReferenceTracker(2)
    tracker.see_rows(rows)
    for seq, kind, _, data, _ in rows:
        reference.see(seq, kind, data)
    assert state(tracker) == state(reference) and type(tracker.last_id) is int
