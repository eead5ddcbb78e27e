"""The host side of one MCP App's bridge (`ui/*` JSON-RPC over postMessage), as a machine without I/O.

It is told what the view sent and what happened to the tool call the view belongs to; it answers with what to
do: messages to post to the view, MCP requests to send to the server on the view's behalf, a link to offer the
person, a size or display mode to apply, and findings. The console runs it (app/console/apps.py) and records
every message both ways; the machine decides nothing about recording or rendering.

The order the spec sets: the view asks `ui/initialize` first; the host sends nothing until the view's
`ui/notifications/initialized`; then the complete tool input once, then the result (or a cancellation) when the
call ends. A view's `tools/call` reaches only its own server, and only for tools visible to apps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.mcp.apps import BRIDGE_VERSION, app_may_call

Json = dict[str, Any]
DISPLAY_MODES = ("inline", "fullscreen", "pip")
METHOD_NOT_FOUND, INVALID_PARAMS, REFUSED = -32601, -32602, -32000
# What the host offers a view, said once in ui/initialize (and in hostCapabilities.sandbox what it granted).
HOST_INFO = {"name": "mcp-console", "version": "1"}


@dataclass(frozen=True, slots=True)
class Post:
    """A message for the view (through the sandbox proxy)."""
    message: Json


@dataclass(frozen=True, slots=True)
class Forward:
    """An MCP request the view made, for the console to send to the server; `answered` with its reply."""
    request_id: Any
    method: str
    params: Json


@dataclass(frozen=True, slots=True)
class OfferLink:
    """`ui/open-link`: opened only on the person's click; `link_answered` says whether it was."""
    request_id: Any
    url: str


@dataclass(frozen=True, slots=True)
class Apply:
    """What the frame should now be: a size the view reported, or the display mode granted."""
    width: float | None = None
    height: float | None = None
    display_mode: str | None = None


@dataclass(frozen=True, slots=True)
class Said:
    """What the view told the host that a console shows: `ui/message`, `ui/update-model-context`, a log."""
    what: str  # message | model_context | log
    data: Any


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    message: str


Action = Post | Forward | OfferLink | Apply | Said | Finding


