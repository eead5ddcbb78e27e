"""MCP Apps in a session: each tool call of a tool with a view gets an app, and every message of its bridge is an
entry on the timeline beside the MCP exchanges it leads to.

The view runs in the browser, in a sandbox proxy on another origin (app/web/app_routes.py); the tab only relays:
each postMessage the view sends comes here (`from_view`), is recorded, goes through the bridge machine
(app/mcp/app_host.py), and what the machine answers is recorded and handed back to the tab to post. What comes
later (the call's result, a forwarded request's reply, the person's answer to a link) waits in the frame's
outbox for the tab to collect (`collect`).

Each tab that shows an app runs its own view, so the machine is per frame (a tab's instance); what anyone may see
of an app (its view's facts, links offered, what it said) is folded from `app_changed` events. A link holder who
may not send anything gets a replay: the view is fed the recorded call and may not call tools (`replay`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app.console.events import AppChanged, ExchangeFinished, ExchangeStarted, FindingRecorded, Wire
from app.console.operations import Operation
from app.console.own_host import REFUSED, leads_to_host
from app.mcp.app_host import Action, AppHost, Apply, Finding, Forward, OfferLink, Post, Said
from app.mcp.apps import View, read_view, ui_resource_uri
from app.mcp.client import reply_json
from app.mcp.lint.rules import RULES

Json = dict[str, Any]
MAX_FRAMES = 8          # tabs' instances kept per app and maker (the owner, each link); the maker's oldest goes first
MAX_SAID = 10           # ui/message, model context and log lines kept per app
MAX_LINKS = 20
MAX_OFFERED = 5         # ui/open-link offers waiting for the person at once, per app; more are refused
MAX_OUTBOX = 200        # messages waiting for a tab to collect, per frame; past it the oldest goes
SAID_CHARS = 1000       # what the view said is kept as JSON text up to this (the bridge entry has it whole): every
                        # change records the app whole, so this bounds what each of a flood of messages costs
TICKET_S = 60.0         # a view's one-time address is good for this long (the proxy loads it at once)
CONTEXT_KEYS = ("theme", "displayMode", "locale", "containerDimensions", "platform", "deviceCapabilities", "timeZone",
                "userAgent", "safeAreaInsets", "styles")
MAX_VIEWS = 8           # views kept read in memory (each up to apps.MAX_HTML_BYTES); others are read from the fold
COLLECT_WAIT_S = 20.0   # how long a tab's collect waits for something to post before answering nothing
LINK_WAIT_S = 600.0     # a ui/open-link offer waits this long for the person


@dataclass
class Frame:
    """One tab's instance of an app: its bridge machine, what waits to be posted, and its requests in flight."""

    id: str
    host: AppHost
    replay: bool
    who: str = "owner"      # who made it ("owner", "link:<id>"): only they may drive it
    reveal: bool = True     # whether they see the target's secret values (else what goes to the view is masked)
    outbox: asyncio.Queue[Json] = field(default_factory=lambda: asyncio.Queue(MAX_OUTBOX))
    open: dict[str, str] = field(default_factory=dict)  # JSON-RPC id (as text) → the exchange key it opened
    seen: float = field(default_factory=time.monotonic)
    serial: int = 0


_TICKETS: dict[str, tuple[str, str, bool, float]] = {}  # ticket → (session id, app id, reveal, good until)


def issue_ticket(session_id: str, app: str, reveal: bool) -> str:
    """A one-time, short-lived address for a view (the sandbox serves it once: app/web/app_routes.py)."""
    now = time.monotonic()
    for old in [t for t, v in _TICKETS.items() if v[3] < now]:
        del _TICKETS[old]
    ticket = secrets.token_urlsafe(24)
    _TICKETS[ticket] = (session_id, app, reveal, now + TICKET_S)
    return ticket


