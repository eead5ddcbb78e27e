"""Fan-out to browsers: render once per event, push the same string to every socket's bounded queue.

A socket that falls behind is marked for reset (it reloads); it never slows the others. A
reconnecting tab says the last sequence number it saw and gets what it missed from a bounded ring.

What travels is text: an event is serialized once when published (its JSON) and everything past
that point — the ring, the renderer's input, the sockets' queues — holds strings, never a live
object. A hub between processes (Redis) can carry exactly the same messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.console.events import TimelineEvent

Renderer = Callable[[TimelineEvent], str | None]


log = logging.getLogger("mcp_console.hub")

class Payload(str):
    """A rendered fragment, as the sockets receive it."""


class Serialized(str):
    """A serialized event (its JSON), not rendered yet."""


# A ring slot: seq, the serialized event, and the owner's rendering of it: a Payload, NOTHING when it renders
# to nothing, or None when no owner tab was watching (rendered on demand). Text only, never a live object.
NOTHING = Payload("")
Slot = tuple[int, Serialized, Payload | None]
# Most characters of fragments one reconnecting socket is caught up with; past it the tab reloads (its page is a
# bounded window, so a reload costs far less than replaying the ring: ~40 ms of the loop per megabyte rendered).
CATCH_UP_BYTES = 4 * 1024 * 1024


@dataclass(eq=False)
class Subscriber:
    session_id: str
    queue: asyncio.Queue[tuple[int, str]]
    link_id: str | None = None  # the share link this socket came in through, if any
    masked: bool = False  # a link holder or presenter tab: gets the masked rendering of every event
    overflow: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    close_reason: str = ""
    # Set whenever the sender has something to do (a message queued, an overflow, a close): the one thing
    # its task waits on, so a message is one loop turn from `offer` to the socket. Waiting on the queue,
    # the overflow and the close at once took three turns per message, and under a flood every turn can
    # cost the rest of the loop a reader's time slice (app/mcp/fair.py) before the send.
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, seq: int, payload: str) -> None:
        if self.overflow.is_set():
            return
        try:
            self.queue.put_nowait((seq, payload))
        except asyncio.QueueFull:
            self.overflow.set()
        self.wake.set()

    def fall_behind(self) -> None:
        """The tab cannot be caught up: its sender sends a reset (the tab reloads)."""
        self.overflow.set()
        self.wake.set()

    def close(self, reason: str) -> None:
        self.close_reason = reason
        self.closed.set()
        self.wake.set()


class Hub:
    def __init__(self, render: Renderer, queue_size: int = 2000, ring_size: int = 2000,
                 catch_up_bytes: int = CATCH_UP_BYTES) -> None:
        self._render = render
        self._catch_up_bytes = catch_up_bytes
        # Link holders' tabs get the same event rendered with the owner's typed values masked.
        self._render_masked: Renderer = getattr(render, "masked", render)
        self._queue_size = queue_size
        self._ring_size = ring_size
        self._subs: dict[str, set[Subscriber]] = {}
        # Per session: the last events as slots (above). Masked tabs catching up render the serialized
        # event again, masked.
        self._rings: dict[str, deque[Slot]] = {}
        # Per session: the newest seq that left the ring. A tab that saw at least that much can be
        # caught up from the ring; the seqs in between are frames, which tabs never get anyway.
        self._floors: dict[str, int] = {}
        # Per session and masked-or-not: what the last catch-up rendered, by seq (see `_missed`).
        self._caught_up: dict[tuple[str, bool], dict[int, Payload]] = {}
        self.rendered = 0

    def publish(self, event: TimelineEvent) -> None:
        """Render once and offer to every socket; with no socket open, only remember the event.

        Nobody watching costs nothing but a ring slot: a tab that connects later and asks for
        what it missed gets those events rendered then (showing their entries as they are now).
        """
        if event.kind == "wire":
            return  # frames render to nothing: they never reach a tab, and must not crowd the ring
        self.publish_serialized(event.session_id, event.seq, Serialized(event.to_json()))

    def publish_serialized(self, session_id: str, seq: int, message: Serialized) -> None:
        """The hub's own entry point: a serialized event (what a hub between processes receives)."""
        subs = self._subs.get(session_id)
        ring = self._ring(session_id, seq - 1)
        if len(ring) == ring.maxlen:
            self._floors[session_id] = ring[0][0]  # that event is about to leave the ring
        if not subs:
            ring.append((seq, message, None))
            return
        event = TimelineEvent.from_json(message)
        payload = self._text(self._render, event) if any(not sub.masked for sub in subs) else None
        ring.append((seq, message, payload))
        if payload is NOTHING:
            return
        masked = self._text(self._render_masked, event) if any(sub.masked for sub in subs) else None
        self.rendered += 1
        for sub in subs:
            chosen = masked if sub.masked else payload
            if chosen:
                sub.offer(seq, chosen)

    @staticmethod
    def _text(render: Renderer, event: TimelineEvent) -> Payload:
        try:
            rendered = render(event)
        except Exception:  # a fragment that cannot be made must not fail the change it shows (its append)
            log.exception("could not render event %s (%s) of session %s", event.seq, event.kind, event.session_id)
            return NOTHING
        return NOTHING if not rendered else Payload(rendered)

    def subscribe(self, session_id: str, last_seq: int | None, current_seq: int,
                  link_id: str | None = None, masked: bool = False) -> tuple[Subscriber, bool]:
        """Register a socket. Returns it, and whether its missed events could be replayed.

        False means the gap is older than the ring: the tab must reload to be whole again.
        """
        sub = Subscriber(session_id, asyncio.Queue(maxsize=self._queue_size), link_id=link_id, masked=masked)
        missed = self._missed(session_id, last_seq, current_seq, masked) if last_seq is not None else []
        if missed is None:
            return sub, False  # not subscribed: the route sends the reset and closes
        for seq, payload in missed:
            sub.offer(seq, payload)
        self._subs.setdefault(session_id, set()).add(sub)
        return sub, True

    def _missed(self, session_id: str, last_seq: int, current_seq: int,
                masked: bool) -> list[tuple[int, Payload]] | None:
        """What a tab that saw `last_seq` missed, rendered for it; None when it must reload instead: the gap is
        older than the ring, or its fragments pass the catch-up budget. The hello's number is the caller's to
        choose, and `0` asked for the whole ring rendered again: ~1.4 s of the loop and 33 MB for one socket."""
        if last_seq >= current_seq:
            return []
        ring = self._ring(session_id, current_seq)
        if last_seq < self._floors[session_id]:
            return None
        missed: list[tuple[int, Payload]] = []
        budget = self._catch_up_bytes
        # Renderings made for a catch-up are kept (for the seqs still in the ring) and serve the next one: each
        # socket's own rendering of the ring let twenty sockets of one link, reconnecting, hold the loop for seconds.
        earlier = self._caught_up.get((session_id, masked), {})
        oldest = ring[0][0] if ring else current_seq
        kept = {seq: payload for seq, payload in earlier.items() if seq >= oldest}  # bounded by the ring
        self._caught_up[(session_id, masked)] = kept
        for seq, message, item in ring:
            if seq <= last_seq or item is NOTHING:
                continue
            if masked or item is None:
                payload = earlier.get(seq) or self._text(self._render_masked if masked else self._render,
                                                         TimelineEvent.from_json(message))
                if payload:  # nothing is not kept: it may be a replica this process did not have yet
                    kept[seq] = payload
            else:
                payload = item
            if payload:
                budget -= len(payload)
                if budget < 0:
                    return None
                missed.append((seq, payload))
        return missed

    async def subscribe_async(self, session_id: str, last_seq: int | None, current_seq: int,
                              link_id: str | None = None, masked: bool = False) -> tuple[Subscriber, bool]:
        """`subscribe` for the websocket route: a hub between processes may await its shared log to fill a
        gap its own ring lacks. The in-process hub has nothing to wait for."""
        return self.subscribe(session_id, last_seq, current_seq, link_id=link_id, masked=masked)

    async def start(self) -> None:
        """Nothing to start in one process; a hub between processes connects here."""

    async def stop(self) -> None:
        """Nothing to stop in one process."""

    def _ring(self, session_id: str, known_up_to: int) -> deque[Slot]:
        """The session's ring; a new one (e.g. after a restart) knows nothing up to `known_up_to`."""
        ring = self._rings.get(session_id)
        if ring is None:
            ring = self._rings[session_id] = deque(maxlen=self._ring_size)
            self._floors[session_id] = known_up_to
        return ring

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._subs.get(sub.session_id)
        if subs is not None:
            subs.discard(sub)

    def close_session(self, session_id: str, reason: str) -> None:
        for sub in list(self._subs.get(session_id, ())):
            sub.close(reason)

    def stored(self, session_id: str) -> None:
        """The store holds events of the session that were never published (an import's). One process has no
        one to tell; the Redis hub tells the others."""

    def forget_session(self, session_id: str) -> None:
        """The session is gone (deleted): drop what the hub remembers of it."""
        self._rings.pop(session_id, None)
        self._floors.pop(session_id, None)
        for masked in (False, True):
            self._caught_up.pop((session_id, masked), None)

    def close_link(self, link_id: str, reason: str) -> None:
        for subs in self._subs.values():
            for sub in list(subs):
                if sub.link_id == link_id:
                    sub.close(reason)

    def subscribers(self, session_id: str) -> int:
        return len(self._subs.get(session_id, ()))
