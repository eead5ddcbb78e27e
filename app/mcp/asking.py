"""Requests from a 2025-11-25 server, as the client takes them: asked beside the stream, answered, bounded.

A legacy server asks (elicitation, sampling, roots) on a request's stream or its standalone GET stream and waits
for a JSON-RPC response with its id. Asking a person may take minutes, so each is asked beside the stream, which
keeps being read. A hostile server must not make that unbounded or ambiguous, so:

- a request repeating the id of one still open is not asked, nor answered (JSON-RPC ids are unique among requests
  in flight: its answer would be taken for the other's);
- past MAX_OPEN_SERVER_REQUESTS open at once the next are refused with an error, so a flood opens no thousand
  dialogs; answers go out SENDING_ANSWERS at a time, and past MAX_WAITING_ANSWERS waiting one that needs no one
  (a ping's, a refusal) is not sent;
- `notifications/cancelled` naming one withdraws it: nothing goes back (the asking task is cancelled; the console's
  dialog records the withdrawal); one naming none is said and ignored;
- a fault the server repeats is told SAID_TIMES times, then once "not said again".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.mcp.era import Answerer, ServerAnswer
from app.mcp.errors import McpError
from app.mcp.jsonrpc import Frame

if TYPE_CHECKING:
    from app.mcp.deadline import Deadline

MAX_OPEN_SERVER_REQUESTS = 32
SENDING_ANSWERS = 4  # answers POSTed at once: a flood of refusals must not open a thousand connections
MAX_WAITING_ANSWERS = 1024
SAID_TIMES = 3
TOO_MANY_CODE = -32000
Send = Callable[[dict[str, Any]], Awaitable[None]]
Warn = Callable[[str], None]
NoticeSink = Callable[[str, str], None]


class ServerAsks:
    """One client's server requests under way; `answerer` and `notice` are read when needed (the config's)."""

    def __init__(self, answerer: Callable[[], Answerer | None], notice: Callable[[], NoticeSink | None]) -> None:
        self._answerer = answerer
        self._notice = notice
        self.waiting: set[asyncio.Future[None]] = set()  # asked or answered, not yet sent
        self._open: dict[str, asyncio.Future[None]] = {}  # asked, by JSON id
        self._sending = asyncio.Semaphore(SENDING_ANSWERS)
        self._refusing = False  # said once when MAX_OPEN_SERVER_REQUESTS is reached, again after it was left
        self._dropping = False  # said once when MAX_WAITING_ANSWERS is reached, again after the queue drained
        self._said: dict[str, int] = {}

    def ask(self, frame: Frame, carrier: str, send: Send, deadline: Deadline | None, warn: Warn) -> None:
        """Ask the caller about `frame` (carried by the client request `carrier`, "" for none) and send the answer."""
        answerer = self._answerer()
        assert answerer is not None
        wire_id = _wire_id(frame.id)
        if wire_id in self._open:
            self._tell("repeat", warn, f"the server's {frame.method} {_shown(frame.id)} repeats the id of one still "
                                       "open: not asked again and not answered (JSON-RPC ids must be unique among "
                                       "requests in flight)")
            return
        if len(self._open) >= MAX_OPEN_SERVER_REQUESTS:
            if not self._refusing:
                self._refusing = True
                warn(f"too many open requests from the server ({MAX_OPEN_SERVER_REQUESTS} wait for an answer): "
                     "the next are refused with an error until some are answered")
            refusal = ServerAnswer(error={"code": TOO_MANY_CODE, "message": (
                f"too many open requests from the server ({MAX_OPEN_SERVER_REQUESTS}); refused")})
            self.send_beside(send, refusal.message(frame.id), warn)
            return
        if deadline is not None:  # a person is answering: the server is silent because it waits for us
            deadline.hold()

        async def answer() -> None:
            reply = await answerer(frame, carrier)
            async with self._sending:
                with contextlib.suppress(McpError):
                    await send(reply.message(frame.id))

        task = asyncio.ensure_future(answer())
        self._open[wire_id] = task
        self.waiting.add(task)

        def done(finished: asyncio.Future[None]) -> None:
            # A callback, not a `finally`: a task cancelled before its first step never runs its body.
            self._sent(finished)
            if self._open.get(wire_id) is finished:
                del self._open[wire_id]
            if len(self._open) < MAX_OPEN_SERVER_REQUESTS // 2:
                self._refusing = False
            if deadline is not None:
                deadline.release()

        task.add_done_callback(done)

    def send_beside(self, send: Send, message: dict[str, Any], warn: Warn) -> None:
        """Send an answer that needs no one (a refusal, a ping's) beside the stream; past MAX_WAITING_ANSWERS
        waiting it is not sent (a flood must not queue a million, each a task holding its message)."""
        if len(self.waiting) >= MAX_WAITING_ANSWERS:
            if not self._dropping:
                self._dropping = True
                warn(f"the server's requests come faster than their answers go out ({MAX_WAITING_ANSWERS} answers "
                     "wait to be sent): later ones go unanswered until the queue drains")
            return

        async def answer() -> None:
            async with self._sending:
                with contextlib.suppress(McpError):
                    await send(message)

        task = asyncio.ensure_future(answer())
        self.waiting.add(task)
        task.add_done_callback(self._sent)

    def withdraw(self, frame: Frame, warn: Warn) -> None:
        """`notifications/cancelled` from the server: the request it names is withdrawn, nothing goes back."""
        request_id = frame.params.get("requestId")
        wire_id = _wire_id(request_id)
        task = self._open.get(wire_id)
        if task is None or task.done():
            self._tell("stray-cancel", warn, f"notifications/cancelled names request id {_shown(request_id)}, which "
                                             "is no open request from the server (never asked, or answered already); "
                                             "ignored")
            return
        # Soon, not now: a task asked in the same piece of the stream has not taken its first step yet, and one
        # cancelled before it would never record its question; after it, the dialog records its withdrawal.
        asyncio.get_running_loop().call_soon(task.cancel)
        del self._open[wire_id]  # withdrawn now: the server may reuse its id at once
        reason = frame.params.get("reason")
        said = f": {_shown(reason)}" if isinstance(reason, str) and reason else ""
        notice = self._notice()
        if notice is not None:
            notice("info", f"the server cancelled its request {_shown(request_id)}{said}; its dialog is closed and "
                           "nothing goes back")

    def _sent(self, task: asyncio.Future[None]) -> None:
        self.waiting.discard(task)
        if len(self.waiting) < MAX_WAITING_ANSWERS // 2:
            self._dropping = False

    def _tell(self, fault: str, warn: Warn, message: str) -> None:
        """Tell a fault the first SAID_TIMES times, then once that more are not told: a server repeating it 10,000
        times must not write 10,000 notices (or warnings on one reply)."""
        count = self._said[fault] = self._said.get(fault, 0) + 1
        if count <= SAID_TIMES:
            warn(message)
        elif count == SAID_TIMES + 1:
            warn(f"{message} (the server keeps doing this: not said again)")


def _wire_id(value: Any) -> str:
    """A JSON-RPC id as a key (any JSON value a server sends; 1 and "1" stay apart)."""
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
