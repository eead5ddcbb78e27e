"""One console session: a target server, its client, what it told us, and its timeline."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

import httpx

from app import __version__
from app.console.apps import SessionApps
from app.console.events import (
    EVENT_VERSION,
    CancelRequested,
    CapabilitiesChanged,
    DeadlineExtended,
    Discovered,
    DoctorRan,
    EraNegotiated,
    ExchangeFinished,
    ExchangeStarted,
    FindingRecorded,
    LinkCreated,
    LinkRevoked,
    ListsRefreshed,
    Log,
    Notice,
    Progress,
    RequestSettingsChanged,
    Reread,
    Restored,
    RootsChanged,
    SessionCreated,
    SessionRenamed,
    StatusChanged,
    Stderr,
    SurfaceRecorded,
    TimelineEvent,
    Wire,
)
from app.console.listen import Listeners
from app.console.live import NotificationBudget, ProgressCoalescer, StderrBatcher, log_data
from app.console.oauth import SessionAuth, redirect_uri
from app.console.operations import OperationDriver
from app.console.roots import parse_roots
from app.console.scrub import Scrubber, scrubber_for, secret_pieces
from app.console.server_requests import ServerRequests
from app.console.state import DEFAULT_CAPABILITIES, SessionState, cancelled_by
from app.console.store import Store
from app.console.target import Target, target_from
from app.console.task_follow import STATUS_NOTIFICATION, TASK_NOTIFICATIONS, StatusNotices
from app.console.tasks import TaskGroup
from app.console.timeline import Publish, Timeline
from app.mcp.client import ClientConfig, McpClient, Reply
from app.mcp.connecting import Connected, ConnectMachine, Failed, Initialize, NotifyInitialized, Probe, StartClient
from app.mcp.doctor import Check, Report, diagnose
from app.mcp.era import Answerer, Era, LegacyEra, ModernEra
from app.mcp.errors import ConnectFailed, McpError, ProcessExited, SessionExpired
from app.mcp.handshake import send_initialized
from app.mcp.http import HttpTransport
from app.mcp.jsonrpc import Frame
from app.mcp.lint import Linter
from app.mcp.lint.output import OutputLint
from app.mcp.secret import reveal
from app.mcp.sse_transport import HttpSseTransport
from app.mcp.stdio import StdioTransport
from app.mcp.surface import snapshot_of
from app.mcp.task import TaskChoice, as_task
from app.mcp.task_extension import declaring
from app.mcp.transport import Transport
from app.mcp.wire import WireEvent
from app.settings import Settings

MAX_NAME = 120  # characters of a session's name, the owner's or the server's
CLIENT_INFO = {"name": "mcp-console", "title": "MCP Console", "version": __version__}
__all__ = ["DEFAULT_CAPABILITIES", "ConsoleSession", "Target", "new_session_id"]
LISTS = (
    ("tools/list", "tools", "tools"),
    ("resources/list", "resources", "resources"),
    ("resources/templates/list", "resourceTemplates", "resources"),
    ("prompts/list", "prompts", "prompts"),
)
META_SAVE_INTERVAL_S = 1.0
FINDINGS_PER_RULE_AND_ENTRY = 5
DOCTOR_STEP_S = 10.0  # what one step of the doctor may wait (a connect that failed has had its full deadline)
# A frame that matches no request, or is no message, is a warning notice of its own: notices are stored past the
# frames' quota, so a server printing junk in a loop made one stored notice (with 2000 characters of the junk) per
# line. So many a window are listed; the rest are counted, and the count is a notice when the window ends.
STRAY_NOTICES_PER_WINDOW = 20
STRAY_WINDOW_S = 10.0
LIST_METHODS = {  # a list_changed notification → the list it refreshes
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
# "unreachable": connected once, but the last request could not reach the server (refused, process gone);
# the next request that gets any answer makes it "connected" again.
Status = Literal["new", "connecting", "connected", "unreachable", "failed", "closed"]


def new_session_id() -> str:
    return secrets.token_urlsafe(9)


class ConsoleSession:
    """A session: commands that append events, and the state those events fold into (read-only here)."""

    def __init__(self, session_id: str, target: Target, settings: Settings, store: Store, publish: Publish,
                 http_client: httpx.AsyncClient, created: float | None = None, seq: int = 0,
                 new: bool = True, read_only: bool = False) -> None:
        self.id = session_id
        self.settings = settings
        self.store = store
        self.created = created or time.time()
        self.last_activity = self.created
        self.timeline = Timeline(session_id, store, publish, settings.timeline_window, seq,
                                 quota_bytes=settings.max_session_store_bytes)
        self.state: SessionState = self.timeline.state
        self._target = target
        # The target's secret values: the event log records their masks (Target.to_dict), the store keeps these in
        # its owner-only place, and `target` puts them back for the transports. A restored, replicated or
        # imported session reads them from the store (an import has none unless its file carried them).
        self._secrets = target.secret_values() if new else store.secrets(session_id)
        self._target_of: tuple[dict[str, Any], Target] | None = None
        self._http = http_client
        self.transport: Transport | None = None
        self.client: McpClient | None = None
        self.operations = OperationDriver(self, self.timeline)  # the session is their RequestRunner
        self.apps = SessionApps(self)  # MCP Apps: the views of its tool calls and their bridges
        self.progress = ProgressCoalescer(lambda _kind, data: self.timeline.append(Progress(**data)),
                                          guard=self._safe_cut)
        self.log_budget = NotificationBudget(lambda _kind, data: self.timeline.append(Log(**data)),
                                             settings.max_entry_notification_bytes)
        self.stderr_batch = StderrBatcher(lambda _kind, data: self.timeline.append(Stderr(**data)),
                                          settings.max_stderr_lines, guard=self._safe_cut)
        self.listeners = Listeners(self, self.timeline, self._on_change, legacy=self._is_legacy)
        self.status_notices = StatusNotices()
        # Questions a 2025-11-25 server asks on our streams: dialogs in the inbox, answered within a deadline.
        self.server_requests = ServerRequests(self.timeline, lambda: self.roots,
                                              lambda: self.settings.server_request_timeout_s)
        self.background = TaskGroup()
        self.read_uris: set[str] = set()  # resources shown on screen: re-read when the server says they changed
        self._refreshing = asyncio.Lock()
        self._owed: set[str] = set()  # re-lists and re-reads queued and not yet started (see _owe)
        self._rereading = asyncio.Lock()
        self._saved_at = 0.0
        self._closing = False
        self._bytes_in: dict[str, int] = {}
        self._before_first_wire: dict[str, Callable[[], None]] = {}  # exchange key → the record of its start
        self._strays_listed = 0  # stray-frame notices in the current window
        self._strays_counted = 0  # and those only counted
        self._stray_timer: asyncio.TimerHandle | None = None
        self.linter = Linter()
        self.output_lint = OutputLint()  # a 2025-11-25 session's one rule (app/mcp/lint/output.py)
        self.oauth: SessionAuth | None = None  # made with the first HTTP transport that may need it
        self._finding_counts: dict[tuple[str | None, str], int] = {}
        self._http_status: dict[str, int] = {}
        # Team deployment: the process that owns the connection, when it is not this one (a replica); else None.
        self.owned_by: str | None = None
        # Team deployment: a replica whose owner's registration lapsed (it died); the next action takes it over.
        self.owner_gone = False
        if new:  # a restored or imported session gets its creation from its stored events instead
            store.save_secrets(session_id, self._secrets)
            self.timeline.scrubber = scrubber_for(target)
            self.timeline.append(SessionCreated(target=target.to_dict(), capabilities=DEFAULT_CAPABILITIES,
                                                roots=parse_roots(settings.default_roots, semicolons=True)[0],
                                                read_only=read_only))

    # -- state: folded from the events, never assigned here ----------------
    @property
    def target(self) -> Target:
        if not self.state.target:
            return self._target
        cached = self._target_of
        if cached is None or cached[0] is not self.state.target:  # made again only when the fold's target changes
            cached = self._target_of = (self.state.target, target_from(self.state.target, self._secrets))
        return cached[1]

    @property
    def status(self) -> str:
        return self.state.status

    @property
    def status_message(self) -> str:
        return self.state.status_message

    @property
    def target_alive(self) -> bool:
        return self.transport is None or bool(getattr(self.transport, "alive", True))

    @property
    def status_since(self) -> float | None:  # wall clock of the last status change (shown when unreachable)
        return self.state.status_since

    @property
    def idle_timeout_s(self) -> float:  # per session (the request settings form), else the console's setting
        value = self.state.idle_timeout_s
        return value if value is not None else self.settings.request_idle_timeout_s

    @property
    def max_s(self) -> float:
        value = self.state.max_s
        return value if value is not None else self.settings.request_max_s

    def request_settings(self) -> dict[str, Any]:
        return {"log_level": self.log_level, "progress": self.progress_enabled, "auto_refresh": self.auto_refresh,
                "idle_timeout_s": self.idle_timeout_s, "max_s": self.max_s}

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.state.capabilities

    @property
    def mrtr_max_rounds(self) -> int:
        return self.settings.mrtr_max_rounds

    @property
    def discover(self) -> dict[str, Any] | None:
        return self.state.discover

    @property
    def lists(self) -> dict[str, list[dict[str, Any]]]:
        return self.state.lists

    @property
    def roots(self) -> list[dict[str, Any]]:
        return self.state.roots

    @property
    def log_level(self) -> str:  # empty: ask for no logs (the server must then send none)
        return self.state.log_level

    @property
    def progress_enabled(self) -> bool:
        return self.state.progress_enabled

    @property
    def auto_refresh(self) -> bool:
        return self.state.auto_refresh

    @property
    def connects(self) -> int:
        return self.state.connects

    @property
    def last_id(self) -> int:  # the highest JSON-RPC id sent, so a reconnect goes on from there
        return self.state.last_id

    @property
    def read_only(self) -> bool:  # an imported session: it shows what happened and sends nothing
        return self.state.read_only

    # -- commands: each appends the event that says what changed -----------
    def set_capabilities(self, capabilities: dict[str, Any], saved: bool = True) -> None:
        self.timeline.append(CapabilitiesChanged(capabilities=capabilities, saved=saved))
        self.touch(force=True)

    def _last_stderr_words(self) -> str:
        """A failed stdio start's cause is usually its last stderr line ("Cannot find module …"): quoted beside
        the failure, so it is not only at the bottom of the stderr box."""
        if self.target.kind != "stdio":
            return ""
        self.stderr_batch.flush()
        last = next((line.strip() for line in reversed(self.state.stderr) if line.strip()), "")
        return f"; its stderr ended with: {last[:300]}" if last else ""

    # --- the config entry it was imported from (app/workspace): owner-only, beside the target's secrets ----------

    CONFIG_KEY = "config"

    def keep_config(self, entry: dict[str, Any] | None, made: dict[str, Any], oauth: dict[str, Any]) -> None:
        """The config entry the session was made from (its fields the console does not read come back on export)
        with the target it made then, and the entry's OAuth settings as the session's first ones. Kept in the
        owner-only place: an entry may hold a key as typed, and `made` holds the target's values."""
        values = dict(self._secrets)
        if entry is not None:
            values[self.CONFIG_KEY] = json.dumps({"entry": entry, "made": made})
        if oauth and self.oauth is None:
            values[SessionAuth.SECRET_KEY] = json.dumps({"settings": oauth})
        self._secrets = values
        self.store.save_secrets(self.id, values)

    def config_entry(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any]]:
        """(the imported entry, the target it made, the session's OAuth settings now) for an export."""
        kept = _json_object(self._secrets.get(self.CONFIG_KEY))
        settings = _json_object(self._secrets.get(SessionAuth.SECRET_KEY)).get("settings")
        entry, made = kept.get("entry"), kept.get("made")
        return (entry if isinstance(entry, dict) else None, made if isinstance(made, dict) else None,
                settings if isinstance(settings, dict) else {})

    def rename(self, name: str) -> None:
        self.timeline.append(SessionRenamed(name=name))
        self.touch(force=True)

    @property
    def name(self) -> str:
        """What the session is called: the owner's name for it, else the server's title or name, else its target."""
        info = self.server_info
        for candidate in (self.state.label, info.get("title"), info.get("name")):
            if isinstance(candidate, str) and candidate.strip():
                # A server's title is the server's to choose: capped as the owner's own name is, since it is
                # shown on the home page and in every session page's switcher.
                name = candidate.strip()
                return name if len(name) <= MAX_NAME else name[:MAX_NAME - 1] + "…"
        return self.target.short()

    def set_roots(self, roots: list[dict[str, Any]]) -> None:
        self.timeline.append(RootsChanged(roots=roots))
        self.touch(force=True)
        if self.status == "connected" and self._is_legacy() and "roots" in self.capabilities:
            # A legacy server asked for the roots once; it asks again when told they changed.
            client = self.client
            assert client is not None
            self.background.spawn(f"roots-changed-{self.id}", self._notify(client, "notifications/roots/list_changed"))

    async def _notify(self, client: McpClient, method: str) -> None:
        try:
            await client.notify(method)
        except McpError as exc:  # a server that is gone shows on the wire; nothing to undo here
            self.timeline.append(Notice(level="warning", message=f"could not send {method}: {exc}"))
            return
        # A notification has no entry of its own; without this line the roots/list the server sends back would
        # seem to come from nowhere.
        self.timeline.append(Notice(message=f"sent {method}", raw=json.dumps({"jsonrpc": "2.0", "method": method}),
                                    signal="notification_sent"))

    def set_request_settings(self, log_level: str, progress: bool, auto_refresh: bool,
                             idle_timeout_s: float | None = None, max_s: float | None = None) -> None:
        level_changed = log_level != self.log_level
        self.timeline.append(RequestSettingsChanged(log_level=log_level, progress=progress,
                                                    auto_refresh=auto_refresh, idle_timeout_s=idle_timeout_s,
                                                    max_s=max_s))
        self.touch(force=True)
        if level_changed and self.status == "connected" and self._sets_log_level():
            self.background.spawn(f"set-level-{self.id}", self.run("logging/setLevel", {"level": self.log_level}))

    def _noticed_raw(self, raw: str) -> str:
        """A stray frame as its notice keeps it: 2,000 characters, cut before a typed value (asked only past that)."""
        return raw if len(raw) <= 2000 else raw[:self._safe_cut(raw, 2000)]

    def _safe_cut(self, text: str, keep: int) -> int:
        """Where to cut a text the console shortens so that no secret value is cut in two (its head would be
        masked nowhere when the text is recorded)."""
        scrubber = self.timeline.scrubber
        return scrubber.safe_cut(text, keep) if scrubber is not None else keep

    def _is_legacy(self) -> bool:
        return self.client is not None and self.client.config.era.name == "legacy"

    def _sets_log_level(self) -> bool:
        """2025-11-25 has no per-request log level: a legacy session says it once with logging/setLevel, when
        the server offers logging. An empty level cannot be said there (no "off"), so nothing is sent."""
        return bool(self.log_level) and self._is_legacy() and "logging" in self.server_capabilities

    # -- recording --------------------------------------------------------
    def on_wire(self, event: WireEvent) -> None:
        if event.direction == "stderr":
            if event.signal == "stderr_unfinished":  # a redraw of the line not yet ended: replaces the last one
                self.stderr_batch.current(event.raw, event.note)
            else:
                self.stderr_batch.add(event.raw, event.note)  # batched: never one event (or render) per line
            return
        if event.exchange is not None and (begin := self._before_first_wire.pop(event.exchange, None)) is not None:
            begin()  # the exchange's start goes before its first frame (see run)
        record = wire_record(event)
        if event.exchange is not None:
            if event.direction == "in":
                raw = event.raw
                size = len(raw) if raw.isascii() else len(raw.encode())  # the UTF-8 size; ASCII: no copy made
                self._bytes_in[event.exchange] = seen = self._bytes_in.get(event.exchange, 0) + size
                if seen > self.settings.max_stream_bytes:  # the transports stop first; this is the backstop
                    record.raw, record.note = "", f"{size} bytes past max_stream_bytes, not kept"
            if event.http_status is not None:
                self._http_status.setdefault(event.exchange, event.http_status)
        recorded = self.timeline.add_frame(record)
        seq = recorded.seq if recorded is not None else 0
        self._lint(event, seq)
        if event.exchange is None and event.direction == "in" and event.signal != "session_message":
            what = f"malformed frame from the server: {event.frame.problem}" if event.frame and event.frame.problem \
                else f"a frame that {event.note or 'matches no request in flight'}"
            self._stray_notice(what, event.raw)
        elif event.exchange is None and event.direction == "transport" and event.note:
            info = event.signal in ("process_started", "standalone_stream")
            self.timeline.notice("info" if info else "warning", event.note)
            if event.signal == "process_exited":
                self.stderr_batch.flush()  # its last words first
            if event.signal == "process_started":
                self.stderr_batch.new_process()  # a line the one before left unfinished is no part of this one's
            if event.signal == "process_exited" and self.status == "connected" and not self._closing:
                self._set_status("unreachable", f"{event.note}; Restart the server on this page to start it again")

    def _stray_notice(self, what: str, raw: str) -> None:
        """A warning for a stray or malformed frame: listed up to STRAY_NOTICES_PER_WINDOW a window, then counted.

        The first past the limit says so at once (a server sending thousands, e.g. answers to nothing on a
        2025-11-25 GET stream, pushed everything else off the page); the count of the rest is a notice when the
        window ends. Every frame stays on the wire record."""
        if self._stray_timer is None:
            self._stray_timer = asyncio.get_running_loop().call_later(STRAY_WINDOW_S, self._stray_window_ends)
        if self._strays_listed < STRAY_NOTICES_PER_WINDOW:
            self._strays_listed += 1
            self.timeline.notice("warning", what, raw=self._noticed_raw(raw))
        elif self._strays_listed == STRAY_NOTICES_PER_WINDOW:
            self._strays_listed += 1
            self.timeline.notice("warning", f"{what} (and more frames of no request: past {STRAY_NOTICES_PER_WINDOW} "
                                            f"in {STRAY_WINDOW_S:g} s they are recorded but not told, only counted)",
                                 raw=self._noticed_raw(raw))
        else:
            self._strays_counted += 1

    def _stray_window_ends(self) -> None:
        self._stray_timer = None
        counted, self._strays_listed, self._strays_counted = self._strays_counted, 0, 0
        if counted:
            self.timeline.notice("warning", f"{counted} more frames that match no request or are no message came in "
                                            f"{STRAY_WINDOW_S:g} s; not listed one by one (see the wire)")

    def _lint(self, event: WireEvent, seq: int) -> None:
        """Check the frame against the 2026-07-28 rules as it is recorded; each finding is an event of its own.

        The rules are the modern revision's: a session that settled on 2025-11-25 is not held to them, nor is its
        handshake (its client speaks the legacy era before the era is recorded, once initialize has answered).
        It is held to the one both revisions share: a tool's result against its outputSchema.
        """
        era = self.state.era
        legacy = (era is not None and era.get("era") == "legacy") or self._is_legacy()
        findings = self.output_lint.observe(event, seq) if legacy else self.linter.observe(event, seq=seq)
        for found in findings:
            # A server that breaks one rule on every frame of a flood is told a few times per entry, not 10,000.
            seen = self._finding_counts[(found.exchange, found.rule)] = \
                self._finding_counts.get((found.exchange, found.rule), 0) + 1
            if seen > FINDINGS_PER_RULE_AND_ENTRY:
                continue
            self.timeline.append(FindingRecorded(rule=found.rule, severity=found.severity, message=found.message,
                                                 exchange=found.exchange, frame_seq=found.seq,
                                                 spec_url=found.spec_url))

    def touch(self, force: bool = False, at: float | None = None) -> None:
        """Note activity (`at`: when it was, if not now); the metadata row is rewritten at most once a second
        unless something changed."""
        self.last_activity = time.time() if at is None else at
        if self.timeline.ended:
            return  # deleted: its row is gone, and a call that was in flight must not write it back
        if force or self.last_activity - self._saved_at >= META_SAVE_INTERVAL_S:
            self._saved_at = self.last_activity
            self.store.save_session(self.id, self.meta(), self.created, self.last_activity)

    def meta(self) -> dict[str, Any]:
        """A cache of the fold for the home page listing and exports; never read back as the truth."""
        return {"target": self.target.to_dict(), "status": self.status, "status_message": self.status_message,
                "capabilities": self.capabilities, "seq": self.timeline.seq, "discover": self.discover,
                "lists": self.lists, "roots": self.roots, "connects": self.connects, "last_id": self.last_id,
                "read_only": self.read_only, "events_version": EVENT_VERSION,
                "request_settings": self.request_settings()}

    def restore(self, meta: dict[str, Any], events: Iterable[TimelineEvent], note: str, last_seq: int = 0,
                imported: bool = False) -> None:
        """Rebuild after a restart or an import: fold the stored events from scratch.

        `last_seq` is the highest sequence number stored: new events continue after it. The
        metadata row is read only for a version-1 log, which never recorded the target, the
        server's discover answer or the list items: those are appended as events once.
        """
        for event in events:  # an iterator: a big session is folded a chunk at a time, never held whole
            self.timeline.fold(event)
        self.timeline.fold_through(last_seq)
        if not self.state.target:  # a version-1 log: it never recorded the session's creation
            self._restore_v1(meta)
        self.timeline.scrubber = scrubber_for(self.target)  # what it records from now on (see app/console/scrub.py)
        if imported:  # read-only: its log stays exactly the file's; the view is folded, not stored
            self.timeline.fold(TimelineEvent(self.id, self.state.seq, Restored(note=note, imported=True)))
        else:
            self.timeline.append(Restored(note=note))

    def _restore_v1(self, meta: dict[str, Any]) -> None:
        """Carry a version-1 session forward: what v1 kept only in its metadata row becomes events."""
        target = target_from(meta["target"]) if meta.get("target") else self._target
        self._secrets = target.secret_values()  # v1 kept them in its metadata row: now in the owner-only place
        self.store.save_secrets(self.id, self._secrets)
        self.timeline.scrubber = scrubber_for(target)  # what its metadata row held is recorded masked, below
        self.timeline.append(SessionCreated(target=target.to_dict(),
                                            capabilities=self.capabilities, roots=self.roots,
                                            read_only=bool(meta.get("read_only"))))
        if isinstance(meta.get("discover"), dict):
            self.timeline.append(Discovered(result=meta["discover"]))
        stored = meta.get("lists")  # a mapping of lists as v1 wrote it; an imported file's may be anything
        lists = {k: v for k, v in stored.items() if isinstance(v, list)} if isinstance(stored, dict) else {}
        self.timeline.append(ListsRefreshed(lists=lists, counts={k: len(v) for k, v in lists.items()}))
        for link in self.store.links(self.id):
            self.timeline.append(LinkCreated(id=link["id"], role=link["role"], created=link["created"],
                                             expires=link.get("expires"), label=link.get("label") or ""))
            if link.get("revoked"):
                self.timeline.append(LinkRevoked(id=link["id"], revoked=link["revoked"]))

    # -- connecting -------------------------------------------------------
    def _make_transport(self) -> Transport:
        if self.target.kind == "http" and self.target.era == "sse-2024":
            return HttpSseTransport(self.target.url, self._http, self.on_wire, self.target.headers,
                                    self.settings.max_message_bytes, self.settings.max_stream_bytes)
        if self.target.kind == "http":
            return HttpTransport(self.target.url, self._http, self.on_wire, self.target.headers,
                                 self.settings.max_message_bytes, self.settings.max_stream_bytes)
        return StdioTransport(self.target.argv, self.on_wire, cwd=self.target.cwd,
                              max_message_bytes=self.settings.max_message_bytes,
                              shutdown_grace_s=self.settings.stdio_shutdown_grace_s,
                              max_stream_bytes=self.settings.max_stream_bytes)

    def _set_status(self, status: Status, message: str = "") -> None:
        self.timeline.append(StatusChanged(status=status, message=message, since=time.time()))
        self.touch(force=True)

    async def connect(self) -> None:
        """Start the transport and settle the era, then fetch the lists the server offers.

        Auto (the default) probes `server/discover`; when the server says it does not serve it (see
        `discover_not_served`) the probe stays on the timeline, labelled, and `initialize` follows.
        """
        if self.oauth is not None:
            self.oauth.stop()  # a flow the old connection left waiting (paused, or on the authorization page) ends
        if self.client is not None:  # a reconnect: the old process or connection goes first
            with contextlib.suppress(Exception):
                await self.client.close()
        self._closing = False
        self.linter = Linter()  # what it knows of requests in flight belongs to one connection
        self.output_lint = OutputLint()
        self._finding_counts = {}
        self._strays_listed = 0  # a new connection's strays are told afresh (the count pending is still said)
        self._set_status("connecting")
        era = self.target.era
        if era == "auto" and (self.state.era or {}).get("era") == "legacy":
            # This server spoke 2025-11-25 last time: a reconnect or restart starts with initialize instead of a
            # server/discover probe it answers with an error (and, on stdio, a second start of the process).
            era = "legacy"
            self.timeline.notice("info", "auto: this session's server spoke 2025-11-25 when last connected, so "
                                 "initialize comes first (a new session probes server/discover again)",
                                 signal="era_probe")
        machine = ConnectMachine(era, CLIENT_INFO, self.capabilities, stdio=self.target.kind == "stdio")
        command = machine.start()
        while True:
            for note in machine.take_notes():
                self.timeline.notice(note.level, note.message, signal=note.signal)
            if isinstance(command, StartClient):
                if command.keep_transport and self.client is not None:
                    self.client.config.era = LegacyEra()
                    command = machine.started()
                else:
                    command = machine.started(await self._start_client(
                        LegacyEra() if command.era == "legacy" else ModernEra()))
            elif isinstance(command, Probe):
                reply = await self.run("server/discover", {})
                alive = self.transport is not None and getattr(self.transport, "alive", True)
                command = machine.probed(reply, transport_alive=alive)
            elif isinstance(command, Initialize):
                command = machine.initialized(await self.run("initialize", command.params))
            elif isinstance(command, NotifyInitialized):
                assert self.client is not None
                command = machine.notified(await send_initialized(self.client, command.protocol_version))
            elif isinstance(command, Failed):
                if self.client is not None:  # a stdio server that answered badly stops here, not at a delete
                    with contextlib.suppress(Exception):
                        await self.client.close()  # and its stderr is read to its end
                self._set_status("failed", command.message + self._last_stderr_words())
                return
            else:
                await self._connected(command)
                return

    @property
    def doctoring(self) -> bool:
        return bool((self.state.doctor or {}).get("running"))

    async def run_doctor(self) -> Report | None:
        """The connection doctor (app/mcp/doctor) against this session's target, on connections of its own (its
        requests are not this session's: they would muddle the timeline's exchanges, its lint and its era); its
        check list is an event, folded and shown with the connect problem, and a notice on the timeline. None
        when a run is under way already (a stdio target is started again by it: never twice at once)."""
        if self.doctoring or self.read_only:
            return None
        self.timeline.append(DoctorRan(running=True))
        target = self.target
        era = "legacy" if target.era == "sse-2024" else target.era
        timeout_s = min(self.idle_timeout_s, DOCTOR_STEP_S)
        try:
            if target.kind == "stdio":
                report = await diagnose(argv=target.argv, cwd=target.cwd, era=era, timeout_s=timeout_s)
            else:
                report = await diagnose(url=target.url, headers=target.headers, era=era, timeout_s=timeout_s,
                                        http=self._http)
        except Exception as exc:  # a bug of the doctor's must not leave it "running" for good
            report = Report(target.shown(), target.kind, (Check("doctor", "fail", f"the doctor stopped: {exc!r}",
                                                                 "Report this: the doctor itself failed."),))
        self.timeline.append(DoctorRan(running=False, report=report.to_dict()))
        failed = report.failed
        self.timeline.notice("info" if failed is None else "warning",
                             f"doctor: {report.verdict}" if failed is None else
                             f"doctor: {failed.name} failed: {failed.detail}")
        return report

    async def _connected(self, done: Connected) -> None:
        self.timeline.append(EraNegotiated(era=done.era, protocol_version=done.protocol_version, chosen=done.chosen,
                                           reason=done.reason, probe=done.probe))
        self.timeline.append(Discovered(result=done.discovered))
        if done.era == "modern":
            self._set_status("connected", self._version_note())
        else:
            self._set_status("connected", "")
            if self._sets_log_level():
                await self.run("logging/setLevel", {"level": self.log_level})
        fetched = await self.refresh_lists()
        # What the server offers now, from what this connect just fetched (nothing is fetched twice): the
        # "changed since the last connect" note and the surface page compare with it (app/mcp/surface.py).
        self.timeline.append(SurfaceRecorded(connect=self.connects, snapshot=snapshot_of(
            done.discovered, fetched, era=done.era, protocol_version=done.protocol_version,
            source=self.target.shown())))

    async def _start_client(self, era: Era) -> str | None:
        """A new transport and client speaking `era`; what went wrong when the transport cannot start."""
        old, first_key = self.client, 1
        if old is not None and self.state.status == "connecting":  # restarted mid-connect: keys go on
            first_key = old.next_key_number
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        self.transport = self._make_transport()
        self.client = McpClient(self.transport, ClientConfig(
            client_info=CLIENT_INFO, capabilities=self._declared_capabilities, era=era,
            authorizer=self._authorizer(self.transport),
            answerer=self._server_request_answerer(), on_session_notification=self.listeners.deliver,
            on_notice=self.timeline.notice,
            idle_timeout_s=self.idle_timeout_s, max_s=self.max_s,
            key_prefix=f"c{self.connects}", first_id=self.last_id + 1, first_key=first_key))
        try:
            await self.transport.start()
        except McpError as exc:
            return str(exc)
        return None

    def as_task(self, method: str, params: dict[str, Any], choice: TaskChoice | None = None) -> dict[str, Any]:
        """2025-11-25: a tools/call of a tool that requires a task (or allows one, and the person chose it) goes as
        one, as the command line's does."""
        if method != "tools/call" or self.client is None or not self._is_legacy():
            return params
        return as_task(params, self.server_capabilities, self.client.task_support.get(str(params.get("name"))),
                       choice)

    def _declared_capabilities(self) -> dict[str, Any]:
        """What each request declares: on 2026-07-28 also the tasks extension, which the console follows
        (app/console/task_follow.py), as the command line does; 2025-11-25's initialize gets the session's own."""
        client = self.client
        if client is None or client.config.era.name != "modern":
            return self.capabilities
        return declaring(self.capabilities)

    def _authorizer(self, transport: Transport) -> Any:
        """The OAuth flow's driver for an HTTP transport (none when the owner typed an Authorization header, or
        for an imported session, which sends nothing): a 401 or 403 insufficient_scope starts it."""
        if not isinstance(transport, HttpTransport) or transport.typed_authorization or self.read_only:
            return None
        if self.oauth is None:
            self.oauth = SessionAuth(self.id, reveal(self.target.url), lambda: redirect_uri(self.settings),
                                     lambda: self._secrets, self._save_oauth, self.timeline.append)
            self._rescrub()  # a grant kept from before a restart is masked from the first frame
        authorizer = self.oauth.driver(self._http, self.on_wire, lambda: self.client.new_key() if self.client
                                       else "oauth", self.timeline.append)
        self.oauth.bind(transport)
        return authorizer

    def _save_oauth(self, text: str) -> None:
        """The OAuth secrets (tokens, registrations, the client secret) beside the target's, owner-only; and masked
        wherever a server says one back, from now on."""
        self._secrets = {**self._secrets, SessionAuth.SECRET_KEY: text}
        self.store.save_secrets(self.id, self._secrets)
        self._rescrub()

    def _rescrub(self) -> None:
        """The timeline's scrubber: the target's secret values and the session's OAuth ones."""
        pieces = [*secret_pieces(self.target), *(self.oauth.secret_values() if self.oauth is not None else [])]
        scrubber = Scrubber(pieces)
        self.timeline.scrubber = scrubber if scrubber else None

    def _server_request_answerer(self) -> Answerer | None:
        """Who answers a request from the server when the era asks (legacy only): the inbox's dialogs."""
        return None if self.read_only else self.server_requests.ask

    def _version_note(self) -> str:
        versions = (self.discover or {}).get("supportedVersions")
        if isinstance(versions, list) and "2026-07-28" not in versions:
            return f"the server does not list 2026-07-28 among its versions ({versions})"
        return ""

    @property
    def server_capabilities(self) -> dict[str, Any]:
        caps = (self.discover or {}).get("capabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def supported_versions(self) -> list[str]:
        """The versions the server's discover answer lists, as the page shows them: a list of strings by the spec
        (anything else a server sent stays on the timeline, not in the page's header)."""
        versions = (self.discover or {}).get("supportedVersions")
        return [v for v in versions if type(v) is str] if type(versions) is list else []

    @property
    def server_info(self) -> dict[str, Any]:
        meta = (self.discover or {}).get("_meta")
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        return info if isinstance(info, dict) else {}

    async def refresh_lists(self, only: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """Fetch the lists the server offers (or one); returns what was fetched."""
        assert self.client is not None
        async with self._refreshing:  # list_changed bursts must not interleave their pages
            return await self._refresh_lists(only)

    async def _refresh_lists(self, only: str | None) -> dict[str, list[dict[str, Any]]]:
        assert self.client is not None
        fetched: dict[str, list[dict[str, Any]]] = {}
        for method, key, capability in LISTS:
            if only and key != only:
                continue
            if capability not in self.server_capabilities:
                continue
            items, _ = await self.client_list(method, key)
            fetched[key] = items
            if key == "tools":
                self.client.learn_tools(items)
        counts = {k: len(fetched.get(k, v)) for k, v in self.lists.items()}
        self.timeline.append(ListsRefreshed(only=only, lists=fetched, counts=counts))
        self.touch(force=True)
        return fetched

    async def client_list(self, method: str, key: str) -> tuple[list[dict[str, Any]], list[Reply]]:
        items: list[dict[str, Any]] = []
        replies: list[Reply] = []
        cursor: str | None = None
        for _ in range(50):  # bounded: a server that loops its cursor cannot hold us forever
            reply = await self.run(method, {"cursor": cursor} if cursor is not None else {})
            replies.append(reply)
            page = reply.result.get(key) if reply.ok and reply.result else None
            if not isinstance(page, list):
                break
            items.extend(p for p in page if isinstance(p, dict))
            cursor = reply.result.get("nextCursor") if reply.result else None
            if not isinstance(cursor, str):
                break
        return items, replies

    # -- requests ---------------------------------------------------------
    async def run(self, method: str, params: dict[str, Any], *, op: str | None = None, round_: int | None = None,
                  on_notification: Callable[[Frame], None] | None = None,
                  on_start: Callable[[str, Any], Any] | None = None, stream: bool = False,
                  replay_of: str | None = None, log_level: str | None = None) -> Reply:
        """Send one request and record it as a timeline entry (pending, then finished).

        Progress and log notifications on its stream are routed to the entry they belong to: the
        operation when there is one, else the exchange itself.
        """
        client = self.client
        assert client is not None, "connect() first"
        key = client.new_key()
        target = f"op-{op}" if op else key
        token = key if self.progress_enabled and not stream else None
        message = client.build(method, params, progress_token=token, log_level=log_level or self.log_level or None)
        name = params.get("name") or params.get("uri")
        if not stream:  # armed before the entry is first shown, so it shows the countdown from the start
            client.arm(key, self.idle_timeout_s, self.max_s)
        then = on_start(key, message["id"]) if on_start is not None else None
        timeline = self.timeline

        def begin() -> None:
            timeline.append(ExchangeStarted(key=key, method=method, name=name, id=message["id"], op=op,
                                            round=round_, replay_of=replay_of))
            if then is not None:
                then()

        # The start is recorded when the exchange's first frame (or note) is, or when the request ends without one:
        # the same events in the same order, but after the request's bytes are on the socket (the lean client
        # records its frame right after the write), so the target reads them while the console records.
        self._before_first_wire[key] = begin

        def on_frame(frame: Frame) -> None:
            if frame.method == "notifications/progress":
                # Only this request's token is its progress: one under another token (or none asked for) on its
                # stream is not shown as this call's bar. It stays on the wire record as it came.
                if token is not None and frame.params.get("progressToken") == token:
                    self.progress.offer(target, frame)
            elif frame.method == "notifications/message" and self.log_budget.take(target, len(frame.raw)):
                self.timeline.append(Log(**log_data(target, frame, self._safe_cut)))
            if on_notification is not None:
                on_notification(frame)

        def retried(refused: Reply, again: str, again_id: Any) -> None:
            """Refused for want of a token (401, 403 insufficient_scope), authorized, sent again: the refused try's
            entry ends, the new one starts (in the same operation round), pointing back at it."""
            timeline.append(self._finished(refused.key, refused, op, round_))
            def start_again() -> None:
                timeline.append(ExchangeStarted(key=again, method=method, name=name, id=again_id, op=op,
                                                round=round_, replay_of=refused.key))

            self._before_first_wire[again] = start_again

        try:
            reply = await client.request(method, message=message, key=key, on_notification=on_frame, stream=stream,
                                         idle_timeout_s=self.idle_timeout_s, max_s=self.max_s, on_retry=retried)
        finally:
            if (unrecorded := self._before_first_wire.pop(key, None)) is not None:
                unrecorded()  # nothing reached the wire (refused before it, or cancelled while connecting)
        if reply.key != key and (unrecorded := self._before_first_wire.pop(reply.key, None)) is not None:
            unrecorded()
        key = reply.key
        self.progress.done(target)
        self.log_budget.done(target)
        self.server_requests.end_of(key)  # a question its stream carried cannot be answered any more
        self.timeline.append(self._finished(key, reply, op, round_))
        self._note_reachability(reply)
        self.touch()
        return reply

    def _note_reachability(self, reply: Reply) -> None:
        """The badge tells the last failure to reach the server, and recovers when one gets through.

        Only a connected session changes: while connecting, connect() itself says how it went.
        """
        if self.status not in ("connected", "unreachable") or self._closing:
            return
        if isinstance(reply.error, ConnectFailed | ProcessExited | SessionExpired):
            if self.status == "connected":
                self._set_status("unreachable", str(reply.error))
        elif self.status == "unreachable" and reply.first_byte is not None:  # the server answered something
            self._set_status("connected", "")

    def deadline_view(self, key: str | None) -> dict[str, Any] | None:
        """When a request in flight will be given up (wall clock), for the page's countdown; None if never."""
        deadline = self.client.deadline(key) if self.client is not None and key else None
        if deadline is None:
            return None
        # A question from the server on this stream pauses the idle timer (see Deadline.hold): say so, no countdown.
        held = any(r.ev.key == key for r in self.server_requests.awaiting())
        return {"key": key, "due": deadline.wall(deadline.due), "max_due": deadline.wall(deadline.max_at),
                "left_s": max(0.0, deadline.left()), "idle_s": deadline.idle_s, "extensions": deadline.extensions,
                "held": held}

    def wait_longer(self, key: str) -> dict[str, Any] | None:
        """Push out the idle deadline of a request in flight (an exchange key, or op-<id>) by one idle period.

        Every tab learns the new deadline the one way tabs learn anything: an event that re-renders the entry.
        """
        op = self.state.operations.get(key.removeprefix("op-")) if key.startswith("op-") else None
        if key.startswith("op-"):  # an operation waits on its last round's request
            exchange = str(op.rounds[-1].get("key") or "") if op is not None and op.rounds else ""
        else:
            exchange = key
        if self.client is None or not exchange or self.client.wait_longer(exchange) is None:
            return None
        view = self.deadline_view(exchange)
        assert view is not None
        # An operation's entry shows its last round's deadline.
        self.timeline.append(DeadlineExtended(key=op.key if op is not None else exchange,
                                              extensions=view["extensions"]))
        return view

    async def cancel(self, key: str, who: str) -> bool:
        """Cancel an in-flight request: HTTP closes its stream, stdio sends notifications/cancelled."""
        if self.client is None:
            return False
        self.timeline.append(CancelRequested(key=key, cancelled_by=who))
        return await self.client.cancel(key, f"cancelled by the {who}")

    def _finished(self, key: str, reply: Reply, op: str | None, round_: int | None) -> ExchangeFinished:
        status = "ok"
        if reply.error is not None:
            status = "cancelled" if type(reply.error).__name__ == "RequestCancelled" else "error"
        elif reply.result_type == "input_required":
            status = "input_required"
        elif reply.result and reply.result.get("isError") is True:
            status = "tool_error"
        first = reply.first_byte
        return ExchangeFinished(
            key=key, status=status, duration_ms=reply.duration_ms, cancelled_by=cancelled_by(self.state, key),
            ttfb_ms=None if first is None else (first - reply.sent) * 1000, bytes_in=self._bytes_in.pop(key, 0),
            http_status=self._http_status.pop(key, None), error=str(reply.error) if reply.error else None,
            error_code=getattr(reply.error, "code", None), warnings=list(reply.warnings),
            result_type=reply.result_type, notifications=reply.notification_count, op=op, round=round_)

    def _owe(self, key: str, lock: asyncio.Lock, work: Callable[[], Awaitable[object]]) -> None:
        """One run of `work` for any number of notices that come before it starts.

        A notice is a few bytes; a re-list or re-read is a round trip, a timeline event (a re-list's holds the
        whole list) and a push to every tab. A server sending list_changed or resources/updated in a loop made
        one of each per notice, the re-reads all at once. A run already under way may have read the state
        before the change, so a notice during it owes one more run; never more than one waits."""
        if key in self._owed:
            return
        self._owed.add(key)
        self.background.spawn(f"{key}-{self.id}", self._pay(key, lock, work))

    async def _pay(self, key: str, lock: asyncio.Lock, work: Callable[[], Awaitable[object]]) -> None:
        started = False
        try:
            async with lock:
                started = True
                self._owed.discard(key)  # from here on a notice owes the next run
                await work()
        finally:
            if not started:  # cancelled while queued (a reconnect, a close): owe nothing, or none would ever run
                self._owed.discard(key)

    def _on_change(self, frame: Frame) -> None:
        """A listener's news: a list change refreshes that list; an update to a resource on screen re-reads it; a
        task's status notification or push goes to that task's view."""
        if frame.method in TASK_NOTIFICATIONS:
            said = self.status_notices.notice(frame.params) if frame.method == STATUS_NOTIFICATION else None
            if said is not None:  # outside any request (a GET stream, stdio): no entry holds it
                self.timeline.notice("info", said)
            self.operations.task_notified(frame)
        elif frame.method in LIST_METHODS and self.auto_refresh:
            only = LIST_METHODS[frame.method]
            self._owe(f"refresh-{only}", self._refreshing, lambda: self._refresh_lists(only))
            if only == "resources":
                self._owe("refresh-templates", self._refreshing, lambda: self._refresh_lists("resourceTemplates"))
        elif frame.method == "notifications/resources/updated":
            uri = frame.params.get("uri")
            if isinstance(uri, str) and uri in self.read_uris:
                self._owe(f"reread-{uri}", self._rereading, lambda: self.reread(uri))

    async def reread(self, uri: str) -> None:
        op = await self.operations.start("resources/read", {"uri": uri})
        self.timeline.append(Reread(uri=uri, op=op.id))

    async def close(self) -> None:
        self._closing = True
        if self.oauth is not None:
            self.oauth.stop()  # nobody will answer its authorization page now
        await self.listeners.stop_all()
        await self.background.cancel_all()
        self.server_requests.close()
        if self.client is not None:
            await self.client.close()
        self.stderr_batch.flush()  # what the server said while it was closed (drained to EOF) is not left to a timer
        if self._stray_timer is not None:  # the count of what was not listed is told before the session stops
            self._stray_timer.cancel()
            self._stray_window_ends()
        if self.status != "failed":
            self._set_status("closed")
        self.timeline.flush()  # what its requests held is stored before the store or the session goes


def wire_record(event: WireEvent) -> Wire:
    """The frame as the timeline records it (the fields of `WireEvent.to_dict`, made directly: once per frame)."""
    frame = event.frame
    return Wire(direction=event.direction, raw=event.raw, frame_kind=frame.kind if frame else None,
                problem=frame.problem if frame else None, exchange=event.exchange, http_status=event.http_status,
                headers=[list(h) for h in event.headers] if event.headers is not None else None, note=event.note,
                wall=event.wall, url=event.url)


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
