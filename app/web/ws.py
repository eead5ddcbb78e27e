"""The websocket feed: every tab on a session gets the same rendered fragments, in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from app.console.hub import Subscriber
from app.settings import Settings
from app.web.deps import Principal, Web, identify
from app.web.render import without_dialogs

router = APIRouter()
HELLO_TIMEOUT_S = 5.0
HELLO_MAX_CHARS = 200  # the page's hello is `{"last_seq": N}`; anything longer is not parsed at all
REFUSED_CODE = 4029  # ours (4000–4999): "too many"; the page shows the reason and does not retry


class SocketCounts:
    """Open websockets per credential (the owner token, or one share link) and in all."""

    def __init__(self) -> None:
        self.by_credential: Counter[str] = Counter()
        self.total = 0

    def admit(self, credential: str, settings: Settings) -> str | None:
        """Count one more socket, or say why not (None means admitted)."""
        if self.total >= settings.max_websockets:
            return f"too many open websockets in all ({settings.max_websockets}, setting max_websockets)"
        if self.by_credential[credential] >= settings.max_websockets_per_credential:
            return (f"too many open websockets for this credential ({settings.max_websockets_per_credential}, "
                    "setting max_websockets_per_credential)")
        self.by_credential[credential] += 1
        self.total += 1
        return None

    def release(self, credential: str) -> None:
        self.by_credential[credential] -= 1
        if self.by_credential[credential] <= 0:
            del self.by_credential[credential]
        self.total -= 1


def _counts(websocket: WebSocket) -> SocketCounts:
    counts = getattr(websocket.app.state, "socket_counts", None)
    if not isinstance(counts, SocketCounts):
        counts = websocket.app.state.socket_counts = SocketCounts()
    return counts


def credential_of(who: Principal) -> str:
    return f"link:{who.link_id}" if who.link_id else "owner"


def reset_message(seq: int, reason: str) -> str:
    return f'<div id="ws-seq" hx-swap-oob="true" data-seq="{seq}" data-reset="1"></div>'


@router.websocket("/sessions/{session_id}/ws")
async def feed(websocket: WebSocket, session_id: str) -> None:
    w: Web = websocket.app.state.web
    who = identify(w, {k.lower(): v for k, v in websocket.headers.items()}, dict(websocket.cookies))
    session = w.manager.get(session_id)
    if who is None or session is None or not who.may_view(session_id):
        await websocket.close(code=1008)
        return
    await websocket.accept()  # accepted first, so the refusal can carry its reason
    counts, credential = _counts(websocket), credential_of(who)
    refused = counts.admit(credential, w.manager.settings)
    if refused is not None:
        await websocket.close(code=REFUSED_CODE, reason=refused[:120])
        return
    try:
        await _serve(websocket, w, session_id, who)
    finally:
        counts.release(credential)


async def _serve(websocket: WebSocket, w: Web, session_id: str, who: Principal) -> None:
    session = w.manager.get(session_id)
    if session is None:
        return
    try:
        last_seq = await _hello(websocket)
    except (WebSocketDisconnect, RuntimeError):  # the tab went before it said hello (a quick navigation away)
        return
    # Awaited: a hub between processes may fill the gap from its shared log first.
    sub, whole = await w.manager.hub.subscribe_async(session_id, last_seq, session.timeline.seq,
                                                     link_id=who.link_id, masked=not who.sees_secrets)
    link = w.manager.links.get(who.link_id) if who.link_id else None
    if who.link_id and (link is None or not link.active()):
        # Revoked (or gone) while the hello was awaited: the revocation closed the sockets subscribed by then, not
        # this one, which would otherwise take the feed for good. Checked after subscribing, so nothing is between.
        sub.close("this share link was revoked" if link is None or link.revoked is not None
                  else "this share link expired")
    expiry = None
    if link is not None and link.expires is not None:
        # An expiring link stops at once, open sockets included.
        delay = max(0.0, link.expires - time.time())
        expiry = asyncio.get_running_loop().call_later(delay, sub.close, "this share link expired")
    try:
        if not whole and not sub.closed.is_set():
            await websocket.send_text(reset_message(session.timeline.seq, "missed too much"))
            return
        await _pump(websocket, sub, viewer=who.role == "viewer")
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        if expiry is not None:
            expiry.cancel()
        w.manager.hub.unsubscribe(sub)
        with contextlib.suppress(Exception):
            await websocket.close()


async def _hello(websocket: WebSocket) -> int | None:
    """The tab's first message says the last sequence number it has seen.

    Anything else is taken as no last seq: JSON's `Infinity` (Python reads it) raised OverflowError out of here, and
    a hello nested thousands deep RecursionError."""
    try:
        text = await asyncio.wait_for(websocket.receive_text(), HELLO_TIMEOUT_S)
        if len(text) > HELLO_MAX_CHARS:
            return None
        value = json.loads(text).get("last_seq")
        return int(value) if value is not None else None
    except (TimeoutError, ValueError, TypeError, AttributeError, OverflowError, RecursionError):
        return None


async def _pump(websocket: WebSocket, sub: Subscriber, viewer: bool = False) -> None:
    """Send what the hub queues, in order, until the tab goes, falls behind or is closed.

    One wake-up per burst (`Subscriber.wake`): everything queued by then goes out in the same turn."""
    receiver = asyncio.create_task(_drain(websocket), name="ws-drain")
    receiver.add_done_callback(lambda _: sub.wake.set())
    try:
        while True:
            if receiver.done():
                return
            if sub.closed.is_set():  # a revoked or expired link stops at once, whatever is still queued
                await websocket.close(code=4003, reason=sub.close_reason[:100])
                return
            try:
                _seq, payload = sub.queue.get_nowait()
            except asyncio.QueueEmpty:
                pass
            else:
                await websocket.send_text(without_dialogs(payload) if viewer else payload)  # viewers answer nothing
                continue
            if sub.overflow.is_set():
                await websocket.send_text(reset_message(0, "fell behind"))
                return
            sub.wake.clear()  # cleared only with the queue empty: an offer after this sets it again
            await sub.wake.wait()
    finally:
        receiver.cancel()


async def _drain(websocket: WebSocket) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
