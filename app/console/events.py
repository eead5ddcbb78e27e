"""Timeline events: the append-only record every view is built from. Serialized with a version."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

EVENT_VERSION = 1
# exchange: a snapshot of one request's entry (replaces the previous snapshot for that key)
# wire:     one frame in or out, or a transport happening
# notice:   a console message (connection refused, process exited, …) that gets its own entry
# stderr:   a line the stdio server wrote to stderr
# session:  the session's own state changed (connected, discovered, lists refreshed)
# operation: a snapshot of an operation with its rounds
# progress: the latest progress of a request (coalesced); log: one notifications/message line
# subscription: a snapshot of a listen subscription; reread: a resource re-read after an update


@dataclass(slots=True)
class TimelineEvent:
    session_id: str
    seq: int
    kind: str
    data: dict[str, Any]
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"v": EVENT_VERSION, "session_id": self.session_id, "seq": self.seq, "kind": self.kind,
                "at": self.at, "data": self.data}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TimelineEvent:
        raw = dict(raw)
        version = raw.pop("v")
        if version != EVENT_VERSION:
            raise ValueError(f"unknown timeline event version {version!r}")
        event = cls(session_id=raw.pop("session_id"), seq=raw.pop("seq"), kind=raw.pop("kind"),
                    data=raw.pop("data"), at=raw.pop("at"))
        if raw:  # every key consumed: an unknown key means a newer writer, so say so
            raise ValueError(f"unknown keys in timeline event: {sorted(raw)}")
        return event
