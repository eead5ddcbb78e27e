"""Read-only replicas of sessions another console process owns, and taking a session over from a dead owner.

A process that does not own a session still shows it live: every event the owner publishes reaches this
process through the hub between processes, which calls `on_remote` *before* its local fan-out renders it;
`on_remote` folds the event into the local copy (`Timeline.fold`: never stored again, never published again).

The store is the truth, the hub carries news. A replica starts from the store (its first event, e.g. a
`session_created`, loads the session), and the owner's store writes are batched by a writer thread, so the
owner's hub sender must make the store hold at least what it publishes: it calls `SessionManager.before_publish`
(a store flush, off the event loop) before it sends a batch. Then a replica that loaded from the store up to
seq M ignores every remote event with seq ≤ M (already folded from the store) and folds the rest, and nothing
falls in between.

Takeover: when the owner is dead, the process that receives an action claims the session and rebuilds it
from the store (a replica never saw frames, so the next seq is the store's), records `taken_over` (which fails
what the dead process left in flight), reconnects an HTTP target and resumes its subscriptions. A stdio target
is not restarted: that stays the owner's deliberate Reconnect.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.console.cluster import FAILURES as DIRECTORY_FAILURES
from app.console.events import RECORDS, LinkRevoked, Restored, TakenOver, TimelineEvent
from app.console.hub import Serialized
from app.console.ownership import ProcessInfo
from app.console.session import ConsoleSession
from app.console.target import target_from

if TYPE_CHECKING:
    from app.console.manager import SessionManager

# Everything but frames: a replica shows entries; frames are read from the store when an entry is opened.
FOLDED_KINDS = tuple(k for k in RECORDS if k != "wire")
LINK_KINDS = ("link_created", "link_revoked")
log = logging.getLogger("mcp_console.replica")
STDIO_NOTE = ("The console process that ran this stdio server stopped, and its server with it. "
              "Reconnect to start it again here.")
OWNER_LOOKUP_S = 1.0  # a page waits at most this long for the directory before it is drawn without it
HTTP_NOTE = "The console process that owned this connection stopped; this process reconnected."
# Unknown link tokens read from the store at once, at most (see `link_off_loop`): a flood of made-up cookies
# gets this many worker threads, not one per request; the rest are answered as unknown.
LINK_READS = 4
# Hashes the store had no link for, remembered so a repeated made-up cookie costs no read: a link is stored before
# anyone is told its token, so one that was not there never turns up later under that hash. Forgotten in one go
# past this many.
UNKNOWN_LINKS_KEPT = 4096


@dataclass(slots=True)
class Loaded:
    """One session as the store has it: the events a replica folds, the highest seq, the entry count."""

    events: list[TimelineEvent]
    last_seq: int
    entries: int
    imported: bool  # an imported session file: read-only, no target to connect, its log never written
    # Every share link, read with the session: it may hold link changes a replica never folds (see `_install`),
    # and reading them there keeps that read off the loop too.
    links: list[dict[str, Any]] = field(default_factory=list)


class Replicas:
    def __init__(self, manager: SessionManager) -> None:
        self._manager = manager
        self.ids: set[str] = set()  # sessions this process shows but does not own
        self.owners: dict[str, ProcessInfo] = {}  # the owner last seen for a replica (the page names it)
        self._locks: dict[str, asyncio.Lock] = {}
        # Deleted sessions (here or on another process): an event of theirs still on the bus must not load them
        # again from a store whose delete may not have committed yet (a session id is never reused; one short
        # string per deleted session is kept for the process's life).
        self.deleted: set[str] = set()
        self._links_reading = False  # a re-read of the share links is under way (see _reload_links)
        self._links_again = False
        self._link_reads: dict[str, asyncio.Task[None]] = {}  # token hash → its read under way
        self._unknown_links: set[str] = set()

    def is_replica(self, session_id: str) -> bool:
        return session_id in self.ids

    # -- replicas ---------------------------------------------------------
    def on_remote(self, session_id: str, seq: int, message: Serialized) -> None:
        """An event another process published: fold it into the replica (the hub renders it after this)."""
        session = self._manager.sessions.get(session_id)
        if session is None:
            session = self.load(session_id)
            if session is None:
                return  # not in the store (deleted meanwhile): nothing to show
        if session_id not in self.ids or seq <= session.timeline.seq:
            return  # a session this process owns, or an event the store already gave us
        event = TimelineEvent.from_json(message)
        session.timeline.fold(event)
        session.last_activity = event.at
        if event.kind in LINK_KINDS:  # a link made or revoked on the owner opens (or stops opening) here too
            if isinstance(event.record, LinkRevoked):
                self._manager.links.revoked_elsewhere(event.record.id, event.record.revoked)
            self._reload_links()

    async def link_off_loop(self, token_hash: str) -> None:
        """A link token this process has not heard of is read from the store by its hash, on a worker thread.

        A link made on another process a moment ago (its URL handed on at once) was unknown here until its event
        crossed the hub: a 404 on landing and a 401 with its cookie. The create answers only once the link is
        stored (`SessionManager.stored`), so the store has every link a caller can hold. Reads of one hash are
        shared, at most LINK_READS run at once, and a store that fails leaves the link unknown (the route says so).
        """
        if self._manager.links.lookup_hash(token_hash) is not None or token_hash in self._unknown_links:
            return
        pending = self._link_reads.get(token_hash)
        if pending is None:
            if len(self._link_reads) >= LINK_READS:
                return
            pending = self._manager.tasks.spawn("link-read", self._read_link(token_hash))
            self._link_reads[token_hash] = pending
        await asyncio.shield(pending)

    async def _read_link(self, token_hash: str) -> None:
        try:
            row = await asyncio.to_thread(self._manager.store.link_by_hash, token_hash)
        except Exception:
            log.warning("a share link could not be read from the store", exc_info=True)
            return
        finally:
            self._link_reads.pop(token_hash, None)
        if row is not None:
            self._manager.links.apply([row])
            return
        if len(self._unknown_links) >= UNKNOWN_LINKS_KEPT:
            self._unknown_links.clear()
        self._unknown_links.add(token_hash)

    def _reload_links(self) -> None:
        """Every share link read again from the store, on a worker thread: a new link's token hash is only there
        (its event carries none). On the loop, a silent PostgreSQL made every page and websocket of this process
        wait for the read. Reads do not pile up: news that comes during one asks for one more after it."""
        if self._links_reading:
            self._links_again = True
            return
        self._links_reading = True
        self._manager.tasks.spawn("links-reload", self._read_links())

    async def _read_links(self) -> None:
        try:
            while True:
                self._links_again = False
                try:
                    rows = await asyncio.to_thread(self._manager.store.links)
                except Exception:  # the store is down: the next link news, or a restart, reads them again
                    log.warning("share links could not be read again from the store", exc_info=True)
                    return
                self._manager.links.apply(rows)
                if not self._links_again:
                    return
        finally:
            self._links_reading = False

    def load(self, session_id: str) -> ConsoleSession | None:
        """A replica from the store (blocking read: startup, or what `load_off_loop` did not load first)."""
        if session_id in self.deleted:
            return None
        loaded = read(self._manager, session_id)
        return None if loaded is None else self._install(session_id, loaded)

    async def load_off_loop(self, session_id: str) -> ConsoleSession | None:
        """The session as this process has it, else a replica read from the store on a worker thread.

        Why not on the loop: the read waits on the store, and a PostgreSQL that is down makes each wait as long as
        its pool's timeout (30 s), during which every page and websocket of this process waited with it. A remote
        event of a session new here (the hub awaits this before delivering it) and a request routed for one
        (`routing`) load it this way; one load per session however many ask at once.
        """
        if session_id in self.deleted:
            return None
        existing = self._manager.sessions.get(session_id)
        if existing is not None:
            return existing
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            existing = self._manager.sessions.get(session_id)
            if existing is not None:
                return existing  # loaded (or created, or taken over) while this one waited
            loaded = await asyncio.to_thread(read, self._manager, session_id)
            existing = self._manager.sessions.get(session_id)
            if loaded is None or existing is not None or session_id in self.deleted:
                return existing
            return self._install(session_id, loaded)

    def _install(self, session_id: str, loaded: Loaded) -> ConsoleSession:
        session = self._build(session_id, loaded)
        # The store holds link changes this replica will never fold (they are in what was just read): read the
        # links again now, or a link revoked by the very event that made this process load the session would
        # still open it here.
        self._manager.links.apply(loaded.links)
        session.owned_by = "another console process"  # named once an action learns which
        self._manager.sessions[session_id] = session
        self.ids.add(session_id)
        return session

    async def reload(self, session_id: str) -> int | None:
        """Events of a replica never arrived (the bus lost them, or an import stored them without publishing): read
        it again from the store, which holds them (the owner's store is flushed before it publishes), keeping what
        the page says of its owner. On a worker thread, as `load_off_loop` reads: a store that is down must not
        hold the loop (the hub holds the session's later events until this is done, so they keep their order).

        Returns the highest seq the store holds for it (None when nothing was read): the hub believes no event
        beyond it, since the owner stores every event before it publishes one."""
        if session_id not in self.ids:
            return None
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            if session_id not in self.ids:
                return None  # taken over, or forgotten, while this one waited
            loaded = await asyncio.to_thread(read, self._manager, session_id)
            old = self._manager.sessions.get(session_id)
            if loaded is None or old is None or session_id not in self.ids:
                return None
            self._replace(session_id, old, loaded)
            return loaded.last_seq

    def _replace(self, session_id: str, old: ConsoleSession, loaded: Loaded) -> None:
        session = self._build(session_id, loaded)
        session.owned_by, session.owner_gone = old.owned_by, old.owner_gone
        self._manager.links.apply(loaded.links)
        self._manager.sessions[session_id] = session

    def note_owner(self, session_id: str, owner: ProcessInfo | None) -> None:
        """Name the owner on the replica's page; None: no live process holds it (its owner died)."""
        session = self._manager.sessions.get(session_id)
        if session is None or session_id not in self.ids:
            return
        session.owner_gone = owner is None
        if owner is None:
            self.owners.pop(session_id, None)
            session.owned_by = None
        else:
            self.owners[session_id] = owner
            session.owned_by = f"console process {owner.process_id}"

    async def refresh_owner(self, session_id: str) -> None:
        """Before a replica's page is drawn: ask the directory who holds it (one or two Redis GETs, bounded),
        so a page names its owner before any action, and says so when the owner is gone instead of showing
        a status nobody keeps current."""
        ownership = self._manager.ownership
        if ownership is None or session_id not in self.ids:
            return
        try:
            owner = await asyncio.wait_for(ownership.owner_of(session_id), OWNER_LOOKUP_S)
        except DIRECTORY_FAILURES:
            return  # the directory is away: keep what the page said last
        if owner is not None and owner.process_id == ownership.process_id:
            return  # claimed here a moment ago; take_over is turning the replica into the owned session
        self.note_owner(session_id, owner)

    def load_all(self) -> int:
        """At startup in a team: every stored session as a replica; a process claims one on its next action."""
        count = 0
        for row in self._manager.store.list_sessions():
            if row["id"] not in self._manager.sessions and self.load(row["id"]) is not None:
                count += 1
        return count

    def _build(self, session_id: str, loaded: Loaded) -> ConsoleSession:
        m = self._manager
        created = next((e for e in loaded.events if e.kind == "session_created"), None)
        target = target_from(created.data["target"] if created is not None else None)
        session = ConsoleSession(session_id, target, m.settings, m.store, m.hub.publish, m.http,
                                 created=loaded.events[0].at, new=False)
        for event in loaded.events:
            session.timeline.fold(event)
        session.timeline.fold_through(loaded.last_seq)
        if loaded.imported:  # folded, never stored: the same view manager.restore gives an import
            session.timeline.fold(TimelineEvent(session_id, session.state.seq,
                                                Restored(note="imported: read-only", imported=True)))
        session.timeline.set_total(loaded.entries)
        session.last_activity = loaded.events[-1].at
        return session

    # -- takeover ---------------------------------------------------------
    async def take_over(self, session_id: str) -> ConsoleSession | None:
        """This process has just claimed the session: make the replica an owned session (once, however many ask)."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            if session_id not in self.ids and session_id in self._manager.sessions:
                return self._manager.sessions[session_id]  # another action took it over first
            loaded = await asyncio.to_thread(read, self._manager, session_id)
            if loaded is None:
                return None
            session = self._own(session_id, loaded)
        if session.target.kind == "http" and not session.read_only:
            await self._manager._connect(session)  # reconnects and listens again, as after a restart
        return session

    def _own(self, session_id: str, loaded: Loaded) -> ConsoleSession:
        # Rebuilt from the store, not from the replica: the store holds every frame's seq, so the next
        # event continues after the highest one the dead owner committed.
        session = self._build(session_id, loaded)
        self.ids.discard(session_id)
        self.owners.pop(session_id, None)
        self._manager.sessions[session_id] = session
        if not session.read_only:
            stdio = session.target.kind == "stdio"
            ownership = self._manager.ownership
            session.timeline.append(TakenOver(process_id=ownership.process_id if ownership else "",
                                              note=STDIO_NOTE if stdio else HTTP_NOTE, stdio=stdio))
            session.touch(force=True)
        return session

    def forget(self, session_id: str) -> None:
        """The owner deleted the session: drop the copy without touching the store (the owner did)."""
        self.deleted.add(session_id)
        if session_id in self.ids:
            self.ids.discard(session_id)
            self.owners.pop(session_id, None)
            self._manager.sessions.pop(session_id, None)
            self._manager.hub.close_session(session_id, "session deleted")


def read(manager: SessionManager, session_id: str) -> Loaded | None:
    store = manager.store
    # The highest seq first, then the events: what the owner commits in between is read too, never skipped
    # (a session's events commit in seq order), and the floor is the highest seq actually read.
    last = store.count(session_id)
    events = store.events(session_id, kinds=FOLDED_KINDS)
    if not events:
        return None
    # An import keeps its read-only mark in the metadata row (its log stays the file's), as restore reads it.
    row = next((r for r in store.list_sessions() if r["id"] == session_id), None)
    imported = bool(row is not None and row["meta"].get("read_only")) or any(
        e.kind == "restored" and e.data["imported"] for e in events)
    return Loaded(events, max(last, events[-1].seq), store.entry_count(session_id), imported, store.links())
