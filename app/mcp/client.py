"""The 2026-07-28 client: stamps _meta and headers, allocates ids, matches answers, times them.

`request()` never raises an McpError: every outcome, good or bad, comes back as a Reply, so the
caller can record it. Only programming errors escape.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.mcp.asking import ServerAsks
from app.mcp.deadline import CONSOLE_SETTINGS, Deadline
from app.mcp.era import MODERN_VERSION, Answerer, Era, ModernEra
from app.mcp.errors import (
    AuthChallenged,
    McpError,
    ProtocolViolation,
    RequestCancelled,
    RequestTimedOut,
    RpcError,
    StreamTooLarge,
)
from app.mcp.headers import param_headers
from app.mcp.jsonrpc import Frame, request
from app.mcp.task_extension import declares_tasks
from app.mcp.transport import Exchange, Transport

PROTOCOL_VERSION = MODERN_VERSION
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
KNOWN_RESULT_TYPES = frozenset({"complete", "input_required"})

NotificationSink = Callable[[Frame], None]
NoticeSink = Callable[[str, str], None]  # (level, message): what the client has to say about the session
KEEP_NOTIFICATIONS = 50
AUTH_TRIES = 3  # authorizations per request: a 403 forever is asked at most this often (conformance: <= 3)
KEEP_NOTIFICATION_BYTES = 8 * 1024  # a bigger one is kept as a stub: 50 × 1 MB logs must not ride on every reply


@dataclass(slots=True)
class Reply:
    """Everything known about one request once it is over."""

    key: str
    id: int | str
    method: str
    params: dict[str, Any]
    sent: float
    first_byte: float | None = None
    finished: float | None = None
    result: dict[str, Any] | None = None
    error: McpError | None = None
    # The last notifications only (the wire record keeps them all): a burst of 20,000 progress
    # updates must not stay in memory with every finished reply.
    notifications: deque[Frame] = field(default_factory=lambda: deque(maxlen=KEEP_NOTIFICATIONS))
    notification_count: int = 0
    warnings: list[str] = field(default_factory=list)
    # Responses whose id is not ours: flagged, never taken as the answer (the stream is read on).
    stray_ids: list[Any] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and self.result is not None

    @property
    def result_type(self) -> str | None:
        if self.result is None:
            return None
        value = self.result.get("resultType", "complete")  # absent means complete (older servers)
        return value if isinstance(value, str) else None

    @property
    def duration_ms(self) -> float | None:
        return None if self.finished is None else (self.finished - self.sent) * 1000


@dataclass(slots=True)
class ClientConfig:
    client_info: dict[str, Any]
    capabilities: Callable[[], dict[str, Any]]
    # What differs between protocol revisions (meta, headers, server requests); the 2026-07-28 one by default.
    era: Era = field(default_factory=ModernEra)
    # Who answers a request from the server when the era says to ask (a dialog in the console, a file in a script).
    answerer: Answerer | None = None
    # Notifications that belong to no request (list_changed, resources/updated, session log lines).
    on_session_notification: NotificationSink | None = None
    # What the client notices outside any request (a server request it refuses, a cancel naming nothing).
    on_notice: NoticeSink | None = None
    idle_timeout_s: float = 60.0  # reset by every frame of the request
    max_s: float = 3600.0         # the overall maximum, whatever the frames
    deadlines_named: tuple[str, str] = CONSOLE_SETTINGS  # what sets the two, as a timed-out request's error says
    key_prefix: str = ""  # keeps exchange keys unique across reconnects of one recorded session
    first_id: int = 1     # likewise for JSON-RPC ids: a session's ids never repeat
    first_key: int = 1    # a client replacing another mid-connect (a stdio restart) goes on with its keys
    # Who gets a token when the server refuses a request with 401 or 403 insufficient_scope: True when there is a
    # new one to send the request again with (app/mcp/oauth/driver.py). None: the refusal is the answer.
    authorizer: Callable[[AuthChallenged], Awaitable[bool]] | None = None


class Stop:
    """A request's "stop now" (the user's cancel): set once, it interrupts the request's own task.

    A callback, not an asyncio.Event waited on by a task: a call used to cost three extra tasks (the work, a
    wait on this, a wait on the deadline) and an asyncio.wait; now the request runs in its caller's task.
    """

    __slots__ = ("is_set", "on_set")

    def __init__(self) -> None:
        self.is_set = False
        self.on_set: Callable[[], None] | None = None

    def set(self) -> None:
        if not self.is_set:
            self.is_set = True
            if self.on_set is not None:
                self.on_set()


def _kept(frame: Frame) -> Frame:
    """The frame as a finished reply keeps it: small ones whole, big ones as a stub saying their size."""
    if len(frame.raw) <= KEEP_NOTIFICATION_BYTES:
        return frame
    stub = {"method": frame.method, "params": {"note": f"{len(frame.raw)} bytes, not kept with the reply"}}
    return Frame(raw="", kind=frame.kind, message=stub)


class McpClient:
    def __init__(self, transport: Transport, config: ClientConfig) -> None:
        self.transport = transport
        self.config = config
        self._ids = itertools.count(config.first_id)
        self.next_key_number = config.first_key
        self.tool_headers: dict[str, dict[str, str]] = {}
        self.invalid_tools: dict[str, str] = {}
        self.task_support: dict[str, str] = {}  # tool name → its 2025-11-25 execution.taskSupport, when it says
        self._inflight: dict[str, Exchange] = {}
        self._cancelled: dict[str, str] = {}
        self._stops: dict[str, Stop] = {}
        self._deadlines: dict[str, Deadline] = {}
        # Requests from the server being asked about or answered (2025-11-25), bounded (see app/mcp/asking.py).
        self.asks = ServerAsks(lambda: config.answerer, lambda: config.on_notice)
        # Server messages outside any request (stdio's unsolicited lines, HTTP's standalone GET stream) come here.
        transport.on_server_message = self._session_message

    def new_key(self) -> str:
        key = self.peek_key()
        self.next_key_number += 1
        return key

    def peek_key(self) -> str:
        """The key new_key() will give next."""
        return f"{self.config.key_prefix}x{self.next_key_number}"

    def meta(self, progress_token: Any = None, log_level: str | None = None) -> dict[str, Any]:
        return self.config.era.meta(self.config.client_info, self.config.capabilities(), progress_token, log_level)

    def build(self, method: str, params: dict[str, Any] | None, *, progress_token: Any = None,
              log_level: str | None = None, request_id: int | str | None = None) -> dict[str, Any]:
        """The exact message to send: params as given, with our _meta merged over any caller _meta."""
        body = dict(params or {})
        caller_meta = body.get("_meta")
        meta = {**(caller_meta if isinstance(caller_meta, dict) else {}), **self.meta(progress_token, log_level)}
        if meta or "_meta" in body:  # a legacy request with nothing to stamp goes without an empty _meta
            body["_meta"] = meta
        return request(request_id if request_id is not None else next(self._ids), method, body)

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      progress_token: Any = None, log_level: str | None = None,
                      on_notification: NotificationSink | None = None, idle_timeout_s: float | None = None,
                      max_s: float | None = None, key: str | None = None, message: dict[str, Any] | None = None,
                      stream: bool = False, on_retry: Callable[[Reply, str, Any], None] | None = None) -> Reply:
        """Send one request and wait for its final response (or failure), recording nothing itself.

        The deadline is an idle timer that every frame of the request resets, under an overall
        maximum (see `Deadline`). `stream=True` is for subscriptions/listen: it has no deadline,
        since its answer is a stream that stays open until someone closes it.
        """
        message = message or self.build(method, params, progress_token=progress_token, log_level=log_level)
        reply = await self._request_once(method, message, key, on_notification, idle_timeout_s, max_s, stream)
        authorizer = self.config.authorizer
        tries = 0
        # A 401 or a 403 asking for more scope: the authorizer (app/mcp/oauth/driver.py) refreshes, authorizes or
        # steps up, and the request goes again, as a new request with the new token (bounded: a server that refuses
        # every token must not loop).
        while isinstance(reply.error, AuthChallenged) and authorizer is not None and tries < AUTH_TRIES:
            tries += 1
            if not await authorizer(reply.error):
                break
            message = {**message, "id": next(self._ids)}
            retry_key = self.new_key()
            if on_retry is not None:  # the caller records the refused try as ended and the new one as started
                on_retry(reply, retry_key, message["id"])
            again = await self._request_once(method, message, retry_key, on_notification, idle_timeout_s, max_s,
                                             stream)
            again.warnings.insert(0, f"sent again after authorizing (the first try, {reply.key}, was refused: "
                                     f"HTTP {reply.error.challenge.status})")
            reply = again
        return reply

    async def _request_once(self, method: str, message: dict[str, Any], key: str | None,
                            on_notification: NotificationSink | None, idle_timeout_s: float | None,
                            max_s: float | None, stream: bool) -> Reply:
        key = key or self.new_key()
        sent_params = message.get("params", {})
        reply = Reply(key=key, id=message["id"], method=method, params=sent_params, sent=time.monotonic())
        headers = self.config.era.headers(method, sent_params, self.tool_headers.get(sent_params.get("name", "")))
        stop = self._stops[key] = Stop()
        deadline = None if stream else (self._deadlines.get(key) or self.arm(key, idle_timeout_s, max_s))
        try:
            await self._until_stopped(stop, self._exchange(message, headers, key, reply, on_notification),
                                      deadline)
        except McpError as exc:
            reply.error = exc
        finally:
            self._stops.pop(key, None)
            self._deadlines.pop(key, None)
            if deadline is not None:
                deadline.stop()
        if deadline is not None and deadline.expired.is_set() and reply.result is None and reply.error is None:
            reply.error = RequestTimedOut(deadline.message())
        reply.finished = time.monotonic()
        if key in self._cancelled:
            reason = self._cancelled.pop(key)
            if reply.result is None:
                reply.error = RequestCancelled(reason)
        self._check_result(reply)
        return reply

    async def _exchange(self, message: dict[str, Any], headers: dict[str, str], key: str, reply: Reply,
                        on_notification: NotificationSink | None) -> None:
        exchange = await self.transport.open(message, headers, key)
        self._inflight[key] = exchange
        try:
            await self._collect(exchange, reply, on_notification)
        except asyncio.CancelledError:
            if key not in self._cancelled:
                # Our deadline (or shutdown), not the user: tell the server to stop too, as the era says
                # (stdio: notifications/cancelled; HTTP: close the stream, after the notification on 2025-11-25).
                with contextlib.suppress(Exception):
                    await asyncio.shield(exchange.cancel("the client's deadline passed",
                                                         self.config.era.cancel_by_notification))
            raise
        except StreamTooLarge:
            # The console stopped reading: it gives the request up. Where closing the stream does not say so
            # (2025-11-25 HTTP), the era's cancel tells the server; a transport that already said it says no more.
            if self.config.era.cancel_by_notification:
                with contextlib.suppress(McpError):
                    await exchange.cancel("the response stream passed the console's max_stream_bytes", True)
            raise
        finally:
            self._inflight.pop(key, None)
            await exchange.aclose()

    async def _until_stopped(self, stop: Stop, work: Coroutine[Any, Any, None], deadline: Deadline | None) -> None:
        """Run the exchange until it ends, the user cancels, or the deadline passes.

        A cancel may come before the response headers (the request is still being sent) or after
        (a cancelled stdio request never gets a response, the server drops it); either way the
        cancel itself ends the wait rather than the deadline.

        The work runs in this task; a stop or the deadline cancels the task (as `asyncio.timeout` does) and the
        cancellation is taken back here with `uncancel`, so a cancel from outside (shutdown) still propagates.
        """
        task = asyncio.current_task()
        assert task is not None
        interrupted = False
        running = True

        def interrupt() -> None:
            nonlocal interrupted
            if running and not interrupted:
                interrupted = True
                task.cancel()

        if stop.is_set or (deadline is not None and deadline.expired.is_set()):
            work.close()
            return
        stop.on_set = interrupt
        if deadline is not None:
            deadline.on_expire = interrupt
        try:
            await work
        except asyncio.CancelledError:
            if not interrupted:
                raise  # not ours: shutdown, or the caller gave up
            interrupted = False
            if task.uncancel() > 0:
                raise  # ours, and another's too: that one goes on
        finally:
            running = False
            stop.on_set = None
            if deadline is not None:
                deadline.on_expire = None
            if interrupted:  # the work swallowed our cancel (or turned it into an error): take it back all the same
                task.uncancel()

    async def _collect(self, exchange: Exchange, reply: Reply, on_notification: NotificationSink | None) -> None:
        deadline = self._deadlines.get(reply.key)
        async for frame in exchange.frames():
            if reply.first_byte is None:
                reply.first_byte = time.monotonic()
            if deadline is not None:
                deadline.touch()
            if frame.kind == "error" and frame.id is None:
                # JSON-RPC sends id null when the server could not tell which request failed (server-everything's
                # HTTP 400 "Server not initialized"). The transport routed it to this exchange (an HTTP answer to
                # our POST; stdio never routes one), so it is this request's answer, said plainly.
                reply.warnings.append("the error carried id null (the server did not say which request failed); "
                                      "taken as this request's answer")
                self._take_final(frame, reply)
                return
            if frame.kind in ("response", "error"):
                if frame.id != reply.id:
                    # Not our answer: taking it would show a green "complete" for a request the
                    # server never answered. Flag it and keep reading for the right id.
                    reply.stray_ids.append(frame.id)
                    reply.warnings.append(f"response id {frame.id!r} does not match request id {reply.id!r}; "
                                          "not taken as the answer")
                    continue
                self._take_final(frame, reply)
                return
            if frame.kind == "invalid":
                reply.warnings.append(f"malformed frame: {frame.problem}")
                continue
            if frame.kind == "request":
                await self._server_request(exchange, frame, reply)
            elif frame.method == "notifications/cancelled" and self.config.era.server_asks:
                self.asks.withdraw(frame, reply.warnings.append)
            reply.notifications.append(_kept(frame))
            reply.notification_count += 1
            if on_notification is not None:
                on_notification(frame)
        if reply.key not in self._cancelled:
            if reply.stray_ids:
                raise ProtocolViolation(f"no answer: the server's response carried id {reply.stray_ids[0]!r}, "
                                        f"not {reply.id!r}")
            raise ProtocolViolation("the stream ended without a final response")

    async def _server_request(self, exchange: Exchange, frame: Frame, reply: Reply) -> None:
        """A request from the server on this request's stream: the era decides; an answer goes back on the exchange.

        Asking the caller may take a person minutes, so it runs beside the stream, which keeps being read.
        """
        verdict = self.config.era.on_server_request(frame)
        if verdict.warning:
            reply.warnings.append(verdict.warning)
        if verdict.ask_caller and self.config.answerer is not None:
            self.asks.ask(frame, reply.key, exchange.answer, self._deadlines.get(reply.key), reply.warnings.append)
        elif verdict.refusal is not None:  # not asked, or nobody to ask: the era's answer goes back at once
            with contextlib.suppress(McpError):
                await exchange.answer(verdict.refusal.message(frame.id))

    def _session_message(self, frame: Frame) -> None:
        """A server message outside any request: notifications go to the session's sink; a request (a ping, or
        a 2025-11-25 server asking on its GET stream) gets the era's verdict, answered as its own message."""
        if frame.kind == "notification":
            if frame.method == "notifications/cancelled" and self.config.era.server_asks:
                self.asks.withdraw(frame, self._warn_session)
            elif self.config.on_session_notification is not None:
                self.config.on_session_notification(frame)
            return
        if frame.kind != "request":
            return
        verdict = self.config.era.on_server_request(frame)
        version = {k: v for k, v in self.config.era.headers("ping", {}, None).items()
                   if k.lower() == "mcp-protocol-version"}

        async def send(message: dict[str, Any]) -> None:
            # No client request carried it (a stdio line, the GET stream): it nests under no entry.
            await self.transport.notify(message, version, self.new_key())

        if verdict.ask_caller and self.config.answerer is not None:
            self.asks.ask(frame, "", send, None, self._warn_session)
        elif verdict.refusal is not None:
            self.asks.send_beside(send, verdict.refusal.message(frame.id), self._warn_session)

    def _warn_session(self, message: str) -> None:
        if self.config.on_notice is not None:
            self.config.on_notice("warning", message)

    def _take_final(self, frame: Frame, reply: Reply) -> None:
        assert frame.message is not None
        if frame.kind == "error":
            err = frame.message["error"]
            reply.error = RpcError(err.get("code", 0), str(err.get("message", "")), err.get("data"),
                                   frame.http_status)
            return
        result = frame.message.get("result")
        if not isinstance(result, dict):
            reply.error = ProtocolViolation(f"result is {type(result).__name__}, not an object")
            return
        reply.result = result

    def _check_result(self, reply: Reply) -> None:
        if reply.result is None or not self.config.era.requires_result_type:
            return
        rtype = reply.result.get("resultType")
        if rtype is None:
            reply.warnings.append('result has no "resultType" (required in 2026-07-28; treated as "complete")')
        elif rtype == "task" and reply.method == "tools/call" and declares_tasks(reply.params):
            return  # the tasks extension, declared by the request: its caller follows the task (app/mcp/task.py)
        elif rtype not in KNOWN_RESULT_TYPES:
            reply.warnings.append(f'unknown resultType {rtype!r}: treated as invalid')
        elif rtype == "input_required" and reply.method not in MRTR_METHODS:
            reply.warnings.append(f"input_required is not allowed on {reply.method}")

    async def cancel(self, key: str, reason: str = "cancelled by the user") -> bool:
        """Cancel a request in flight; False when there is none under that key."""
        stop = self._stops.get(key)
        if stop is None:
            return False
        self._cancelled[key] = reason
        exchange = self._inflight.get(key)
        try:
            if exchange is not None:
                await exchange.cancel(reason, self.config.era.cancel_by_notification)
        finally:
            stop.set()  # not yet answered at all: stopping the send is the cancel (HTTP drops the connection)
        return True

    def arm(self, key: str, idle_timeout_s: float | None = None, max_s: float | None = None) -> Deadline:
        """Start a request's deadline before it is sent, so its first rendering can already show it.

        request() with the same key then uses this one.
        """
        deadline = self._deadlines[key] = Deadline(idle_timeout_s or self.config.idle_timeout_s,
                                                   max_s or self.config.max_s, self.config.deadlines_named)
        return deadline

    def deadline(self, key: str) -> Deadline | None:
        """The deadline of a request in flight (None for a listen stream or one that is over)."""
        return self._deadlines.get(key)

    def wait_longer(self, key: str) -> Deadline | None:
        """Push the idle deadline of a request in flight out by one idle period; the maximum stays."""
        deadline = self._deadlines.get(key)
        if deadline is not None:
            deadline.extend()
        return deadline

    def inflight(self) -> list[str]:
        return list(self._inflight)

    def learn_tools(self, tools: list[dict[str, Any]]) -> None:
        """Remember x-mcp-header mappings, which tools break the header rules, and (2025-11-25 tasks) each tool's
        `execution.taskSupport`."""
        for tool in tools:
            name = tool.get("name")
            if not isinstance(name, str):
                continue
            execution = tool.get("execution")
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            if isinstance(support, str):
                self.task_support[name] = support
            mapping, problem = param_headers(tool)
            if problem:
                self.invalid_tools[name] = problem
            else:
                self.invalid_tools.pop(name, None)
                self.tool_headers[name] = mapping

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> str:
        """Send a notification (stamped like a request, with no id); returns its exchange key."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params:
            message["params"] = params
        key = self.new_key()
        await self.transport.notify(message, self.config.era.headers(method, params or {}, None), key)
        return key

    async def close(self) -> None:
        await self.transport.close()


def reply_json(reply: Reply) -> dict[str, Any]:
    """A reply as JSON: what the JSON twins show, what an operation's final event records, and (its request's
    identity, result or error and warnings) what `mcp-console call` prints."""
    return {
        "key": reply.key,
        "id": reply.id,
        "method": reply.method,
        "params": reply.params,
        "ok": reply.ok,
        "result": reply.result,
        "result_type": reply.result_type,
        "error": _error_json(reply),
        "duration_ms": reply.duration_ms,
        "warnings": reply.warnings,
        "notification_count": reply.notification_count,
        "notifications": [f.message for f in reply.notifications],  # the last ones; the wire has all
    }


def _error_json(reply: Reply) -> dict[str, Any] | None:
    err = reply.error
    if err is None:
        return None
    data: dict[str, Any] = {"type": type(err).__name__, "message": str(err)}
    for attr in ("code", "data", "http_status", "name"):
        if hasattr(err, attr):
            data[attr] = getattr(err, attr)
    return data
