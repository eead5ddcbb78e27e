"""A session's surface over time: the snapshots its connects recorded (`surface` events) and what changed since.

The fold keeps the last connect's snapshot whole and every connect's listed by seq (app/console/state.py); the
lists themselves change with every refresh. `since_connect` compares the two (the session page's "changed since
the last connect"); `snapshot_at` reads any connect's snapshot whole from the store (the surface page), and
`snapshots_in` finds them in a session file's events (`mcp-console diff`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.console.events import SurfaceRecorded, TimelineEvent
from app.console.state import SessionState
from app.console.store import Store
from app.mcp.surface import LIST_KEYS, Diff, diff, read_snapshot, snapshot_of

# Which capability offers each list: a list of a capability the server no longer declares is not offered now,
# whatever the fold still holds of an earlier connect.
OFFERED_BY = {"tools": "tools", "resources": "resources", "resourceTemplates": "resources", "prompts": "prompts"}


def current(state: SessionState) -> dict[str, Any] | None:
    """The surface as the session now knows it: the last connect's snapshot with the lists as refreshed since."""
    base = state.surface
    if base is None:
        return None
    found = base.get("capabilities")
    caps: dict[str, Any] = found if isinstance(found, dict) else {}
    lists = {key: list(state.lists.get(key) or []) if OFFERED_BY[key] in caps else [] for key in LIST_KEYS}
    return {**base, **lists, "taken": None}


def since_connect(state: SessionState) -> Diff | None:
    """What changed in the lists since the last connect recorded its snapshot (None before any connect)."""
    now = current(state)
    if now is None or state.surface is None:
        return None
    return diff(read_snapshot(state.surface, checked=False), read_snapshot(now, checked=False))


def snapshot_at(store: Store, session_id: str, seq: int) -> dict[str, Any] | None:
    """The snapshot a connect of this session recorded as event `seq`, whole; None when there is none."""
    for event in store.events(session_id, kinds=("surface",), after_seq=seq - 1, limit=1):
        if event.seq == seq and isinstance(event.record, SurfaceRecorded):
            return read_snapshot(event.record.snapshot, checked=False)
    return None


def snapshots_in(events: Iterable[TimelineEvent]) -> list[tuple[int, dict[str, Any]]]:
    """Every (seq, snapshot) a session's events hold. A log from before snapshots were recorded gives one made from
    what its last connect discovered and listed (as the fold had it), so older files can still be compared."""
    found: list[tuple[int, dict[str, Any]]] = []
    discovered: Any = None
    era: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {}
    last = 0
    for event in events:
        record, last = event.record, event.seq
        if isinstance(record, SurfaceRecorded):
            found.append((event.seq, read_snapshot(record.snapshot, checked=False)))
        elif record.kind == "discovered":
            discovered = event.data.get("result")
        elif record.kind == "era_negotiated":
            era = event.data
        elif record.kind == "lists_refreshed":
            lists.update(event.data.get("lists") or {})
    if not found and (discovered is not None or lists):
        found.append((last, read_snapshot(snapshot_of(
            discovered, lists, era=era.get("era"), protocol_version=era.get("protocol_version"),
            source="the session's last lists (recorded before surface snapshots)", taken=None))))
    return found
