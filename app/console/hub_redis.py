"""The hub between console processes: the in-process Hub, plus Redis carrying the same text to the others.

Layout in Redis (every key under one prefix, so deployments and tests can share a server):
- `{prefix}ev:{session}`: a stream per session, entry id `{seq}-0`, fields `m` (the serialized event) and
  `p` (the seq of the event this hub published before it for that session). Trimmed `MAXLEN ~ ring_size`.
  It is the shared ring: a process whose own ring lacks what a reconnecting tab missed reads it from here.
  `p` makes "whole" exact: the tab that saw `last_seq` missed nothing iff the first entry after it has
  `p <= last_seq` (seqs have holes — frames are never published — so `seq - 1` would not say it).
- `{prefix}bus`: one stream every process reads (XREAD BLOCK) for live delivery, fields `o` (origin
  process), `t` (`ev`, `close_session`, `close_link`, `forget`, `stored`: read the session again from the store),
  `s` (session or link id), `q` (seq), `p`, `m`.
  A stream rather than pub/sub so a reader that lost its connection resumes from the last id it saw.

Why a subclass rather than a wrapper around a Hub: fan-out, bounded queues, ring and catch-up stay exactly
the in-process code (and the contract suite's look at `_rings` holds); this class only adds the two
directions of travel. `publish_serialized` (what `publish` calls) delivers locally at once, then queues
the text for a sender task that pipelines XADDs in order; publishing never waits on Redis or raises.

Remote events: the reader skips its own process's messages, calls `on_remote(session_id, seq, message)`
FIRST (the manager folds the event into its replica, so the renderer reads up-to-date state), then feeds
the local hub. Duplicates (a pipeline retried after a lost reply) are dropped by seq.

Trust: anything that reaches Redis can write to it, so every bus message and every stream entry carries an
HMAC (field `h`) made with the team key (`app/console/team_key.py`) over all its other fields; a message
without a valid one is dropped and logged (`stats["forged"]`), never folded or pushed. And no seq is believed
beyond what the store holds: an event whose `p` jumps past what this process has seen makes it read the session
again from the store (`on_gap` returns the store's highest seq), and an event the store does not hold after
that read is dropped, not taken as seen. So even a signed message with a wild seq (a bug, a replay) costs one
store read, never a replica that drops every later event as a duplicate.

Redis going away: local delivery goes on. Outgoing messages wait in a bounded buffer (`max_pending`; the
oldest are dropped past it and counted) and are sent, in order, after reconnecting with backoff; the
reader resumes the bus from its last id. So a tab on another process sees nothing new during the outage,
then gets what it missed late but in order — unless the buffer overflowed or the bus was trimmed past
its last id (or Redis lost its data): then the chain `p` shows the hole, that process reads its replica of the
session again from the store (`on_gap`), and its tabs on the session are reset (they reload, as a tab that fell
behind does). That read is awaited on a worker thread, never on the loop (a PostgreSQL that is down makes it
wait out the pool's timeout): meanwhile the reader goes on with other sessions and holds this one's messages,
delivered in bus order once the read is done (`_reread`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from app.console.events import TimelineEvent
from app.console.hub import Hub, Renderer, Serialized, Subscriber
from app.console.tasks import TaskGroup
from app.console.team_key import TeamKey

log = logging.getLogger("mcp_console.hub_redis")

OnRemote = Callable[[str, int, Serialized], None]
FAILURES = (RedisError, OSError, TimeoutError)
BATCH = 500  # XADDs per pipeline round trip
# ... and about this many bytes of event text (one event bigger than it goes alone): a burst of events near the
# message cap must not make one round trip no timeout lets finish, retried whole for ever.
BATCH_BYTES = 4 << 20
SEND_BYTES_PER_S = 20e6  # the least rate a batch is given time for, on top of the timeout
MAX_FORGERS_LOGGED = 100  # senders of unsigned bus messages named in the log; past it they are only counted


def _stream_id(text: str) -> tuple[int, int]:
    milliseconds, _, sequence = text.partition("-")
    try:
        return int(milliseconds), int(sequence or 0)
    except ValueError:
        return 0, 0


def new_process_id() -> str:
    return uuid.uuid4().hex[:16]


# Bus messages about one session (`s` is its id): while the session is read again they wait, in order.
SESSION_KINDS = ("ev", "close_session", "forget", "stored")


@dataclass(frozen=True, slots=True)
class _Reread:
    """The session must be read again from the store before its next message: `prev` is the `p` of the event
    that showed a hole (None: the owner stored what it never published, e.g. the end of an import) and `seq` its own
    seq, which the store must hold for the event to be believed."""

    prev: int | None
    seq: int = 0


@dataclass(slots=True)
class _Outgoing:
    serial: int
    kind: str  # "ev", "close_session", "close_link", "forget", "stored"
    target: str  # session id, or link id for close_link
    seq: int = 0
    prev: int = 0
    text: str = ""  # the serialized event, or the close reason


class RedisHub(Hub):
    def __init__(self, render: Renderer, queue_size: int = 2000, ring_size: int = 2000, *, url: str, key: TeamKey,
                 prefix: str = "mcp-console:", process_id: str | None = None, on_remote: OnRemote | None = None,
                 before_publish: Callable[[], None] | None = None,
                 on_forget: Callable[[str], None] | None = None,
                 on_gap: Callable[[str], Awaitable[int | None]] | None = None,
                 before_remote: Callable[[str], Awaitable[None]] | None = None,
                 known_seq: Callable[[str], int | None] | None = None,
                 bus_size: int = 100_000,
                 max_pending: int = 50_000, timeout_s: float = 5.0) -> None:
        super().__init__(render, queue_size=queue_size, ring_size=ring_size)
        self.process_id = process_id or new_process_id()
        self._key = key
        # The highest seq this process already holds of a session it has heard nothing of over the bus yet (its
        # replica's): the first event's `p` is checked against it as later ones are against the last one seen.
        self.known_seq = known_seq
        self.on_remote = on_remote
        # Called off the loop before a batch of events goes out (the manager flushes its store): a process that
        # hears of an event and loads the session from the store then finds the event there.
        self.before_publish = before_publish
        # Called when another process deleted a session (a `forget` on the bus): the manager drops its replica.
        self.on_forget = on_forget
        # Awaited when events of a session were lost on the way here, or another process stored what it did not
        # publish (before the session's next message is delivered): the manager reads its replica again from the
        # store, which holds them, on a worker thread. The session's later messages wait for it; others do not.
        self.on_gap = on_gap
        # Awaited before another process's event is delivered (the manager loads a session new here, off the
        # loop): the read loop waits for it, so the session's events still arrive in order.
        self.before_remote = before_remote
        self._prefix = prefix
        self._bus = f"{prefix}bus"
        self._bus_size = bus_size
        self._max_pending = max_pending
        self._timeout = timeout_s
        # surrogateescape: a message anything else wrote may hold any bytes (decoded strictly, one stopped the reader)
        self._redis: aioredis.Redis = aioredis.Redis.from_url(
            url, decode_responses=True, encoding_errors="surrogateescape", socket_connect_timeout=timeout_s,
            socket_timeout=timeout_s + 2.0)
        self._pending: deque[_Outgoing] = deque()
        self._serial = 0
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()  # nothing pending: what stop() waits for
        self._idle.set()
        self._prev: dict[str, int] = {}  # per session: the last seq this hub published
        self._seen: dict[str, int] = {}  # per session: the last seq received from another process
        self._last_id: str | None = None  # the bus position the reader resumes from
        # Sessions being read again (see `_reread`): the messages for each that arrived meanwhile, in bus order.
        self._held: dict[str, deque[dict[str, str]]] = {}
        self.ready = asyncio.Event()  # the reader knows where the bus ends: later messages will reach it
        self._tasks = TaskGroup()
        self._closing = False
        self._forgers: set[str] = set()  # senders of unsigned messages already logged
        self.stats = {"sent": 0, "received": 0, "dropped": 0, "send_failures": 0, "read_failures": 0, "gaps": 0,
                      "rejected": 0, "held": 0, "forged": 0, "beyond_store": 0, "bus_resets": 0}

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start sender and reader; wait (bounded) until the reader is positioned. Redis being down is
        logged, not raised: the tasks keep retrying and local delivery works meanwhile."""
        self.launch()
        try:
            await asyncio.wait_for(self.ready.wait(), self._timeout)
        except TimeoutError:
            log.warning("Redis hub: Redis not reachable at start; local delivery only until it is")

    def launch(self) -> None:
        """Start the tasks without waiting (for sync code inside a running loop)."""
        if len(self._tasks) == 0:
            self._tasks.spawn(f"redis-hub-send-{self.process_id}", self._send_loop())
            self._tasks.spawn(f"redis-hub-read-{self.process_id}", self._read_loop())

    async def stop(self, flush_s: float = 2.0) -> None:
        """Send what is pending (bounded by `flush_s`), then stop and disconnect."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), flush_s)
        # The flag as well as the cancel: redis-py may turn a cancel that lands mid-reply into a
        # ConnectionError, which the loops would take for an outage and retry.
        self._closing = True
        await self._tasks.cancel_all()
        with contextlib.suppress(*FAILURES):
            await self._redis.aclose()

    # -- outgoing -------------------------------------------------------------------------------------

    def publish_serialized(self, session_id: str, seq: int, message: Serialized) -> None:
        super().publish_serialized(session_id, seq, message)
        prev = self._prev.get(session_id, seq - 1)
        self._prev[session_id] = seq
        self._enqueue("ev", session_id, seq, prev, message)

    def close_session(self, session_id: str, reason: str) -> None:
        super().close_session(session_id, reason)
        self._enqueue("close_session", session_id, text=reason)

    def close_link(self, link_id: str, reason: str) -> None:
        super().close_link(link_id, reason)
        self._enqueue("close_link", link_id, text=reason)

    def forget_session(self, session_id: str) -> None:
        """Also deletes the session's stream, and every process drops its ring of it."""
        self._forget(session_id)
        self._enqueue("forget", session_id)

    def stored(self, session_id: str) -> None:
        """This process stored events of the session that it never published (an import's): the processes that
        hold a replica of it read it again from the store (a `stored` on the bus, held in order as a gap is)."""
        self._enqueue("stored", session_id)

    def _forget(self, session_id: str) -> None:
        super().forget_session(session_id)
        self._prev.pop(session_id, None)
        self._seen.pop(session_id, None)

    def _enqueue(self, kind: str, target: str, seq: int = 0, prev: int = 0, text: str = "") -> None:
        self._serial += 1
        self._pending.append(_Outgoing(self._serial, kind, target, seq, prev, text))
        if len(self._pending) > self._max_pending:
            self._pending.popleft()  # the receivers see the hole through `p` and reset their tabs
            self.stats["dropped"] += 1
        self._idle.clear()
        self._wake.set()

    async def _send_loop(self) -> None:
        backoff = 0.05
        while not self._closing:
            if not self._pending:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            batch, size = self._batch()
            try:
                if self.before_publish is not None and any(item.kind in ("ev", "stored") for item in batch):
                    await asyncio.to_thread(self.before_publish)
                results = await asyncio.wait_for(self._send(batch), self._timeout + size / SEND_BYTES_PER_S)
            except FAILURES as exc:
                if self._closing:
                    return
                self.stats["send_failures"] += 1
                log.warning("Redis hub: sending failed (%s); retrying in %.2f s", exc, backoff)
                await asyncio.sleep(backoff)  # reconnect backoff, not a wait for a condition
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.05
            last = batch[-1].serial
            while self._pending and self._pending[0].serial <= last:
                self._pending.popleft()
            self.stats["sent"] += len(batch)
            for result in results:
                # A retried batch finds its per-session entries there already ("equal or smaller"): fine.
                if isinstance(result, Exception) and "equal or smaller" not in str(result):
                    log.warning("Redis hub: a command failed: %s", result)

    def _batch(self) -> tuple[list[_Outgoing], int]:
        """The oldest pending messages, at most BATCH of them and about BATCH_BYTES of text (at least one)."""
        batch: list[_Outgoing] = []
        size = 0
        for item in self._pending:
            if batch and (len(batch) == BATCH or size + len(item.text) > BATCH_BYTES):
                break
            batch.append(item)
            size += len(item.text)
        return batch, size

    async def _send(self, batch: list[_Outgoing]) -> list[Any]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for item in batch:
                if item.kind == "ev":
                    # The session's stream first: a process that hears of an event on the bus finds it there.
                    pipe.xadd(f"{self._prefix}ev:{item.target}", self.stream_fields(item.target, item.seq, item.prev,
                                                                                    item.text),
                              id=f"{item.seq}-0", maxlen=self._ring_size, approximate=True)
                elif item.kind == "forget":
                    pipe.delete(f"{self._prefix}ev:{item.target}")
                pipe.xadd(self._bus, self.bus_fields(item.kind, item.target, item.seq, item.prev, item.text),
                          maxlen=self._bus_size, approximate=True)
            return await pipe.execute(raise_on_error=False)

    def bus_fields(self, kind: str, target: str, seq: int, prev: int, text: str) -> dict[Any, Any]:
        fields: dict[Any, Any] = {"o": self.process_id, "t": kind, "s": target, "q": seq, "p": prev, "m": text}
        fields["h"] = self._key.sign("bus", self.process_id, kind, target, seq, prev, text)
        return fields

    def stream_fields(self, session_id: str, seq: int, prev: int, text: str) -> dict[Any, Any]:
        return {"m": text, "p": prev, "h": self._key.sign("ev", session_id, seq, prev, text)}

    def _signed_bus(self, fields: dict[str, str]) -> bool:
        parts = [fields.get(name) for name in ("o", "t", "s", "q", "p", "m")]
        if any(part is None for part in parts):
            return False
        return self._key.verify("bus", fields.get("h"), *(str(part) for part in parts))

    # -- incoming -------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        backoff = 0.05
        while not self._closing:
            try:
                if self._last_id is None:
                    tail = await self._redis.xrevrange(self._bus, count=1)
                    self._last_id = tail[0][0] if tail else "0-0"
                    self.ready.set()
                reply = await self._redis.xread({self._bus: self._last_id}, count=BATCH, block=1000)
            except Exception as exc:  # Redis away, or an answer it could not parse: retried, never the end of it
                if self._closing:
                    return
                self.stats["read_failures"] += 1
                log.warning("Redis hub: reading failed (%s); retrying in %.2f s", exc, backoff)
                await asyncio.sleep(backoff)  # reconnect backoff
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.05
            if not reply:
                await self._check_position()
            for _stream, messages in reply or ():
                for message_id, fields in messages:
                    self._last_id = message_id
                    try:
                        await self._receive(fields)
                    except Exception:  # one message, whatever it holds, never stops the reader
                        self.stats["rejected"] += 1
                        log.exception("Redis hub: a bus message could not be handled; the reader goes on")

    async def _check_position(self) -> None:
        """After a quiet second: is the bus still ahead of where this reader stands? An entry with an id far in the
        future, then the bus deleted (anything with Redis's password can do both), left every reader waiting past
        ids the bus would take years to reach: no event, forget or link revocation crossed between processes again
        until each restarted. A bus whose last id is behind this reader's was made anew: read it from its start
        (what this process saw already is dropped by seq; the holes `p` shows are read again from the store)."""
        tail = await self._redis.xrevrange(self._bus, count=1)
        last = tail[0][0] if tail else "0-0"
        if self._last_id is not None and _stream_id(last) < _stream_id(self._last_id):
            log.warning("Redis hub: the bus ends before where this process read up to (it was deleted or made "
                        "anew); reading it again from its start")
            self.stats["bus_resets"] += 1
            self._last_id = "0-0"

    async def _receive(self, fields: dict[str, str]) -> None:
        if fields.get("o") == self.process_id:
            return
        if not self._signed_bus(fields):
            self._forged(fields)
            return
        target = fields.get("s", "")
        held = self._held.get(target) if fields.get("t") in SESSION_KINDS else None
        if held is not None:  # the session is being read again: its messages wait their turn
            held.append(fields)
            self.stats["held"] += 1
            return
        reread = await self._take(fields)
        if reread is not None:  # the event that showed a hole is delivered after the read
            self._held[target] = deque([fields] if reread.prev is not None else [])
            self._tasks.spawn(f"redis-hub-reread-{target}", self._reread(target, reread))

    def _forged(self, fields: dict[str, str]) -> None:
        """Dropped, and said once per sender (not per message: a flood must not flood the log). What it carried is
        not logged: a real event of another team's process holds what its owner typed."""
        self.stats["forged"] += 1
        origin = str(fields.get("o", ""))[:64]
        if origin in self._forgers or len(self._forgers) >= MAX_FORGERS_LOGGED:
            return
        self._forgers.add(origin)
        log.warning("Redis hub: dropped bus messages from %r that are not signed with this process's team secret: "
                    "does MCP_CONSOLE_TEAM_SECRET match on every console process of the team? (If it does, "
                    "something else writes to this Redis.) Said once per sender.", origin)

    async def _take(self, fields: dict[str, str]) -> _Reread | None:
        """Deliver one remote message, unless it says the session must be read again from the store first
        (then nothing of it is delivered yet, and what to read again is returned)."""
        try:
            if fields.get("t") == "stored":
                return _Reread(prev=None)
            if self.before_remote is not None and fields.get("t") == "ev":
                await self.before_remote(fields.get("s", ""))
            return self._deliver(fields)
        except Exception:  # one bad message (or a failing hook) must not stop the feed
            log.exception("Redis hub: delivering a remote message failed")
            return None

    async def _reread(self, session_id: str, first: _Reread) -> None:
        """Read the session again from the store (off the loop: `on_gap` awaits a worker thread), then deliver
        what arrived for it meanwhile, in bus order. The reader goes on with every other session, and holds this
        one's messages in `_held` until this task has delivered them all (none is skipped, none delivered twice:
        only this task takes from the queue, and it drops the queue, with nothing awaited, once it is empty)."""
        held = self._held[session_id]
        reread: _Reread | None = first
        try:
            while reread is not None:
                if not await self._read_again(session_id, reread) and held:
                    held.popleft()  # the event that showed the hole claims what the store does not hold
                reread = None
                while held:
                    fields = held.popleft()
                    reread = await self._take(fields)
                    if reread is not None:  # another hole (or another import ended): read again before it
                        if fields.get("t") != "stored":
                            held.appendleft(fields)
                        break
        finally:
            del self._held[session_id]

    async def _read_again(self, session_id: str, reread: _Reread) -> bool:
        """Read the session again; whether the event that showed the hole may then be delivered (False: the store,
        which the owner fills before it publishes, holds no event of that seq, so it is no event to believe)."""
        stored: int | None = None
        if self.on_gap is not None:
            try:
                stored = await self.on_gap(session_id)
            except Exception:  # the store away: the tabs still reload, on what the replica holds
                log.exception("Redis hub: reading session %s again failed", session_id)
        for sub in self._subs.get(session_id, ()):
            sub.fall_behind()
        if reread.prev is None:
            return True
        if stored is not None and reread.seq > stored:
            self.stats["beyond_store"] += 1
            log.warning("Redis hub: dropped event %d of session %s: the store holds events up to %d only",
                        reread.seq, session_id, stored)
            self._seen[session_id] = max(self._seen.get(session_id, 0), stored)
            return False
        if session_id in self._floors:
            self._floors[session_id] = max(self._floors[session_id], reread.prev)
        # The event that showed the hole is delivered next: from here its `p` chains on.
        self._seen[session_id] = max(self._seen.get(session_id, 0), reread.prev)
        return True

    def _deliver(self, fields: dict[str, str]) -> _Reread | None:
        kind, target = fields.get("t"), fields.get("s", "")
        if kind == "close_session":
            super().close_session(target, fields.get("m", ""))
        elif kind == "close_link":
            super().close_link(target, fields.get("m", ""))
        elif kind == "forget":
            # Sockets first (the owner's close_session may have been trimmed or lost), then the ring, then the
            # replica: a deleted session is gone from every process, not only from the owner and the forwarder.
            super().close_session(target, "session deleted")
            self._forget(target)
            if self.on_forget is not None:
                self.on_forget(target)
        elif kind == "ev":
            checked = self._checked(fields, target)
            if checked is None:
                return None
            seq, prev, message = checked
            seen = self._seen.get(target)
            if seen is not None and seq <= seen:
                return None  # a duplicate from a retried pipeline
            if seen is None and self.known_seq is not None:
                seen = self.known_seq(target)  # the first word of it here: checked against the replica's seq
            if seen is not None and prev > seen:
                # Events between what this process saw and `prev` never arrived. Their reading again is no
                # business of the loop: the caller reads it on a worker thread and delivers this event after.
                self.stats["gaps"] += 1
                return _Reread(prev=prev, seq=seq)
            self._seen[target] = seq
            self.stats["received"] += 1
            if self.on_remote is not None:
                self.on_remote(target, seq, message)
            super().publish_serialized(target, seq, message)
        return None

    def _checked(self, fields: dict[str, str], target: str) -> tuple[int, int, Serialized] | None:
        """An `ev` message's seq, prev and event, or None (logged, counted) when it is not one a console wrote:
        another client of the same Redis may write anything to the bus, and a message that is no event of
        this session at this seq must change nothing (a bogus high seq taken as seen would drop every real
        event after it as a duplicate)."""
        try:
            seq, prev = int(fields["q"]), int(fields["p"])
            message = Serialized(fields["m"])
            event = TimelineEvent.from_json(message)
            valid = event.session_id == target and event.seq == seq and 0 <= prev < seq
        except Exception:  # whatever the text: a missing field, no JSON, a record that does not load
            valid = False
        if not valid:
            self.stats["rejected"] += 1
            log.warning("Redis hub: dropped a bus message that is no event of session %r: %.200r", target, fields)
            return None
        return seq, prev, message

    # -- catch-up -------------------------------------------------------------------------------------

    async def subscribe_async(self, session_id: str, last_seq: int | None, current_seq: int,
                              link_id: str | None = None, masked: bool = False) -> tuple[Subscriber, bool]:
        """Like `subscribe`, but a gap the local ring lacks (this process started after those events, or
        saw them only partly) is filled from the session's stream first. Only a gap older than the
        stream keeps (or a stream Redis lost) means reload."""
        ring_covers = session_id in self._rings and last_seq is not None and last_seq >= self._floors[session_id]
        if last_seq is not None and last_seq < current_seq and not ring_covers:
            await self._fill_from_stream(session_id, last_seq)
        return self.subscribe(session_id, last_seq, current_seq, link_id=link_id, masked=masked)

    async def _fill_from_stream(self, session_id: str, last_seq: int) -> None:
        try:
            entries = await asyncio.wait_for(self._redis.xrange(
                f"{self._prefix}ev:{session_id}", min=f"{last_seq + 1}-0", max="+", count=self._ring_size + 1),
                self._timeout)
        except FAILURES as exc:
            log.warning("Redis hub: catch-up read failed (%s); the tab reloads", exc)
            return
        if not entries or len(entries) > self._ring_size:
            return  # nothing there to prove the gap empty, or more than a ring: reload
        slots = []
        for entry_id, fields in entries:
            seq = int(entry_id.split("-")[0])
            if not self._key.verify("ev", fields.get("h"), session_id, seq, fields.get("p", ""), fields.get("m", "")):
                self.stats["forged"] += 1
                log.warning("Redis hub: session %s's stream holds an entry not signed with the team secret; "
                            "the tab reloads", session_id)
                return
            slots.append((seq, Serialized(fields["m"]), int(fields["p"])))
        if slots[0][2] > last_seq:
            return  # the stream was trimmed past what the tab saw
        if session_id in self._rings and slots[-1][0] < self._floors[session_id]:
            return  # a hole between the stream's end and what the local ring holds
        self._backfill(session_id, [(seq, message) for seq, message, _ in slots], slots[0][2])

    def _backfill(self, session_id: str, older: list[tuple[int, Serialized]], floor: int) -> None:
        """Merge events read from the stream into the local ring, by seq, keeping the newest `ring_size`."""
        ring = self._rings.get(session_id)
        held = list(ring) if ring is not None else []
        known = {slot[0] for slot in held}
        merged = sorted([(seq, message, None) for seq, message in older if seq not in known] + held,
                        key=lambda slot: slot[0])
        fresh: deque[Any] = deque(maxlen=self._ring_size)
        new_floor = min(floor, self._floors[session_id]) if ring is not None else floor
        for slot in merged:
            if len(fresh) == fresh.maxlen:
                new_floor = fresh[0][0]
            fresh.append(slot)
        self._rings[session_id] = fresh
        self._floors[session_id] = new_floor
