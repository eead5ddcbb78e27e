"""The live lint: fed every wire event as it is recorded, it returns the findings that event shows.

It learns what it needs from the wire itself: a request's method, id, params and headers from the frame
going out, the HTTP status and content type from the transport event, the tools (with `outputSchema` and
`x-mcp-header`) from tools/list results, the filter a listen asked for from its params, a cancel from the
`notifications/cancelled` sent (stdio) or the stream closed (HTTP). So any recorder can wrap it:

    linter = Linter()
    transport = HttpTransport(url, client, record=linter.recorder(timeline_record, on_finding))

Pure: no I/O, and `observe` never raises (a bug of its own becomes a `lint.internal` finding).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.mcp.jsonrpc import Frame
from app.mcp.lint import checks
from app.mcp.lint.rules import MODERN, RULES, Finding
from app.mcp.task_extension import declares_tasks
from app.mcp.wire import Recorder, WireEvent

# What the lint looks at for a progress notification on its own open request's stream (see _plain_progress).
_PLAIN_PROGRESS_RULES = ("frame.malformed", "server.request", "frame.schema", "progress.after-final",
                         "progress.after-cancel")
KEEP_REQUESTS = 4096  # requests remembered for late frames (a long session must not grow the lint)
HTTP_CANCEL_NOTE = "closed the response stream to cancel"  # what HttpExchange.cancel records
FindingSink = Callable[[Finding], None]


@dataclass(slots=True)
class _Request:
    key: str | None
    id: Any
    method: str
    params: dict[str, Any]
    final: bool = False
    cancelled: bool = False
    content_type: str = ""
    frames_in: int = 0
    acked: bool = False
    ack_fault: bool = False
    filter: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def listen(self) -> bool:
        return self.method == "subscriptions/listen"


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


class Linter:
    def __init__(self, version: str = MODERN) -> None:
        # The revision the connection speaks: the rules of the other one are not looked at (see `settle`).
        self.version = version
        self.findings: list[Finding] = []
        self.checked: set[str] = set()  # rules that had something to look at (JUnit: one case each)
        self.tools: dict[str, dict[str, Any]] = {}
        self._seq = 0
        self._by_key: OrderedDict[str, _Request] = OrderedDict()
        self._by_id: OrderedDict[Any, _Request] = OrderedDict()
        self._by_token: OrderedDict[Any, _Request] = OrderedDict()
        self._notify_pending: set[str] = set()  # keys whose next HTTP status answers a notification POST

    def recorder(self, inner: Recorder, on_finding: FindingSink | None = None) -> Recorder:
        """A recorder that records as `inner` does, then lints the event (the console's entry point)."""

        def record(event: WireEvent) -> None:
            inner(event)
            for finding in self.observe(event):
                if on_finding is not None:
                    on_finding(finding)

        return record

    def settle(self, version: str, probe: str | None = None) -> None:
        """The connection turned out to speak `version` (Auto's probe fell back to 2025-11-25 initialize): from now
        on only its rules, and what the probe showed under the other revision's rules is no finding of this one
        (a 2025-11-25 server's -32601 to server/discover on HTTP 200 is its revision's way, not a fault). When it
        fell back, `probe` is the exchange of the server/discover it refused: a request of a revision the server
        does not speak, so however it refused it (an error with id null, as the 2025-11-25 SDKs answer a request
        outside a session) is no finding either."""
        self.version = version
        self.findings = [f for f in self.findings if RULES[f.rule].holds_for(version)
                         and (probe is None or f.exchange != probe)]
        self.checked = {rule for rule in self.checked if RULES[rule].holds_for(version)}

    def mark_cancelled(self, exchange: str) -> None:
        """The client gave up on this exchange (for callers whose transport records no cancel of its own)."""
        req = self._by_key.get(exchange)
        if req is not None:
            req.cancelled = True

    def observe(self, event: WireEvent, seq: int | None = None) -> list[Finding]:
        self._seq = seq if seq is not None else self._seq + 1
        found: list[Finding] = []
        try:
            if not self._plain_progress(event):
                self._observe(event, found)
        except Exception as exc:  # the last resort the design allows: a finding, never a dead reader
            found.append(self._finding("lint.internal", f"{type(exc).__name__}: {exc}", event.exchange, None))
        self.findings.extend(found)
        return found

    # --- dispatch ---------------------------------------------------------------------------

    def report(self, rule: str, message: str, exchange: str | None) -> Finding:
        """A finding of a check made elsewhere (the OAuth flow's, app/mcp/oauth/machine.py), kept with the rest."""
        finding = self._finding(rule, message, exchange, None)
        self.findings.append(finding)
        return finding

    def _observe(self, event: WireEvent, found: list[Finding]) -> None:
        if event.signal == "oauth":
            return  # an OAuth exchange, or a refused request's body: HTTP, no JSON-RPC (the flow reports on it)
        if event.direction == "out" and event.frame is not None:
            self._outgoing(event, event.frame, found)
        elif event.direction == "transport":
            self._transport(event, found)
        elif event.direction == "in":
            self._incoming(event, found)

    def _emit(self, found: list[Finding], problems: list[checks.Problem], req: _Request | None,
              event: WireEvent) -> None:
        for rule, message in problems:
            if not RULES[rule].holds_for(self.version):
                continue
            found.append(self._finding(rule, message, req.key if req else event.exchange,
                                       req.frames_in if req else None))

    def _finding(self, rule: str, message: str, exchange: str | None, frame_index: int | None) -> Finding:
        row = RULES[rule]
        self.checked.add(rule)
        return Finding(rule, row.severity, message, exchange, self._seq, frame_index, row.spec_url)

    def _check(self, *rules: str) -> None:
        self.checked.update(rule for rule in rules if RULES[rule].holds_for(self.version))

    # --- frames going out ---------------------------------------------------------------------

    def _outgoing(self, event: WireEvent, frame: Frame, found: list[Finding]) -> None:
        message = frame.message or {}
        if frame.kind != "request":
            if event.exchange is not None:
                self._notify_pending.add(event.exchange)
            if frame.method == "notifications/cancelled":
                target = self._lookup_id(frame.params.get("requestId"))
                if target is not None:
                    target.cancelled = True
            return
        req = _Request(event.exchange, frame.id, frame.method or "", frame.params)
        if req.listen:
            req.filter = frame.params.get("notifications")
        self._remember(req)
        token = (frame.params.get("_meta") or {}).get("progressToken") \
            if isinstance(frame.params.get("_meta"), dict) else None
        if _hashable(token):
            self._bounded_put(self._by_token, token, req)
        if event.headers is not None:  # HTTP: the headers sent must echo the body
            self._check("headers.echo")
            sent = {k.lower(): v for k, v in event.headers}
            self._emit(found, checks.header_problems(message, sent), req, event)

    def _remember(self, req: _Request) -> None:
        if req.key is not None:
            self._bounded_put(self._by_key, req.key, req)
        if _hashable(req.id):
            self._bounded_put(self._by_id, req.id, req)

    @staticmethod
    def _bounded_put(table: OrderedDict[Any, _Request], key: Any, req: _Request) -> None:
        table[key] = req
        table.move_to_end(key)
        while len(table) > KEEP_REQUESTS:
            table.popitem(last=False)

    def _lookup_id(self, request_id: Any) -> _Request | None:
        return self._by_id.get(request_id) if _hashable(request_id) else None

    # --- transport happenings -----------------------------------------------------------------

    def _transport(self, event: WireEvent, found: list[Finding]) -> None:
        key = event.exchange
        req = self._by_key.get(key) if key is not None else None
        note = event.note or ""
        if HTTP_CANCEL_NOTE in note and req is not None:
            req.cancelled = True
        if "SSE" in note:  # the parser's own limits (an over-long line or event)
            self._emit(found, [("sse.framing", note)], req, event)
        if event.http_status is None or event.headers is None:
            return
        status = event.http_status
        if key is not None and key in self._notify_pending:
            self._notify_pending.discard(key)
            self._check("http.notification-status")
            if status != 202 and status < 400:
                self._emit(found, [("http.notification-status", f"a notification POST was answered with HTTP "
                                                                f"{status}, not 202 Accepted")], req, event)
            return
        if req is None:
            return
        req.content_type = next((v.split(";")[0].strip().lower() for k, v in event.headers
                                 if k.lower() == "content-type"), "")
        self._check("http.request-accepted")
        if status == 202:
            self._emit(found, [("http.request-accepted", f"{req.method} (id {req.id!r}) was answered with 202 "
                                                         "Accepted, which is for notifications")], req, event)

    # --- frames coming in -----------------------------------------------------------------------

    def _incoming(self, event: WireEvent, found: list[Finding]) -> None:
        frame = event.frame
        if frame is None:
            return
        req = self._by_key.get(event.exchange) if event.exchange is not None else None
        if req is not None:
            req.frames_in += 1
        self._check("frame.malformed", "server.request")
        if frame.kind == "invalid":
            on_sse = req is not None and req.content_type == "text/event-stream"
            rule = "sse.framing" if on_sse else "frame.malformed"
            where = "an SSE event's data" if on_sse else "a frame"
            self._emit(found, [(rule, f"{where} is not one JSON-RPC message: {frame.problem}")], req, event)
        elif frame.kind == "request":
            self._emit(found, [("server.request", f"the server sent a request ({frame.method!r}, id "
                                                  f"{frame.id!r}); 2026-07-28 servers must not")], req, event)
        elif frame.kind in ("response", "error"):
            self._response(event, frame, req, found)
        elif frame.kind == "notification":
            self._notification(event, frame, req, found)

    def _plain_progress(self, event: WireEvent) -> bool:
        """A progress notification coming in on the stream of the request it is for, still open: what `_observe`
        would do (count the frame, mark the rules checked, find nothing), in a few steps. A flood is thousands of
        these a second; anything else (another owner by its token, a final or cancelled one, a listen stream,
        params not plainly valid) takes the full path."""
        frame = event.frame
        if event.direction != "in" or frame is None or frame.kind != "notification" or event.exchange is None:
            return False
        message = frame.message
        req = self._by_key.get(event.exchange)
        if req is None or message is None or message.get("method") != "notifications/progress" or req.listen:
            return False
        params: Any = message.get("params")
        if not checks.plainly_valid_progress(params):
            return False
        owner = self._by_token.get(params["progressToken"]) or req  # plainly valid: a str or int token
        if owner.listen or owner.final or owner.cancelled:
            return False
        req.frames_in += 1
        self.checked.update(_PLAIN_PROGRESS_RULES)
        return True

    def _response(self, event: WireEvent, frame: Frame, req: _Request | None, found: list[Finding]) -> None:
        self._check("response.unmatched-id", "response.after-cancel")
        if req is not None and req.id != frame.id:
            self._emit(found, [("response.unmatched-id", f"a response with id {frame.id!r} on the stream of "
                                                         f"request {req.id!r}")], req, event)
            return
        target = req or self._lookup_id(frame.id)
        if target is None:
            self._emit(found, [("response.unmatched-id", f"a response with id {frame.id!r} matches no request "
                                                         "in flight")], None, event)
            return
        if target.cancelled:
            self._emit(found, [("response.after-cancel", f"a response to {target.method} (id {target.id!r}) "
                                                         "after the client cancelled it")], target, event)
        elif target.final:
            self._emit(found, [("response.unmatched-id", f"a second response to {target.method} (id "
                                                         f"{target.id!r})")], target, event)
        target.final = True
        message = frame.message or {}
        if frame.kind == "error":
            self._check("http.error-status", "error.retired-code")
            self._emit(found, checks.error_problems(message.get("error"), event.http_status), target, event)
            return
        self._result(event, target, message.get("result"), found)

    def _result(self, event: WireEvent, req: _Request, result: Any, found: list[Finding]) -> None:
        self._check("frame.schema", "result.type-missing", "result.type-unknown")
        if req.method in checks.CACHEABLE:
            self._check("cache.fields")
        if req.method in checks.MRTR_METHODS:
            self._check("request-state.plaintext", "result.input-required-method")
        self._emit(found, checks.result_problems(req.method, result, self.version, declares_tasks(req.params)),
                   req, event)
        if event.http_status is not None:
            self._check("http.result-status")
            self._emit(found, checks.status_problems(req.method, event.http_status), req, event)
        if not isinstance(result, dict):
            return
        if req.method == "tools/list" and isinstance(result.get("tools"), list):
            self._check("tools.name", "tools.x-mcp-header")
            for tool in result["tools"]:
                self._emit(found, checks.tool_problems(tool), req, event)
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    self.tools[tool["name"]] = tool
        elif req.method == "tools/call":
            self._check("result.is-error")
            self._emit(found, checks.is_error_problems(result), req, event)
            tool = self.tools.get(str(req.params.get("name")))
            if tool is not None and isinstance(tool.get("outputSchema"), dict):
                self._check("tools.structured-content")
                self._emit(found, checks.structured_problems(tool, result), req, event)

    def _notification(self, event: WireEvent, frame: Frame, req: _Request | None, found: list[Finding]) -> None:
        method, params = frame.method or "", frame.params
        self._check("frame.schema")
        self._emit(found, checks.notification_problems(method, (frame.message or {}).get("params"),
                                                                self.version), req, event)
        if method == "notifications/progress":
            token = params.get("progressToken")
            owner = (self._by_token.get(token) if _hashable(token) else None) or req
            if owner is not None and not owner.listen:
                self._progress(event, owner, found)
        owner = req
        if owner is None:
            sub = checks.subscription_id(params)
            owner = self._lookup_id(sub) if sub is not ... else None
        if owner is not None and owner.listen:
            self._listen(event, frame, owner, found)

    def _progress(self, event: WireEvent, owner: _Request, found: list[Finding]) -> None:
        self._check("progress.after-final", "progress.after-cancel")
        if owner.final:
            self._emit(found, [("progress.after-final", f"progress for {owner.method} (id {owner.id!r}) after "
                                                        "its final response")], owner, event)
        elif owner.cancelled:
            self._emit(found, [("progress.after-cancel", f"progress for {owner.method} (id {owner.id!r}) after "
                                                         "the client cancelled it")], owner, event)

    def _listen(self, event: WireEvent, frame: Frame, owner: _Request, found: list[Finding]) -> None:
        method, params = frame.method or "", frame.params
        self._check("listen.ack-first", "listen.subscription-id", "listen.granted-superset",
                    "listen.request-scoped")
        if method in ("notifications/progress", "notifications/message"):
            self._emit(found, [("listen.request-scoped", f"{method} on the listen stream {owner.id!r}")],
                       owner, event)
            return
        if method == "notifications/cancelled":
            return  # the server ending the stream names it by requestId, not subscriptionId
        if method == "notifications/subscriptions/acknowledged" and not owner.acked:
            owner.acked = True
            self._emit(found, checks.granted_problems(owner.filter, params.get("notifications")), owner, event)
        elif not owner.acked and not owner.ack_fault:
            owner.ack_fault = True  # said once per stream: every later frame would repeat it
            self._emit(found, [("listen.ack-first", f"{method} came on listen stream {owner.id!r} before "
                                                    "notifications/subscriptions/acknowledged")], owner, event)
        sub = checks.subscription_id(params)
        if sub is ... or sub != owner.id or isinstance(sub, bool):
            shown = "no subscriptionId" if sub is ... else f"subscriptionId {sub!r}"
            self._emit(found, [("listen.subscription-id", f"{method} on listen stream {owner.id!r} carries "
                                                          f"{shown}")], owner, event)
