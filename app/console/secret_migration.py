"""Logs recorded before secrets were explicit: their secret values carried out of the log, once, on restore.

Such a log's `session_created` holds the target as typed (no `secret` list), and its frames and results hold whatever
the server said back. On the first restore after the upgrade the target's default secret values go to the store's
owner-only place, and every event of the session is written again as the timeline would record it now (masked by
app/console/scrub.py, its exact data kept for the owner), so the log, its entry index and everything made from them
hold masks only. The target's creation is written again with its `secret` list, which marks the log as done.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from app.console.events import SessionCreated, TimelineEvent
from app.console.scrub import scrubbed_event, scrubber_for
from app.console.store import Store, iter_events
from app.console.target import target_from

log = logging.getLogger("mcp_console.secrets")


def needs_carrying_out(store: Store, session_id: str, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The target as recorded when the session's log predates explicit secrets; None when it does not."""
    created = store.events(session_id, kinds=("session_created",), limit=1)
    # A version-1 log recorded no creation: its target is in the metadata row (its restore then records one).
    target = created[0].data.get("target") if created else meta.get("target")
    return target if isinstance(target, dict) and "secret" not in target else None


def carry_out(store: Store, session_id: str, meta: dict[str, Any]) -> bool:
    """Mask a pre-upgrade log in place (see the module's docstring); False when it needed nothing."""
    recorded = needs_carrying_out(store, session_id, meta)
    if recorded is None:
        return False
    started = time.monotonic()
    target = target_from(recorded)
    store.save_secrets(session_id, target.secret_values())
    scrubber = scrubber_for(target)
    rewritten = 0
    for chunk in iter_events(store, session_id):
        again = []
        for event in chunk:
            if isinstance(event.record, SessionCreated):
                created = dataclasses.replace(event.record, target=target.to_dict())
                masked = TimelineEvent(session_id, event.seq, created, event.at)
            else:
                masked = scrubbed_event(scrubber, event) if scrubber is not None else event
                if masked is not event:
                    store.save_exact(session_id, event.seq, event.data_json)
                    rewritten += 1
            # Every event again, in order: the entry index is rebuilt from them as at record time.
            again.append(masked)
        store.append_many(again)
        store.flush()  # a chunk at a time: never the whole session in the writer's queue
    store.compact()  # the old bytes of the rows written again leave the file and its write-ahead log
    log.info("session %s: its target's secret values moved out of the log (%d events masked, %.1f s)",
             session_id, rewritten, time.monotonic() - started)
    return True
