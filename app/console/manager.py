"""All sessions of one console process, the shared HTTP client, the store and the hub."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from app.console import gc_scope, secret_migration
from app.console.cluster import FAILURES as DIRECTORY_FAILURES
from app.console.cluster import Cluster
from app.console.events import RECORDS, LinkCreated, LinkRevoked, TimelineEvent
from app.console.hub import Hub, Renderer, Serialized
from app.console.hub_redis import new_process_id
from app.console.import_fold import WindowTracker, fold_window, window_events
from app.console.links import ShareLink
from app.console.ownership import Ownership
from app.console.replica import Replicas
from app.console.scrub import scrubbed_rows, scrubber_for
from app.console.session import ConsoleSession, new_session_id
from app.console.sharing import LinkRegistry
from app.console.store import ImportRow, Store, iter_events, open_store
from app.console.target import Target, target_from
from app.console.tasks import TaskGroup
from app.console.team import make_cluster, make_hub, team_key
from app.console.workspaces import WorkspaceBook
from app.mcp.upstream import upstream_client
from app.settings import Settings

# Everything but frames: the state is their fold (frames are read per entry, on demand).
RESTORE_KINDS = tuple(k for k in RECORDS if k != "wire")
IMPORT_CHUNK = 4096  # events an import hands the store before it waits for them (one INSERT: see sql_rows)
CLAIM_WAIT_S = 5.0  # how long a create waits for the directory to record its claim before answering anyway


__all__ = ["RESTORE_KINDS", "SessionManager", "target_from"]


class SessionManager:
    def __init__(self, settings: Settings, render: Renderer, store: Store | None = None,
                 cluster: Cluster | None = None) -> None:
        self.settings = settings
        self.store: Store = store or open_store(settings)
        # This process among the console processes sharing one Redis (alone when redis_url is empty).
        self.process_id = new_process_id()
        self.hub: Hub = make_hub(settings, render, process_id=self.process_id, on_remote=self.on_remote,
                                before_remote=self.before_remote, before_publish=self.before_publish,
                                on_forget=self.on_forget, on_gap=self.on_gap, known_seq=self.known_seq)
        # A cluster passed in (tests: MemoryClusters on one MemoryDirectory) stands in for Redis's directory.
        self.cluster: Cluster = cluster if cluster is not None else make_cluster(settings, self.process_id)
        # None: a single process, owning every session (nothing is routed). Else see app/console/ownership.py.
        # A team (redis_url set, or a cluster given): the cluster decides who owns what.
        self.ownership: Ownership | None = self.cluster if settings.redis_url or cluster is not None else None
        # What the processes of a team sign with (app/console/team_key.py); a team refuses to run without it.
        self.team_key = team_key(settings)
        if self.ownership is not None and self.team_key is None:
            raise ValueError("A team of console processes needs team_secret: it signs what they tell each other.")
        if self.store.team_deployment(team=bool(settings.redis_url)) and not settings.redis_url:
            raise ValueError("This database is a team's: its console processes share it through Redis. A process "
                             "started on it without MCP_CONSOLE_REDIS_URL would act on the team's sessions as if "
                             "it were alone (two owners of one session, one history overwritten). Set "
                             "MCP_CONSOLE_REDIS_URL and the team's other settings, or use a database of its own.")
        self.replicas = Replicas(self)
        self.tasks = TaskGroup()
        self.sessions: dict[str, ConsoleSession] = {}
        self.links = LinkRegistry(self.store, self.hub, self._link_changed)
        self.workspaces = WorkspaceBook(self.store)  # the owner's sets of sessions side by side
        self.http = upstream_client()  # one for every HTTP target: pooling, and one place to set limits

    def create(self, target: Target) -> ConsoleSession:
        session = ConsoleSession(new_session_id(), target, self.settings, self.store, self.hub.publish, self.http)
        self.sessions[session.id] = session
        session.touch()
        return session

    async def settle(self, session: ConsoleSession) -> None:
        """In a team, before anyone hears of a new session: its events and row are in the store, and it is claimed.
        Told to the browser first (the create's redirect), another process asked for it found nothing to load (a
        404), or found it unclaimed and claimed it for itself, taking it over from the process that made it."""
        if self.ownership is None:
            return
        session.timeline.flush()
        await self.stored()
        # A fresh id nobody else knows: the claim cannot lose. With the directory away the session is still made
        # here, and its first action claims it (or is answered 503 meanwhile).
        with contextlib.suppress(*DIRECTORY_FAILURES):
            await asyncio.wait_for(self.ownership.claim(session.id), CLAIM_WAIT_S)

    async def stored(self) -> None:
        """In a team, what was handed to the store is in it (a worker thread waits for the writer): before a new
        session or share link is told to anyone, who may open it on another process at once."""
        if self.ownership is not None:
            await asyncio.to_thread(self.store.flush)

    def on_remote(self, session_id: str, seq: int, message: Serialized) -> None:
        """The hub between processes calls this for every event another process published, before fan-out."""
        self.replicas.on_remote(session_id, seq, message)

    async def before_remote(self, session_id: str) -> None:
        """Before the hub delivers another process's event: a session new here is loaded off the loop first."""
        if session_id not in self.sessions:
            await self.replicas.load_off_loop(session_id)

    def on_forget(self, session_id: str) -> None:
        """Another process deleted the session: drop this process's replica (the hub closed its sockets)."""
        self.replicas.forget(session_id)

    async def on_gap(self, session_id: str) -> int | None:
        """The hub between processes lost events of a session, or another process stored events it never
        published (see RedisHub._reread): a replica reads it again from the store, off the loop. Returns the
        store's highest seq of it, which the hub checks the next event against."""
        return await self.replicas.reload(session_id)

    def known_seq(self, session_id: str) -> int | None:
        """The highest seq this process holds of a replica (None: not a replica here): the hub checks the first
        event it hears of the session against it, as it checks later ones against the last one it heard."""
        session = self.sessions.get(session_id)
        return session.timeline.seq if session is not None and self.replicas.is_replica(session_id) else None

    def before_publish(self) -> None:
        """The hub between processes calls this (off the loop) before it publishes a batch: the store then
        holds everything the hub carries, so a replica that loads from the store misses nothing."""
        self.store.flush()

    def restore(self) -> int:
        """Bring back every stored session, disconnected, with its recent timeline."""
        for row in self.store.list_sessions():  # logs from before explicit secrets: masked once, in place
            if not row["meta"].get("importing"):  # (an import under way, perhaps another process's, is masked)
                secret_migration.carry_out(self.store, row["id"], row["meta"])
        if self.ownership is not None:  # in a team they may be live elsewhere: replicas, claimed on an action
            return self.replicas.load_all()
        for orphan in self.store.orphans():  # events of no session (a store written before imports marked theirs)
            self.store.delete_session(orphan)
        count = 0
        for row in self.store.list_sessions():
            if row["meta"].get("importing"):  # an import a crash cut off: nothing will finish it
                self.store.delete_session(row["id"])
                continue
            meta = row["meta"]  # a cache: read for a version-1 log only (see ConsoleSession.restore)
            session = ConsoleSession(row["id"], target_from(meta.get("target")), self.settings, self.store,
                                     self.hub.publish, self.http, created=row["created"], new=False)
            session.last_activity = row["updated"]
            last = self.store.count(row["id"])
            read_only = bool(meta.get("read_only")) or any(
                e.data["imported"] for e in self.store.events(row["id"], kinds=("restored",)))
            note = "imported: read-only" if read_only else \
                ("The console restarted. Reconnect (or Restart the server, on stdio) to send requests; the timeline is "
                 "as it was.")
            # Folded a chunk at a time: a session of 100,000 entries never sits in memory as events.
            events = (e for chunk in iter_events(self.store, row["id"], RESTORE_KINDS) for e in chunk)
            session.restore(meta, events, note, last_seq=last, imported=read_only)
            session.timeline.set_total(self.store.entry_count(row["id"]))
            session.touch(force=True, at=row["updated"])  # a restart is not the session's activity
            self.sessions[session.id] = session
            count += 1
        return count

    def import_session(self, meta: dict[str, Any], created: float, events: Iterable[TimelineEvent]) -> ConsoleSession:
        """A session from a file: read-only, no target connected, looking as it did."""
        rows = [ImportRow(e.seq, e.kind, e.at, e.data, e.data_json) for e in events]
        return self.add(self.imported(meta, created, [rows[i:i + IMPORT_CHUNK]
                                                       for i in range(0, len(rows), IMPORT_CHUNK)]))

    def imported(self, meta: dict[str, Any], created: float, chunks: Iterable[list[ImportRow]]) -> ConsoleSession:
        """Build an imported session (safe on a worker thread: it is nobody's until `add`).

        The file's events stream into the store a chunk at a time as rows (no typed record for each: most are
        frames, never folded), while a `WindowTracker` follows which entries the fold would keep; then only
        what the state needs is read back and folded (app/console/import_fold.py). An import holds at most
        two chunks of a file's events at once (`SessionFileReader.chunks` gives them).
        """
        # An owner's file with its secret values: masked as they are stored (the import keeps none of them).
        target = target_from(meta.get("target"))
        scrubber = scrubber_for(target)
        note = "Imported from a session file: read-only."
        if meta.get("secrets_included"):
            note += " The file held the target's secret values; they were masked on import and not kept."
        meta = {k: v for k, v in meta.items() if k != "secrets_included"}
        meta = (scrubber.value(meta) if scrubber is not None else meta) | {"target": target.to_dict()}
        chunks = (scrubbed_rows(scrubber, rows, target.to_dict()) for rows in chunks)
        session = ConsoleSession(new_session_id(), target, self.settings, self.store, self.hub.publish, self.http,
                                 created=created, new=False)
        tracker = WindowTracker(self.settings.timeline_window)
        last = 0
        # The read-only mark is in the store before the first of the file's events: another console process of
        # a team that loads the session while its events are still arriving must show it read-only (and never
        # take it over as a live session, connecting the target the file names). `importing` marks it unfinished.
        self.store.save_session(session.id, {**meta, "read_only": True, "importing": True}, created, created)
        try:
            with gc_scope.fewer_collections():  # the file's rows are no cycles (see app/console/gc_scope.py)
                for rows in chunks:
                    tracker.see_rows(rows)
                    if rows:
                        last = max(last, max(map(itemgetter(0), rows)))
                    self._store_chunk(session.id, rows)
                self.store.flush()
                folded = fold_window(session.state, window_events(self.store, session.id, tracker), tracker)
                session.restore({**meta, "read_only": True}, folded, note, last_seq=last, imported=True)
        except BaseException:  # a file that breaks off half way leaves nothing of itself in the store
            self.store.delete_session(session.id)
            raise
        session.timeline.set_total(tracker.entry_count)  # counted as stored (the store's count rescans them)
        self.store.save_session(session.id, session.meta(), created, session.last_activity)
        return session

    def _store_chunk(self, session_id: str, rows: list[ImportRow]) -> None:
        """One chunk of an import: the writer stores it while the next is parsed, and the one before it must be
        written first (so at most two chunks are held, and parsing and writing overlap)."""
        self.store.flush()
        if rows:
            self.store.append_rows(session_id, rows)

    async def start_services(self) -> None:
        """Connect the hub and register this process in the directory (the app lifespan calls it)."""
        await self.hub.start()
        await self.cluster.start()

    def add(self, session: ConsoleSession) -> ConsoleSession:
        """An imported session, stored whole: the other processes of a team are told, since an import publishes
        none of its events, and one of them that loaded its replica while the file was still being stored
        holds only part of it until it reads it again."""
        self.sessions[session.id] = session
        self.hub.stored(session.id)
        return session

    def restored_for(self, target: Target) -> ConsoleSession | None:
        """The newest session restored from the store for exactly this target that this process may connect (not
        an imported copy, not another team process's); None when there is none."""
        wanted = target.revealed()  # the same values, secret or not (the masks alone would match other secrets)
        found = [s for s in self.sessions.values() if not s.read_only and s.status in ("closed", "new")
                 and s.target.revealed() == wanted and s.id not in self.replicas.ids]
        return max(found, key=lambda s: s.last_activity, default=None)

    def start(self, session: ConsoleSession) -> None:
        self.tasks.spawn(f"connect-{session.id}", self._connect(session))

    def doctor(self, session: ConsoleSession) -> None:
        self.tasks.spawn(f"doctor-{session.id}", session.run_doctor())

    async def _connect(self, session: ConsoleSession) -> None:
        await session.connect()
        if session.status == "failed":  # which step failed, and what to do (app/mcp/doctor)
            await session.run_doctor()
        if session.status == "connected":  # what was listening when the console went down listens again
            session.listeners.resume()
            # ... and a retry that was due when it went down (every question answered, nothing sent) goes out
            for op_id in session.operations.answered_in_full():
                self.tasks.spawn(f"resume-{op_id}", session.operations.resume(op_id))
            # ... and a task not ended is polled again from its id (the server holds it, not the stream)
            session.operations.resume_tasks()

    def _link_changed(self, link: ShareLink, created: bool) -> None:
        """Links are part of the session's fold (the links table stays the source of token hashes)."""
        session = self.sessions.get(link.session_id)
        if session is None:
            return
        if created:
            session.timeline.append(LinkCreated(id=link.id, role=link.role, created=link.created,
                                                expires=link.expires, label=link.label))
        else:
            session.timeline.append(LinkRevoked(id=link.id, revoked=link.revoked or 0.0))

    def get(self, session_id: str) -> ConsoleSession | None:
        return self.sessions.get(session_id)

    async def delete(self, session_id: str) -> None:
        self.replicas.deleted.add(session_id)  # what the session's close still publishes must not reload it
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.close()
            session.timeline.end()  # nothing it held, nor what its calls in flight record, is stored after the delete
        self.hub.close_session(session_id, "session deleted")
        self.hub.forget_session(session_id)
        self.links.forget_session(session_id)
        self.workspaces.forget_session(session_id)
        self.store.delete_session(session_id)

    def listing(self) -> list[dict[str, Any]]:
        return [{"id": s.id, "name": s.name, "named": bool(s.state.label), "target": s.target.shown(),
                 "server": _server_line(s.server_info), "revision": (s.state.era or {}).get("protocol_version", ""),
                 "transport": s.target.kind, "status": s.status, "read_only": s.read_only,
                 "created": s.created, "last_activity": s.last_activity, "entries": s.timeline.entry_count}
                for s in sorted(self.sessions.values(), key=lambda s: -s.last_activity)]

    async def shutdown(self) -> None:
        await self.tasks.cancel_all()
        # Another process's session is not closed here (that would write to its log). The rest close together: a
        # stdio server that ignores SIGTERM costs two grace periods before its SIGKILL, and one after another that
        # was two per session, long enough for a service manager to kill the console and leave the servers (each
        # in its own process group) running.
        own = [s for s in self.sessions.values() if not self.replicas.is_replica(s.id)]
        # return_exceptions: one broken session must not keep the others' processes alive
        await asyncio.gather(*(s.close() for s in own), return_exceptions=True)
        if self.ownership is not None:  # another process takes these sessions over on their next action
            await self.ownership.release_all()
        await self.http.aclose()
        for session in self.sessions.values():
            session.timeline.flush()  # the frames last read reach the store before it closes
        await self.hub.stop()  # after the sessions: what closing them published still goes out
        await self.cluster.stop()
        self.store.close()


def _server_line(info: dict[str, Any]) -> str:
    """The server's name and version, as its discover or initialize said them ("" before it answered)."""
    name, version = info.get("name"), info.get("version")
    name = name if isinstance(name, str) else ""
    line = f"{name} {version}".strip() if isinstance(version, str) and name else name
    return line if len(line) <= 120 else line[:119] + "…"  # the server's words, on every page's switcher
