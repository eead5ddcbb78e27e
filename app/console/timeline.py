"""The timeline of one session: the append-only source of truth, folded into the session's state.

`append` is the only way state changes: the event is stored, folded (`state.apply`) and then published, at
once, so every reader (of the fold, of the store, of the hub) finds it. The state holds a bounded window of
entries; older ones are rebuilt from the store.

Frames take a lighter path (`add_frame`): they change no state (the fold skips them: see RESTORE_KINDS) and
never reach a tab, so each is given its sequence number at once but the store gets them in batches: an outgoing
frame on the next turn of the event loop, what comes in HOLD_S after its first frame at the latest (or every
FRAME_BATCH frames), always before any other event, so the store sees every event in sequence order. A server
flooding 17,000 frames a second then costs one store write per batch, however few frames a read brings. Every
read of the store made here (`stored`) hands the pending frames over first, so no reader needs to know of them.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from app.console.entry_index import EntryHit, EntryQuery
from app.console.events import EXCHANGE_KINDS, Event, Notice, TimelineEvent, Wire
from app.console.live_events import OP_KINDS
from app.console.scrub import Scrubber, scrubbed_event
from app.console.state import SessionState, apply
from app.console.store import Store

Publish = Callable[[TimelineEvent], None]
T = TypeVar("T")
QUOTA_NOTICE = ("stored data for this session reached the quota (setting max_session_store_bytes = {limit} "
                "bytes); frames are no longer kept")
FRAME_BATCH = 1000  # frames held for one store write at most (a loop turn may take a whole read buffer's worth)
HOLD_S = 0.004  # the longest an incoming frame waits for its batch's store write


class Timeline:
    def __init__(self, session_id: str, store: Store, publish: Publish, window: int, seq: int = 0,
                 quota_bytes: int | None = None) -> None:
        self.session_id = session_id
        self._store = store
        self._publish = publish
        self._quota = quota_bytes
        self.state = SessionState(session_id, window=window, seq=seq)
        self._pending: list[TimelineEvent] = []  # frames numbered, not yet handed to the store (see add_frame)
        self._soon = False  # a flush is scheduled for the next loop turn
        # The loop that adds frames, and its thread (the only one that flushes them), once known.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        self._timer: asyncio.TimerHandle | None = None  # ... or for HOLD_S from now
        self._batch_over: bool | None = None  # past the store quota, as found at this batch's first frame
        self.frame_batches = 0  # store writes of frames (tests count them)
        self._ended = False  # the session was deleted: nothing more is recorded (see end)
        # The target's secret values, masked in every event as it is recorded (app/console/scrub.py); None when the
        # target has none, and then recording costs nothing more.
        self.scrubber: Scrubber | None = None

    # The window lives in the state; these read it.
    @property
    def seq(self) -> int:
        return self.state.seq

    @property
    def entries(self) -> OrderedDict[str, dict[str, Any]]:
        return self.state.entries

    @property
    def rounds(self) -> OrderedDict[str, dict[str, Any]]:
        return self.state.rounds

    @property
    def stderr(self) -> list[str]:
        return self.state.stderr

    @property
    def stderr_stored(self) -> int:
        return self.state.stderr_stored

    @property
    def stderr_dropped(self) -> int:
        return self.state.stderr_dropped

    @property
    def stderr_current(self) -> str:
        return self.state.stderr_current

    @property
    def evicted(self) -> int:
        return self.state.evicted

    @property
    def entry_count(self) -> int:
        return self.state.entry_count

    def append(self, record: Event) -> TimelineEvent | None:
        """Record one event: store it, fold it, publish it. None when a frame is past the store quota, or once the
        session was deleted (see `end`)."""
        if self._ended:
            return None
        if record.kind == "wire" and self._over_quota():
            return None
        if self._pending:
            self.flush()  # the frames before this event reach the store before it
        event = TimelineEvent(self.session_id, self.state.seq + 1, record)
        if self.scrubber is not None:
            event = self._scrubbed(event)
        self._store.append(event)
        apply(self.state, event)
        self._publish(event)
        return event

    def _scrubbed(self, event: TimelineEvent) -> TimelineEvent:
        """The event with the target's secret values masked; its exact data kept in the store's owner-only place."""
        assert self.scrubber is not None
        masked = scrubbed_event(self.scrubber, event)
        if masked is not event:
            self._store.save_exact(event.session_id, event.seq, event.data_json)
        return masked

    def add_frame(self, record: Wire) -> TimelineEvent | None:
        """Record one frame: numbered now, stored with the frames of its batch; nothing to fold or publish
        (a frame is not part of the state, and the hub drops frames). None when past the store quota.

        The quota is checked at a batch's first frame: what the store holds only changes when a batch is handed to
        it, so the answer holds until the next flush (a flood of frames paid the check on each, ~3% of them).
        """
        if self._ended:
            return None
        over = self._batch_over
        if over is None:
            over = self._batch_over = self._over_quota()
        if over:
            return None
        event = TimelineEvent(self.session_id, self.state.seq + 1, record)
        if self.scrubber is not None:
            event = self._scrubbed(event)
        apply(self.state, event)  # a frame folds to nothing but its number (the state's seq)
        self._pend(event)
        if len(self._pending) >= FRAME_BATCH:
            self.flush()
        elif record.direction == "out":
            # On the next loop turn: for a request that turn is the wait for the target's answer, when the console
            # has nothing else to do.
            self._flush_soon()
        else:
            # What comes in is written HOLD_S later at the latest, with whatever else came meanwhile: a flood
            # read a few frames per loop turn paid a flush (and the store's queue) per turn, not per batch.
            self._flush_later()
        return event

    def _pend(self, event: TimelineEvent) -> None:
        if not self._pending:
            self._pending = [event]
        else:
            self._pending.append(event)

    def _flush_soon(self) -> None:
        loop = self._scheduling_loop(self._soon)
        if loop is not None:
            loop.call_soon(self._scheduled_flush)
            self._soon = True

    def _flush_later(self) -> None:
        loop = self._scheduling_loop(self._soon or self._timer is not None)
        if loop is not None:
            self._timer = loop.call_later(HOLD_S, self._timed_flush)

    def _scheduling_loop(self, scheduled: bool) -> asyncio.AbstractEventLoop | None:
        """The running loop a flush is to be scheduled on; None when none is needed: one is scheduled on it already,
        or there is no loop (a script, a unit test), and then the frames are stored at once. A flush scheduled on a
        loop that has gone (one per test) is scheduled again on this one."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return None
        if scheduled and loop is self._loop:
            return None
        self._loop, self._thread = loop, threading.get_ident()
        return loop

    def _scheduled_flush(self) -> None:
        self._soon = False
        self.flush()

    def _timed_flush(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Hand the pending frames to the store, in one write.

        Only on the thread that runs the event loop, which alone adds frames: from a worker thread (a read sent there
        with `asyncio.to_thread`) it leaves them for the loop, since swapping the list there raced the loop's own
        batches. A reader on a thread goes through `read_off_loop`, which flushes on the loop first."""
        if not self._on_loop_thread():
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._batch_over = None  # the store is about to hold more: the next frame asks again
        if self._pending:
            pending, self._pending = self._pending, []
            self._store.append_many(pending)
            self.frame_batches += 1

    def stored(self) -> Store:
        """The session's store with every frame numbered so far handed to it (a reader of the store directly). On a
        worker thread, what the loop handed over before sending the reader there (see `read_off_loop`)."""
        self.flush()
        return self._store

    async def read_off_loop(self, read: Callable[..., T], *args: Any) -> T:
        """`read(*args)` on a worker thread (a store read that may take a while), after the frames this loop turn
        added were handed to the store here, on the loop."""
        self.flush()
        return await asyncio.to_thread(read, *args)

    def _on_loop_thread(self) -> bool:
        loop = self._loop
        return loop is None or self._thread == threading.get_ident() or not loop.is_running()

    def end(self) -> None:
        """The session is being deleted: what is pending is handled now, and nothing is recorded after.

        A call still in flight when its session is deleted goes on reading its answer (an HTTP request is not
        ended by closing the session): without this its frames, progress and end were stored, after the delete,
        under a session that no longer exists, and published to a hub that had forgotten it."""
        self.flush()
        self._ended = True

    @property
    def ended(self) -> bool:
        return self._ended

    def _over_quota(self) -> bool:
        """Past the quota the raw frames stop being kept (said once); everything else goes on."""
        if self._quota is None or self._store.stored_bytes(self.session_id) < self._quota:
            return False
        if not self.state.store_quota_reached:
            self.append(Notice(level="warning", message=QUOTA_NOTICE.format(limit=self._quota),
                               signal="store_quota"))
        return True

    def fold(self, event: TimelineEvent) -> None:
        """Fold a stored event without storing it again (restore, import)."""
        apply(self.state, event)

    def fold_through(self, last_seq: int) -> None:
        """The log is stored up to `last_seq`, and what a restore folded ends before it (frames are not read back
        to fold: they change nothing but the number): the last stored event is folded for its number, so new
        events continue after it and the fold stays the only writer of the state."""
        if last_seq <= self.state.seq:
            return
        for event in self.stored().events(self.session_id, after_seq=last_seq - 1, limit=1):
            apply(self.state, event)

    def set_total(self, count: int) -> None:
        """After a restore: how many entries exist in all (those not in the window load on demand)."""
        self.state.entry_count = max(count, len(self.state.entries))
        self.state.evicted = self.state.entry_count - len(self.state.entries)

    def anchor(self, key: str) -> str:
        """The page element that shows an exchange: its own entry, or the operation it is a round of."""
        rnd = self.rounds.get(key)
        return f"op-{rnd['op']}" if rnd and rnd.get("op") else key

    def notice(self, level: str, message: str, raw: str | None = None, signal: str | None = None) -> None:
        self.append(Notice(level=level, message=message, raw=raw, signal=signal))

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Newest first, as the page shows them."""
        items = list(reversed(self.entries.values()))
        return items[:limit] if limit else items

    def entry(self, key: str) -> dict[str, Any] | None:
        """An entry or a round's exchange snapshot, from memory or else rebuilt from the store."""
        found = self.entries.get(key) or self.rounds.get(key)
        if found is not None:
            return found
        return self._refold(key, self.stored().events(self.session_id, exchange=key, kinds=ENTRY_EVENT_KINDS))

    def wire(self, key: str) -> list[dict[str, Any]]:
        """An exchange's frames as the entry's JSON twin shows them (the frame's kind under `kind`, as on the wire)."""
        out = []
        for e in self.stored().events(self.session_id, exchange=key, kinds=("wire",)):
            data = e.data
            data["kind"] = data.pop("frame_kind")
            out.append(data | {"seq": e.seq})
        return out

    def exact_wire(self, key: str) -> list[dict[str, Any]]:
        """`wire` for the owner: a frame recorded with a secret value masked comes back exact, from the store's
        owner-only place, marked `masked_in_log` (what link holders, exports and the log have is the masked one)."""
        frames = self.wire(key)
        exact = self.stored().exact(self.session_id, [f["seq"] for f in frames]) if self.scrubber is not None else {}
        for i, frame in enumerate(frames):
            text = exact.get(frame["seq"])
            if text is not None:
                data = json.loads(text)
                data["kind"] = data.pop("frame_kind", None)
                frames[i] = data | {"seq": frame["seq"], "masked_in_log": True}
        return frames

    def older(self, before_seq: int, limit: int) -> list[dict[str, Any]]:
        """Entries that started before `before_seq`, newest first, rebuilt from the store.

        Found by the events that begin an entry only: read by every kind of an entry's events, an operation of
        many rounds or answers used up the events read for a page, which then came back short and said it was the
        last."""
        store = self.stored()
        found: OrderedDict[str, dict[str, Any]] = OrderedDict()  # newest first
        cursor = before_seq
        while len(found) < limit:
            events = store.events(self.session_id, kinds=ENTRY_BEGINNINGS, before_seq=cursor, limit=limit * 4)
            for event in reversed(events):  # a round's start begins no entry: read on until a page is full
                data = event.data
                key = data.get("key") or f"n{event.seq}"
                if (event.kind in EXCHANGE_KINDS and data.get("op")) or key in found:
                    continue
                # A notice is its data; any other entry is folded again below from its events.
                shown = data if event.kind == "notice" else {}
                found[key] = {"seq0": event.seq, "key": key, "kind": event.kind, **shown, "at0": event.at}
                if len(found) >= limit:
                    break
            if len(events) < limit * 4:
                break
            cursor = events[0].seq
        ends = store.events(self.session_id, kinds=SESSION_ENDS)
        for key in list(found):  # later events of an entry may lie after before_seq: all of them are folded again
            if found[key]["kind"] != "notice":
                entry = self._refold(key, self._store.events(self.session_id, exchange=key, kinds=ENTRY_EVENT_KINDS),
                                     ends)
                if entry is not None:
                    found[key] = entry
        return list(found.values())

    def _refold(self, key: str, events: list[TimelineEvent],
                ends: list[TimelineEvent] | None = None) -> dict[str, Any] | None:
        """One entry (or a round's exchange) folded again from its stored events, by the same `apply`, with the
        session's restarts and takeovers after its start (what was in flight then ended then, as in the window)."""
        if not events:
            return None
        if ends is None:
            ends = self._store.events(self.session_id, kinds=SESSION_ENDS)
        state = SessionState(self.session_id)
        first = events[0].seq
        for event in heapq.merge(events, [e for e in ends if e.seq > first], key=lambda e: e.seq):
            apply(state, event)
        return state.entries.get(key) or state.rounds.get(key)

    def search(self, query: EntryQuery, before_seq: int | None, limit: int) -> tuple[list[dict[str, Any]], int, int]:
        """A page of the entries of the whole session that match, newest first: (entries, total matches,
        the cursor for the next page, 0 when this is the last). The store finds them; each is taken from
        the window when it is there, else rebuilt from its events."""
        found = self.stored().find_entries(self.session_id, query, before_seq=before_seq, limit=limit)
        entries = [self.entries.get(hit.key) or self._rebuild(hit) for hit in found.hits]
        more = len(found.hits) >= limit and found.hits[-1].seq0 > 1
        return entries, found.total, found.hits[-1].seq0 if more else 0

    def _rebuild(self, hit: EntryHit) -> dict[str, Any]:
        entry: dict[str, Any] = {"seq0": hit.seq0, "key": hit.key, "kind": hit.kind}
        self.flush()
        if hit.kind == "notice":
            for event in self._store.events(self.session_id, after_seq=hit.seq0 - 1, limit=1):
                entry.update(event.data)
                entry.setdefault("at0", event.at)
        else:
            events = self._store.events(self.session_id, exchange=hit.key, kinds=ENTRY_EVENT_KINDS)
            entry.update({k: v for k, v in (self._refold(hit.key, events) or {}).items() if k != "seq0"})
        if hit.findings:
            entry["finding_count"] = hit.findings
        return entry


# The events of one entry, read back to fold it again when it is not in the window: its exchange's, or its
# operation's transitions (and who cancelled it, and when its deadline moved).
ENTRY_EVENT_KINDS = (*EXCHANGE_KINDS, *OP_KINDS, "cancel_requested", "deadline_extended")
# The events that begin an entry (an exchange's start that is a round begins none; a version-2 operation began with
# its first snapshot).
ENTRY_BEGINNINGS = ("exchange_started", "notice", "op_started", "op_snapshot")
# What ends everything in flight at once: an entry folded again takes them too.
SESSION_ENDS = ("restored", "taken_over")

