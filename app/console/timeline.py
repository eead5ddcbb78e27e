"""The timeline of one session: the append-only source of truth, with a bounded window in memory."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from app.console.events import TimelineEvent
from app.console.store import Store

Publish = Callable[[TimelineEvent], None]
STDERR_KEPT = 500  # stderr lines held in memory and shown in the page's box


class Timeline:
    def __init__(self, session_id: str, store: Store, publish: Publish, window: int, seq: int = 0) -> None:
        self.session_id = session_id
        self._store = store
        self._publish = publish
        self._window = window
        self.seq = seq
        # key → entry snapshot; insertion order is the order entries first appeared.
        self.entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.stderr: list[str] = []
        self.stderr_stored = 0  # stderr lines recorded in all, against max_stderr_lines
        self.stderr_dropped = 0  # lines past max_stderr_lines: counted, not stored
        self.rounds: OrderedDict[str, dict[str, Any]] = OrderedDict()  # exchange snapshots of operation rounds
        self.evicted = 0  # entries that left the window: the page offers to load them
        self.entry_count = 0  # every entry ever, not only the window

    def append(self, kind: str, data: dict[str, Any]) -> TimelineEvent:
        self.seq += 1
        event = TimelineEvent(self.session_id, self.seq, kind, data)
        self._store.append(event)
        self.fold(event)
        self._publish(event)
        return event

    def fold(self, event: TimelineEvent) -> None:
        """Apply one event to the in-memory window (also used when loading from the store)."""
        if event.kind == "exchange" and (event.data.get("op") or event.data.get("key") in self.rounds):
            # A round of an operation: it nests under the operation's entry, not beside it,
            # and keeps its own snapshot for its detail view.
            key = event.data["key"]
            self.rounds[key] = {**self.rounds.get(key, {"seq0": event.seq, "at0": event.at}), **event.data}
            while len(self.rounds) > self._window * 4:
                self.rounds.popitem(last=False)
            return
        if event.kind in ("exchange", "notice", "operation"):
            key = event.data.get("key") or f"n{event.seq}"
            if key in self.entries:
                self.entries[key] = {**self.entries[key], **event.data}
            else:
                self.entries[key] = {"seq0": event.seq, "key": key, "kind": event.kind, **event.data,
                                     "at0": event.at}
                self.entry_count += 1
                while len(self.entries) > self._window:
                    self.entries.popitem(last=False)
                    self.evicted += 1
        elif event.kind in ("progress", "log"):
            entry = self.entries.get(str(event.data.get("target")))
            if entry is not None and event.kind == "progress":
                entry["progress"] = event.data
            elif entry is not None:
                logs = entry.setdefault("logs", [])
                logs.append(event.data)
                del logs[:-200]
        elif event.kind == "stderr":
            # A batch of lines (older sessions recorded one "line" per event).
            lines = event.data["lines"] if "lines" in event.data else [event.data.get("line", "")]
            self.stderr.extend(str(line) for line in lines)
            del self.stderr[:-STDERR_KEPT]
            self.stderr_stored += len(lines)
            self.stderr_dropped = max(self.stderr_dropped, int(event.data.get("dropped") or 0))

    def set_total(self, count: int) -> None:
        """After a restore: how many entries exist in all (those not in the window load on demand)."""
        self.entry_count = max(count, len(self.entries))
        self.evicted = self.entry_count - len(self.entries)

    def anchor(self, key: str) -> str:
        """The page element that shows an exchange: its own entry, or the operation it is a round of."""
        rnd = self.rounds.get(key)
        return f"op-{rnd['op']}" if rnd and rnd.get("op") else key

    def notice(self, level: str, message: str, **extra: Any) -> TimelineEvent:
        return self.append("notice", {"level": level, "message": message, **extra})

    def recent(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Newest first, as the page shows them."""
        items = list(reversed(self.entries.values()))
        return items[:limit] if limit else items

    def entry(self, key: str) -> dict[str, Any] | None:
        """An entry or a round's exchange snapshot, from memory or else rebuilt from the store."""
        found = self.entries.get(key) or self.rounds.get(key)
        if found is not None:
            return found
        snapshot: dict[str, Any] = {}
        for event in self._store.events(self.session_id, exchange=key, kinds=("exchange",)):
            snapshot.update(event.data)
        return snapshot or None

    def wire(self, key: str) -> list[dict[str, Any]]:
        return [e.data | {"seq": e.seq} for e in self._store.events(self.session_id, exchange=key, kinds=("wire",))]

    def older(self, before_seq: int, limit: int) -> list[dict[str, Any]]:
        """Entries that started before `before_seq`, newest first, rebuilt from the store."""
        events = self._store.events(self.session_id, kinds=("exchange", "notice", "operation"),
                                    before_seq=before_seq, limit=limit * 4)
        folded: OrderedDict[str, dict[str, Any]] = OrderedDict()
        for event in events:
            key = event.data.get("key") or f"n{event.seq}"
            if event.kind == "exchange" and event.data.get("op"):
                continue  # rounds nest under their operation
            if key not in folded:
                folded[key] = {"seq0": event.seq, "key": key, "kind": event.kind, **event.data, "at0": event.at}
        keys = list(reversed(folded))[:limit]
        for key in keys:  # later snapshots of an entry may lie after before_seq: take them all
            if folded[key]["kind"] != "notice":
                for event in self._store.events(self.session_id, exchange=key, kinds=("exchange", "operation")):
                    folded[key].update(event.data)
        return [folded[k] for k in keys]
