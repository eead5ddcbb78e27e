"""The websocket feed: every tab on a session gets the same rendered fragments, in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from app.console.hub import Subscriber
from app.web.deps import Web, identify

router = APIRouter()
HELLO_TIMEOUT_S = 5.0


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
    await websocket.accept()
    last_seq = await _hello(websocket)
    sub, whole = w.manager.hub.subscribe(session_id, last_seq, session.timeline.seq, link_id=who.link_id,
                                         masked=not who.sees_secrets)
    link = w.manager.links.get(who.link_id) if who.link_id else None
    expiry = None
    if link is not None and link.expires is not None:
        # An expiring link stops at once, open sockets included.
        delay = max(0.0, link.expires - time.time())
        expiry = asyncio.get_running_loop().call_later(delay, sub.close, "this share link expired")
    try:
        if not whole:
            await websocket.send_text(reset_message(session.timeline.seq, "missed too much"))
            return
        await _pump(websocket, sub)
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        if expiry is not None:
            expiry.cancel()
        w.manager.hub.unsubscribe(sub)
        with contextlib.suppress(Exception):
            await websocket.close()


async def _hello(websocket: WebSocket) -> int | None:
    """The tab's first message says the last sequence number it has seen."""
    try:
        text = await asyncio.wait_for(websocket.receive_text(), HELLO_TIMEOUT_S)
        value = json.loads(text).get("last_seq")
        return int(value) if value is not None else None
    except (TimeoutError, ValueError, TypeError, AttributeError):
        return None


async def _pump(websocket: WebSocket, sub: Subscriber) -> None:
    receiver = asyncio.create_task(_drain(websocket), name="ws-drain")
    try:
        while True:
            getter = asyncio.ensure_future(sub.queue.get())
            waits = {getter, receiver, asyncio.ensure_future(sub.overflow.wait()),
                     asyncio.ensure_future(sub.closed.wait())}
            done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                if task is not receiver:
                    task.cancel()
            if getter in done:
                _seq, payload = getter.result()
                await websocket.send_text(payload)
                continue
            if receiver in done:
                return
            if sub.overflow.is_set():
                await websocket.send_text(reset_message(0, "fell behind"))
                return
            if sub.closed.is_set():
                await websocket.close(code=4003, reason=sub.close_reason[:100])
                return
    finally:
        receiver.cancel()


async def _drain(websocket: WebSocket) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