@dataclass
class AppHost:
    """One view's bridge. `tool` is the tool's listing (for toolInfo and visibility), `tools` finds any tool of the
    same server by name (None: not listed, so not callable), `sandbox` says what the frame was granted."""

    tool: Json
    tools: Callable[[str], Json | None]
    context: Json = field(default_factory=dict)
    sandbox: Json = field(default_factory=dict)
    initialize_asked: bool = False
    initialized: bool = False
    app_info: Json | None = None
    app_modes: list[str] = field(default_factory=list)
    display_mode: str = "inline"
    arguments: Json | None = None
    outcome: Json | None = None  # the tool-result or tool-cancelled notification, once the call ended
    input_sent: bool = False
    outcome_sent: bool = False
    torn_down: bool = False
    tool_call_id: Any = None  # the tools/call request's JSON-RPC id (hostContext.toolInfo.id)
    _next_id: int = 0

    # --- what the view sends ----------------------------------------------------------------------------------

    def from_view(self, message: Any) -> list[Action]:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [Finding("apps.bridge-message", f"not a JSON-RPC 2.0 message: {str(message)[:200]}")]
        method = message.get("method")
        if not isinstance(method, str):
            if "id" in message and ("result" in message or "error" in message):
                return []  # the answer to a request of ours (ui/resource-teardown): recorded, nothing to do
            return [Finding("apps.bridge-message", f"neither a request, a notification nor a response: "
                                                   f"{str(message)[:200]}")]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" in message:
            return self._request(message["id"], method, params)
        return self._notification(method, params)

    def _request(self, rid: Any, method: str, params: Json) -> list[Action]:
        actions: list[Action] = []
        if method != "ui/initialize" and not self.initialize_asked:
            actions.append(Finding("apps.bridge-order", f"{method} before ui/initialize"))
        if method == "ui/initialize":
            return actions + self._initialize(rid, params)
        if method in ("tools/call", "resources/read"):
            return actions + self._forward(rid, method, params)
        if method == "ui/open-link":
            url = params.get("url")
            if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
                return [*actions, self._error(rid, INVALID_PARAMS, "ui/open-link takes an http(s) url")]
            return [*actions, OfferLink(rid, url)]
        if method == "ui/message":
            return [*actions, Said("message", params), self._result(rid, {})]
        if method == "ui/update-model-context":
            return [*actions, Said("model_context", params), self._result(rid, {})]
        if method == "ui/request-display-mode":
            return actions + self._display_mode(rid, params)
        if method == "ping":
            return [*actions, self._result(rid, {})]
        known = method.startswith("ui/") and method in ("ui/download-file",)
        if not known:
            actions.append(Finding("apps.bridge-message", f"a request for {method[:120]}, which the bridge does not "
                                                          "define"))
        return [*actions, self._error(rid, METHOD_NOT_FOUND, f"{method[:120]} is not offered by this host")]

    def _notification(self, method: str, params: Json) -> list[Action]:
        actions: list[Action] = []
        if method == "ui/notifications/initialized":
            if not self.initialize_asked:
                actions.append(Finding("apps.bridge-order", "ui/notifications/initialized before ui/initialize"))
            self.initialized = True
            return actions + self._catch_up()
        if not self.initialize_asked:
            actions.append(Finding("apps.bridge-order", f"{method} before ui/initialize"))
        if method == "ui/notifications/size-changed":
            width, height = params.get("width"), params.get("height")
            return [*actions, Apply(width=_number(width), height=_number(height))]
        if method == "notifications/message":
            return [*actions, Said("log", params)]
        if method == "ui/notifications/request-teardown":
            return actions + self.teardown("the view asked to be closed")
        actions.append(Finding("apps.bridge-message", f"a notification {method[:120]}, which the bridge does not "
                                                      "define"))
        return actions

    def _initialize(self, rid: Any, params: Json) -> list[Action]:
        self.initialize_asked = True
        caps = params.get("appCapabilities")
        modes = caps.get("availableDisplayModes") if isinstance(caps, dict) else None
        self.app_modes = [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []
        self.app_info = params.get("appInfo") if isinstance(params.get("appInfo"), dict) else None
        result = {"protocolVersion": BRIDGE_VERSION,
                  "hostCapabilities": {"openLinks": {}, "serverTools": {}, "serverResources": {}, "logging": {},
                                       "updateModelContext": {"text": {}, "structuredContent": {}},
                                       "message": {"text": {}}, "sandbox": self.sandbox},
                  "hostInfo": HOST_INFO, "hostContext": self.host_context()}
        return [self._result(rid, result)]

    def host_context(self) -> Json:
        tool = {k: v for k, v in self.tool.items() if k in ("name", "title", "description", "inputSchema",
                                                            "outputSchema", "annotations", "_meta")}
        info: Json = {"tool": tool} if self.tool_call_id is None else {"id": self.tool_call_id, "tool": tool}
        return {"toolInfo": info, "displayMode": self.display_mode,
                "availableDisplayModes": list(DISPLAY_MODES), **self.context}

    def _forward(self, rid: Any, method: str, params: Json) -> list[Action]:
        if method == "tools/call":
            name = params.get("name")
            tool = self.tools(name) if isinstance(name, str) else None
            if tool is None:
                return [self._error(rid, INVALID_PARAMS, f"no tool {str(name)[:120]!r} on this server")]
            if not app_may_call(tool):
                return [Finding("apps.hidden-tool", f"the view called {name!r}, whose visibility leaves out "
                                                    "\"app\": refused"),
                        self._error(rid, INVALID_PARAMS, f"tool {name!r} is not visible to apps")]
        elif not isinstance(params.get("uri"), str):
            return [self._error(rid, INVALID_PARAMS, "resources/read takes a uri")]
        return [Forward(rid, method, params)]

    def _display_mode(self, rid: Any, params: Json) -> list[Action]:
        mode = params.get("mode")
        actions: list[Action] = []
        if mode not in DISPLAY_MODES:
            return [self._error(rid, INVALID_PARAMS, f"mode must be one of {', '.join(DISPLAY_MODES)}")]
        if self.app_modes and mode not in self.app_modes:
            # The host must not switch to a mode the view did not list: it answers the mode it keeps.
            actions.append(Finding("apps.display-mode", f"asked for {mode!r}, not in its availableDisplayModes "
                                                        f"{self.app_modes}"))
        else:
            self.display_mode = mode
            actions.append(Apply(display_mode=mode))
        return [*actions, self._result(rid, {"mode": self.display_mode})]

    # --- what happens on the host's side ----------------------------------------------------------------------

    def call_started(self, arguments: Json) -> list[Action]:
        self.arguments = arguments
        return self._catch_up()

    def call_ended(self, result: Json | None, error: Json | None) -> list[Action]:
        """The tool call this view belongs to ended: its result (an error reply becomes an isError result, as the
        view expects a CallToolResult), or cancelled when `result` and `error` are both None."""
        if result is None and error is None:
            self.outcome = _notification("ui/notifications/tool-cancelled", {"reason": "the call was cancelled"})
        elif result is None:
            text = str((error or {}).get("message", "the call failed"))
            self.outcome = _notification("ui/notifications/tool-result",
                                         {"content": [{"type": "text", "text": text}], "isError": True})
        else:
            self.outcome = _notification("ui/notifications/tool-result", result)
        return self._catch_up()

    def answered(self, request_id: Any, result: Json | None, error: Json | None) -> list[Action]:
        """The reply to a Forward: passed to the view as the server gave it."""
        if error is not None:
            return [Post({"jsonrpc": "2.0", "id": request_id, "error": error})]
        return [self._result(request_id, result or {})]

    def link_answered(self, request_id: Any, opened: bool) -> list[Action]:
        if opened:
            return [self._result(request_id, {})]
        return [self._error(request_id, REFUSED, "the person did not open the link")]

    def context_changed(self, change: Json) -> list[Action]:
        """The person changed the host context (theme, display mode, viewport, locale): the view is told after it
        is initialized; before, ui/initialize's hostContext carries it."""
        self.context.update({k: v for k, v in change.items() if k != "displayMode"})
        actions: list[Action] = []
        if "displayMode" in change and change["displayMode"] in DISPLAY_MODES:
            self.display_mode = change["displayMode"]
            actions.append(Apply(display_mode=self.display_mode))
        if self.initialized and not self.torn_down:
            actions.append(Post(_notification("ui/notifications/host-context-changed", change)))
        return actions

    def teardown(self, reason: str) -> list[Action]:
        if self.torn_down:
            return []
        self.torn_down = True
        return [Post({"jsonrpc": "2.0", "id": self._new_id(), "method": "ui/resource-teardown",
                      "params": {"reason": reason}})]

    def _catch_up(self) -> list[Action]:
        """What the view is owed and may now get: nothing before initialized, then the input, then the outcome."""
        if not self.initialized or self.torn_down:
            return []
        actions: list[Action] = []
        if self.arguments is not None and not self.input_sent:
            self.input_sent = True
            actions.append(Post(_notification("ui/notifications/tool-input", {"arguments": self.arguments})))
        if self.outcome is not None and self.input_sent and not self.outcome_sent:
            self.outcome_sent = True
            actions.append(Post(self.outcome))
        return actions

    def _new_id(self) -> str:
        self._next_id += 1
        return f"host-{self._next_id}"

    @staticmethod
    def _result(rid: Any, result: Json) -> Post:
        return Post({"jsonrpc": "2.0", "id": rid, "result": result})

    @staticmethod
    def _error(rid: Any, code: int, message: str) -> Post:
        return Post({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _notification(method: str, params: Json) -> Json:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None