def take_ticket(ticket: str) -> tuple[str, str, bool] | None:
    found = _TICKETS.pop(ticket, None)
    if found is None or found[3] < time.monotonic():
        return None
    return found[0], found[1], found[2]


class SessionApps:
    """The apps of one session. `session` is the ConsoleSession (its timeline, operations, lists, background)."""

    def __init__(self, session: Any) -> None:
        self.s = session
        self.frames: dict[str, dict[str, Frame]] = {}  # app id → frame id → frame
        self.views: dict[str, View] = {}              # app id → its view, read once
        self._reading: dict[str, asyncio.Future[View]] = {}
        self._links: dict[tuple[str, str], tuple[Frame, Any]] = {}  # (app, link id) → the frame and request id
        self._violations: set[tuple[str, str, str]] = set()  # (app, blocked, directive) found once: each tab's run
        # of a view, and each reload, repeats the same refusal
        session.operations.on_ended.append(self._op_ended)

    # --- apps ---------------------------------------------------------------------------------------------------

    def tool_of(self, name: Any) -> Json | None:
        tools = self.s.lists.get("tools", [])
        tool: Json | None = next((t for t in tools if isinstance(t, dict) and t.get("name") == name), None)
        return tool

    def opened(self, op: Operation) -> None:
        """A person called a tool: when it has a view, the call gets an app (a view's own calls do not)."""
        if op.method != "tools/call" or op.via is not None:
            return
        tool = self.tool_of(op.params.get("name"))
        uri = ui_resource_uri(tool)
        if tool is None or uri is None:
            return
        message = "" if uri.startswith("ui://") else f"its resourceUri {uri!r} is not a ui:// URI"
        self._change(op.id, tool=str(op.params.get("name")), uri=uri, status="opened", message=message)

    def shown(self, app: str) -> Json | None:
        shown: Json | None = self.s.state.apps.get(app)
        return shown

    def _change(self, app: str, **changes: Any) -> None:
        current = dict(self.s.state.apps.get(app) or {"app": app})
        current.pop("kind", None)
        current.update(changes)
        current["n"] = int(current.get("n") or 0) + 1
        self.s.timeline.append(AppChanged(**current))

    # --- the view's resource --------------------------------------------------------------------------------------

    async def view(self, app: str, replay: bool) -> View | str:
        """The app's view, read with resources/read the first time (an entry like any read); a replay (a link holder,
        an imported session) takes the recorded read. A text says why there is none."""
        if app in self.views:
            return self.views[app]
        shown = self.shown(app)
        if shown is None:
            return "no such app in this session"
        uri = str(shown.get("uri"))
        listed = next((r for r in self.s.lists.get("resources", []) if isinstance(r, dict) and r.get("uri") == uri),
                      None)
        read_op = shown.get("read_op")
        record = self.s.state.operations.get(read_op) if read_op else None
        if record is not None and record.final is not None and record.final.result is not None:
            view = read_view(uri, record.final.result, listed)
            self._keep_view(app, view)
            return view
        if replay:
            return "the view was never read in this session: there is nothing recorded to show"
        pending = self._reading.get(app)
        if pending is None:
            pending = self._reading[app] = asyncio.get_running_loop().create_future()
            self.s.background.spawn(f"app-read-{app}", self._read(app, uri, listed, pending))
        return await asyncio.shield(pending)

    async def _read(self, app: str, uri: str, listed: Any, done: asyncio.Future[View]) -> None:
        op = self.s.operations.create("resources/read", {"uri": uri}, via=f"op-{app}")
        self._change(app, status="reading", read_op=op.id, message="")
        try:
            await self.s.operations.run(op)
            result = op.final.result if op.final is not None else None
            if result is None:
                error = _error_of(op)
                why = op.message or (str(error.get("message")) if error else "the read ended without a result")
                self._change(app, status="failed", message=f"resources/read of the view failed: {why}")
                done.set_result(read_view(uri, None, listed))
                return
            view = read_view(uri, result, listed)
            self._keep_view(app, view)
            self._resource_findings(app, view, op.key)
            status = "ready" if view.html is not None else "failed"
            self._change(app, status=status, view=view.shown,
                         message="" if view.html is not None else "; ".join(view.problems))
            done.set_result(view)
        except Exception as exc:  # the frame is told; the session goes on
            self._change(app, status="failed", message=f"resources/read of the view failed: {exc}")
            done.set_result(read_view(uri, None, listed))
        finally:
            self._reading.pop(app, None)

    def _keep_view(self, app: str, view: View) -> None:
        self.views.pop(app, None)
        self.views[app] = view
        while len(self.views) > MAX_VIEWS:
            del self.views[next(iter(self.views))]

    def _resource_findings(self, app: str, view: View, key: str) -> None:
        for problem in view.problems:
            rule = "apps.csp-domain" if problem.startswith(tuple(
                ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains", "csp", "permissions"))) \
                or "(not a CSP key" in problem else "apps.resource-content"
            self._finding(rule, f"{view.uri}: {problem}", key)

    def _finding(self, rule: str, message: str, key: str | None) -> None:
        spec = RULES[rule]
        self.s.timeline.append(FindingRecorded(rule=rule, severity=spec.severity, message=message[:500],
                                               exchange=key, spec_url=spec.spec_url))

    # --- frames -------------------------------------------------------------------------------------------------

    def frame(self, app: str, frame_id: str, replay: bool, who: str = "owner", reveal: bool = True) -> Frame | None:
        """The tab's instance `frame_id` of an app, made at its first step; None when there is no such app, or the
        frame is someone else's (a frame is driven only by whoever made it: a link holder who learned an owner's
        frame id must not speak for the owner's view)."""
        shown = self.shown(app)
        if shown is None:
            return None
        frames = self.frames.setdefault(app, {})
        frame = frames.get(frame_id)
        if frame is not None and (frame.who != who or frame.replay != replay):
            return None
        if frame is None:
            tool = self.tool_of(shown.get("tool")) or {"name": shown.get("tool")}
            lookup: Callable[[str], Json | None] = self.tool_of
            host = AppHost(tool=tool, tools=lookup, context=dict(shown.get("context") or {}),
                           display_mode=str(shown.get("display_mode") or "inline"))
            frame = frames[frame_id] = Frame(frame_id, host, replay, who, reveal)
            # Each maker has its own budget: a link holder's frames never push the owner's live view out.
            kind = [k for k, f in frames.items() if f.who == who]
            while len(kind) > MAX_FRAMES:
                oldest = min(kind, key=lambda k: frames[k].seen)
                kind.remove(oldest)
                del frames[oldest]
            record = self.s.state.operations.get(app)
            if record is not None and record.rounds:
                host.tool_call_id = record.rounds[0].get("request_id")
            if record is not None:
                args = record.params.get("arguments") if isinstance(record.params, dict) else None
                host.call_started(args if isinstance(args, dict) else {})
                if record.status not in ("running", "awaiting_input"):
                    host.call_ended(*self._outcome(record))
        frame.seen = time.monotonic()
        return frame

    @staticmethod
    def _outcome(record: Any) -> tuple[Json | None, Json | None]:
        final = record.final
        if final is None or record.status == "cancelled":
            return None, None
        result = final.result
        error = final.data.get("error") if isinstance(final.data.get("error"), dict) else None
        return (result, None) if result is not None else (None, error or {"message": record.message or "failed"})

    def _op_ended(self, op: Operation) -> None:
        """The tool call an app belongs to ended: each of its frames is owed the outcome."""
        frames = self.frames.get(op.id)
        if not frames:
            return
        result = op.final.result if op.final is not None and op.final.error is None else None
        error = _error_of(op)
        if op.status == "cancelled":
            result = error = None
        elif result is None and error is None:
            error = {"message": op.message or "the call ended without a result"}
        for frame in frames.values():
            self._act(op.id, frame, frame.host.call_ended(result, error), None)

    # --- the bridge -------------------------------------------------------------------------------------------

    async def sandbox_ready(self, app: str, frame: Frame, context: Any = None) -> Json:
        """The proxy is up: the view's HTML and policy go to it (`ui/notifications/sandbox-resource-ready`).
        `context`: the host context the tab shows it in, which ui/initialize's hostContext then carries."""
        if isinstance(context, dict) and not frame.host.initialize_asked:
            frame.host.context.update({k: v for k, v in context.items() if k in CONTEXT_KEYS and k != "displayMode"})
        ready = {"jsonrpc": "2.0", "method": "ui/notifications/sandbox-proxy-ready", "params": {}}
        self._notification(app, frame, "in", ready)
        view = await self.view(app, frame.replay)
        if isinstance(view, str) or view.html is None:
            why = view if isinstance(view, str) else "; ".join(view.problems) or "the view has no HTML"
            return {"post": [], "problem": why}
        frame.host.sandbox = {"csp": view.csp.granted, "permissions": view.permissions}
        # Not the HTML itself (which a view could write to slip out of a <meta> policy): a one-time address on the
        # sandbox origin where the console serves it with its policy as an HTTP header (app/web/app_routes.py).
        ticket = issue_ticket(self.s.id, app, frame.reveal)
        params: Json = {"src": f"/sandbox/view/{ticket}", "csp": view.csp.policy, "permissions": view.permissions,
                        "allow": view.allow, "sandbox": "allow-scripts allow-forms",
                        "bytes": len(view.html.encode())}
        message = {"jsonrpc": "2.0", "method": "ui/notifications/sandbox-resource-ready", "params": params}
        self._notification(app, frame, "out", {**message, "params": {**params, "src": "/sandbox/view/…"}})
        return {"post": [message], "frame": {"border": view.prefers_border}}

    def view_document(self, app: str, reveal: bool) -> View | None:
        """The view as the sandbox serves it: its HTML masked for whoever may not see the target's secret values."""
        view = self.views.get(app)
        if view is None or view.html is None:
            return None
        if not reveal and self.s.timeline.scrubber is not None:
            return replace(view, html=self.s.timeline.scrubber.text(view.html))
        return view

    def from_view(self, app: str, frame: Frame, message: Any) -> Json:
        """A message the view sent: recorded, then what the bridge makes of it, recorded too."""
        actions = frame.host.from_view(message)
        # A request the view makes of the server becomes an operation; its bridge entry and the operation name
        # each other, so the operation is made before the entry is recorded.
        forward = next((a for a in actions if isinstance(a, Forward)), None)
        op = None
        if forward is not None and not frame.replay:
            op = self.s.operations.create(forward.method, forward.params)
        key = self._incoming(app, frame, message, via=op.key if op is not None else None)
        if op is not None:
            op.via = key
        return self._act(app, frame, actions, key, op=op, direct=True)

    def csp_violation(self, app: str, frame: Frame, report: Any) -> Json:
        if frame.replay:
            return {"post": []}  # a link holder's replay writes nothing
        report = report if isinstance(report, dict) else {"report": str(report)[:500]}
        # Not a bridge message: the console's own sandbox reports what the view's frame refused.
        message = {"jsonrpc": "2.0", "method": "csp violation (reported by the sandbox)", "params": report}
        key = self._notification(app, frame, "in", message)
        blocked = str(report.get("blockedURI") or report.get("blocked") or "?")[:300]
        directive = str(report.get("violatedDirective") or report.get("directive") or "?")[:100]
        if (app, blocked, directive) not in self._violations and len(self._violations) < 10_000:
            self._violations.add((app, blocked, directive))
            self._finding("apps.csp-violation", f"the view was refused {blocked} by {directive}", key)
        return {"post": []}

    def context(self, app: str, frame: Frame, change: Json) -> Json:
        """The person changed the host context this tab shows (theme, display mode, viewport, locale)."""
        allowed = {k: v for k, v in change.items() if k in CONTEXT_KEYS}
        mode = allowed.get("displayMode")
        refused = None
        if mode is not None and mode != frame.host.display_mode and mode != "inline" \
                and mode not in frame.host.app_modes:
            # A host must not switch a view to a mode it did not list in appCapabilities.availableDisplayModes.
            refused = (f"The view did not list {mode!r} in appCapabilities.availableDisplayModes "
                       f"({frame.host.app_modes or 'none'}): a host may not switch it there.")
            allowed.pop("displayMode")
        shown = dict(self.shown(app) or {})
        context = {**(shown.get("context") or {}), **{k: v for k, v in allowed.items() if k != "displayMode"}}
        if not frame.replay:
            self._change(app, context=context, display_mode=allowed.get("displayMode", shown.get("display_mode")))
        answer = self._act(app, frame, frame.host.context_changed(allowed), None, direct=True)
        if refused is not None:
            answer.update(refused=refused, mode=frame.host.display_mode)
        return answer

    def close(self, app: str, frame: Frame) -> Json:
        """The person closes the view in this tab: it is told with ui/resource-teardown first (the tab removes the
        frame once the view answers, or after a short wait)."""
        # The frame is kept: the view's answer comes through it (the oldest frames go at MAX_FRAMES).
        return self._act(app, frame, frame.host.teardown("the person closed the view"), None, direct=True)

    def link_answer(self, app: str, link_id: str, opened: bool) -> bool:
        found = self._links.pop((app, link_id), None)
        if found is None:
            return False
        frame, rid = found
        self._act(app, frame, frame.host.link_answered(rid, opened), None)
        shown = self.shown(app) or {}
        links = [({**x, "status": "opened" if opened else "dismissed"} if x.get("id") == link_id else x)
                 for x in shown.get("links") or []]
        self._change(app, links=links)
        return True

    async def collect(self, frame: Frame) -> list[Json]:
        """What waits to be posted to the view: at once if anything does, else the first thing within a while."""
        frame.seen = time.monotonic()
        out: list[Json] = []
        if frame.outbox.empty():
            try:
                out.append(await asyncio.wait_for(frame.outbox.get(), COLLECT_WAIT_S))
            except TimeoutError:
                return []
        while not frame.outbox.empty():
            out.append(frame.outbox.get_nowait())
        return out

    def _act(self, app: str, frame: Frame, actions: list[Action], key: str | None, op: Operation | None = None,
             direct: bool = False) -> Json:
        """Carry out what the machine asked: record posts and return them (`direct`: the answer to what the tab
        relayed) or queue them for the tab to collect; forward requests, offer links, keep what the view said."""
        post: list[Json] = []
        apply: Json = {}
        for action in actions:
            if isinstance(action, Post):
                self._outgoing(app, frame, action.message)
                post.append(action.message)
            elif isinstance(action, Finding) and not frame.replay:  # a link holder's replay writes nothing
                self._finding(action.rule, action.message, key)
            elif isinstance(action, Apply):
                change = {k: v for k, v in (("width", action.width), ("height", action.height),
                                            ("displayMode", action.display_mode)) if v is not None}
                apply.update(change)
                if frame.replay:
                    continue  # a link holder's tab changes nothing anyone else sees
                # A size is applied by the tab, never recorded as a change of the app: a view that resizes as it
                # draws would re-render every tab's app panel each time (its bridge entry has the size).
                if action.display_mode is not None:
                    self._change(app, display_mode=action.display_mode)
            elif isinstance(action, Said) and not frame.replay:
                shown = self.shown(app) or {}
                text = json.dumps(action.data, ensure_ascii=False, indent=2, default=str)
                if len(text) > SAID_CHARS:
                    text = text[:SAID_CHARS] + f"… ({len(text)} characters: the bridge entry has them all)"
                said = [*(shown.get("said") or []), {"what": action.what, "text": text, "at": time.time()}]
                self._change(app, said=said[-MAX_SAID:])
            elif isinstance(action, Forward):
                self._forward(app, frame, action, op)
            elif isinstance(action, OfferLink):
                self._offer(app, frame, action)
        if not frame.reveal and self.s.timeline.scrubber is not None:
            # What goes to the view of someone who may not see the target's secret values is masked, as the log is.
            post = [self.s.timeline.scrubber.value(m) for m in post]
        if not direct:  # not the answer to what the tab relayed: it collects it
            for message in post:
                if frame.outbox.full():
                    frame.outbox.get_nowait()  # a tab that never collects holds at most MAX_OUTBOX
                frame.outbox.put_nowait(message)
            return {"post": [], "apply": apply}
        return {"post": post, "apply": apply}

    def _forward(self, app: str, frame: Frame, action: Forward, op: Operation | None) -> None:
        if frame.replay or op is None:
            self._act(app, frame, [Post({"jsonrpc": "2.0", "id": action.request_id, "error": {
                "code": -32000, "message": "a link holder's view cannot call the server (it replays what was "
                                           "recorded)"}})], None)
            return
        self.s.background.spawn(f"app-{app}-{op.id}", self._run_forward(app, frame, action, op))

    async def _run_forward(self, app: str, frame: Frame, action: Forward, op: Operation) -> None:
        try:
            await self.s.operations.run(op)
            final = op.final
            result = final.result if final is not None and final.error is None else None
            error = _error_of(op)
            if error is not None:  # as the view would get it from a server: a JSON-RPC error object
                error = {"code": error.get("code") if isinstance(error.get("code"), int) else -32603,
                         "message": str(error.get("message")),
                         **({"data": error["data"]} if error.get("data") is not None else {})}
            elif result is None:
                error = {"code": -32603, "message": op.message or "the request ended without a reply"}
        except Exception as exc:  # said to the view, which is waiting
            result, error = None, {"code": -32603, "message": f"the console could not send it: {exc}"}
        self._act(app, frame, frame.host.answered(action.request_id, result, error), None)

    def _offer(self, app: str, frame: Frame, action: OfferLink) -> None:
        if frame.replay:
            self._act(app, frame, frame.host.link_answered(action.request_id, False), None)
            return
        host = str(self.s.settings.public_host or "")
        if leads_to_host(action.url, host):  # a view knows the console's origin (location.ancestorOrigins)
            self._act(app, frame, [Post({"jsonrpc": "2.0", "id": action.request_id, "error": {
                "code": -32000, "message": f"the console refused the link: {REFUSED.format(host=host)}"}})], None)
            return
        if sum(1 for (a, _l) in self._links if a == app) >= MAX_OFFERED:
            self._act(app, frame, [Post({"jsonrpc": "2.0", "id": action.request_id, "error": {
                "code": -32000, "message": f"{MAX_OFFERED} links already wait for the person"}})], None)
            return
        link_id = secrets.token_hex(4)
        self._links[(app, link_id)] = (frame, action.request_id)
        shown = self.shown(app) or {}
        links = [*(shown.get("links") or []), {"id": link_id, "url": action.url[:2000], "status": "offered",
                                               "frame": frame.id}]
        self._change(app, links=links[-MAX_LINKS:])
        self.s.background.spawn(f"app-link-{app}-{link_id}", self._link_expires(app, link_id))

    async def _link_expires(self, app: str, link_id: str) -> None:
        await asyncio.sleep(LINK_WAIT_S)  # a deadline, not a poll: the offer is withdrawn after it
        self.link_answer(app, link_id, False)

    # --- recording: every bridge message is an exchange entry ---------------------------------------------------

    def _key(self, app: str, frame: Frame) -> str:
        # Never the frame's id: keys are on every page, and a frame id is what lets a tab speak for its view.
        frame.serial += 1
        return f"app{app}-{secrets.token_hex(5)}"

    def _name(self, app: str, frame: Frame, direction: str) -> str:
        tool = (self.shown(app) or {}).get("tool", "")
        arrow = "view → console" if direction == "in" else "console → view"
        return f"{tool} · app {app} · {arrow}" + (" · replay" if frame.replay else "")

    def _wire(self, key: str, direction: str, message: Any, kind: str) -> None:
        raw = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        self.s.timeline.add_frame(Wire(direction=direction, raw=raw, frame_kind=kind, exchange=key,
                                       note="MCP Apps bridge (postMessage)", wall=time.time()))

    def _incoming(self, app: str, frame: Frame, message: Any, via: str | None = None) -> str | None:
        """Record what the view sent; the key of its entry (a request's stays open until its answer)."""
        if frame.replay:
            return None
        if not isinstance(message, dict):
            return self._notification(app, frame, "in", message)
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            key = self._key(app, frame)
            frame.open[json.dumps(message["id"], default=str)] = key
            self.s.timeline.append(ExchangeStarted(key=key, method=f"app: {method}"[:200],
                                                   name=self._name(app, frame, "in"),
                                                   id=str(message["id"])[:100], via=via))
            self._wire(key, "in", message, "request")
            return key
        if not isinstance(method, str) and "id" in message:  # the answer to a request of ours
            found = frame.open.pop("out:" + json.dumps(message["id"], default=str), "")
            if found:
                key = found
                self._wire(key, "in", message, "response")
                self._finished(key, message)
                return key
        return self._notification(app, frame, "in", message)

    def _outgoing(self, app: str, frame: Frame, message: Json) -> None:
        if frame.replay:
            return
        rid = message.get("id")
        if "method" not in message and rid is not None:  # the answer to the view's request
            key = frame.open.pop(json.dumps(rid, default=str), None)
            if key is not None:
                self._wire(key, "out", message, "response" if "result" in message else "error")
                self._finished(key, message)
                return
        if "method" in message and rid is not None:  # a request of ours (ui/resource-teardown)
            key = self._key(app, frame)
            frame.open["out:" + json.dumps(rid, default=str)] = key
            self.s.timeline.append(ExchangeStarted(key=key, method=f"app: {message['method']}",
                                                   name=self._name(app, frame, "out"), id=str(rid)))
            self._wire(key, "out", message, "request")
            return
        self._notification(app, frame, "out", message)

    def _notification(self, app: str, frame: Frame, direction: str, message: Any) -> str | None:
        if frame.replay:
            return None
        key = self._key(app, frame)
        method = message.get("method") if isinstance(message, dict) else None
        label = f"app: {method}" if isinstance(method, str) else "app: (not JSON-RPC)"
        self.s.timeline.append(ExchangeStarted(key=key, method=label[:200], name=self._name(app, frame, direction)))
        self._wire(key, direction, message, "notification" if isinstance(method, str) else "invalid")
        self.s.timeline.append(ExchangeFinished(key=key, status="ok", duration_ms=0.0))
        return key

    def _finished(self, key: str, message: Json) -> None:
        error = message.get("error")
        started = self.s.state.entries.get(key, {}).get("at0")
        duration = (time.time() - started) * 1000 if isinstance(started, float) else None
        self.s.timeline.append(ExchangeFinished(
            key=key, status="error" if error is not None else "ok", duration_ms=duration,
            error=str(error.get("message"))[:300] if isinstance(error, dict) else None,
            error_code=error.get("code") if isinstance(error, dict) else None))


def _error_of(op: Operation) -> Json | None:
    """An operation's error as its final reply records it (`reply_json`): type, message, code, data."""
    if op.final is None or op.final.error is None:
        return None
    error = reply_json(op.final).get("error")
    return error if isinstance(error, dict) else {"message": str(op.final.error)}
