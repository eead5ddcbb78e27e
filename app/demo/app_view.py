"""An MCP App in the demo (`io.modelcontextprotocol/ui`, through the SDK's `mcp.server.apps`): a counter with a view.

`counter_app` shows the view; from it a person can bump the counter through `bump_counter` (visible to apps only,
so a host lists it nowhere else), try `reset_counter` (visible to the model only: a host MUST refuse the view's
call), send a message, update the model context, ask for a link and for full screen, and fetch a domain its CSP
does not declare (the host's frame refuses it). The view speaks the bridge by hand, in a page of plain JS, so every
message it sends is one the console's timeline shows as it was written here.
"""

from __future__ import annotations

from mcp.server.apps import Apps, ResourceCsp
from typing_extensions import TypedDict

from app.demo.support import DemoState

VIEW_URI = "ui://demo/counter.html"
DECLARED = "https://api.example.com"  # the one domain the view's CSP may connect to (nothing is fetched from it)
UNDECLARED = "https://undeclared.example.com/data.json"

VIEW_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Demo counter</title>
<style>
  :root { color-scheme: light; --fg: #1b1b1f; --bg: #ffffff; --accent: #3451b2; }
  :root[data-theme="dark"] { color-scheme: dark; --fg: #e8e8ef; --bg: #1e1e24; --accent: #9db1ff; }
  body { font: 15px system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 12px; }
  h1 { font-size: 1.2em; margin: 0 0 .4em; } #count { color: var(--accent); }
  button { margin: 2px 2px 6px 0; } pre { white-space: pre-wrap; font-size: 12px; margin: 4px 0 0; }
</style>
</head>
<body>
<h1>Demo counter: <span id="count">?</span></h1>
<p>theme <b id="theme">?</b> · locale <b id="locale">?</b> · display <b id="mode">inline</b></p>
<p id="input">waiting for the tool input…</p>
<div>
  <button id="bump">Bump (bump_counter, apps only)</button>
  <button id="reset">Reset (reset_counter, model only)</button>
  <button id="say">Send a message</button>
  <button id="context">Update the model context</button>
  <button id="docs">Open the MCP docs</button>
  <button id="full">Full screen</button>
  <button id="fetch">Fetch an undeclared domain</button>
</div>
<pre id="log"></pre>
<script>
(function () {
  "use strict";
  var next = 1, pending = {};
  function send(m) { window.parent.postMessage(m, "*"); }
  function request(method, params) {
    var id = next++;
    send({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    return new Promise(function (resolve, reject) { pending[id] = { resolve: resolve, reject: reject }; });
  }
  function notify(method, params) { send({ jsonrpc: "2.0", method: method, params: params || {} }); }
  function log(text) { document.getElementById("log").textContent += text + "\\n"; }
  function context(c) {
    if (!c) { return; }
    if (c.theme) {
      document.documentElement.dataset.theme = c.theme;
      document.getElementById("theme").textContent = c.theme;
    }
    if (c.locale) { document.getElementById("locale").textContent = c.locale; }
    if (c.displayMode) { document.getElementById("mode").textContent = c.displayMode; }
  }
  function show(result) {
    var s = result && result.structuredContent;
    if (s && typeof s.count === "number") { document.getElementById("count").textContent = String(s.count); }
  }
  function size() {
    notify("ui/notifications/size-changed", { width: document.documentElement.scrollWidth,
                                              height: document.documentElement.scrollHeight });
  }
  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) { return; }
    var m = event.data;
    if (!m || m.jsonrpc !== "2.0") { return; }
    if (m.method === undefined && m.id !== undefined && pending[m.id]) {
      var p = pending[m.id]; delete pending[m.id];
      if (m.error) { p.reject(m.error); } else { p.resolve(m.result); }
      return;
    }
    if (m.method === "ui/notifications/tool-input") {
      document.getElementById("input").textContent = "tool input: " + JSON.stringify(m.params.arguments);
    } else if (m.method === "ui/notifications/tool-result") {
      show(m.params); log("tool result received");
    } else if (m.method === "ui/notifications/tool-cancelled") {
      log("the call was cancelled: " + (m.params && m.params.reason));
    } else if (m.method === "ui/notifications/host-context-changed") {
      context(m.params); size();
    } else if (m.method === "ui/resource-teardown") {
      send({ jsonrpc: "2.0", id: m.id, result: {} });
    }
  });
  document.addEventListener("securitypolicyviolation", function (e) { log("refused by the CSP: " + e.blockedURI); });
  function on(id, f) { document.getElementById(id).addEventListener("click", f); }
  on("bump", function () {
    request("tools/call", { name: "bump_counter", arguments: { by: 1 } })
      .then(function (r) { show(r); log("bumped"); }, function (e) { log("bump refused: " + e.message); });
  });
  on("reset", function () {
    request("tools/call", { name: "reset_counter", arguments: {} })
      .then(function () { log("reset"); }, function (e) { log("reset refused: " + e.message); });
  });
  on("say", function () {
    request("ui/message", { role: "user", content: [{ type: "text", text: "The counter says hello" }] })
      .then(function () { log("message sent"); });
  });
  on("context", function () {
    request("ui/update-model-context", { content: [{ type: "text", text: "counter = " +
      document.getElementById("count").textContent }] }).then(function () { log("context updated"); });
  });
  on("docs", function () {
    request("ui/open-link", { url: "https://modelcontextprotocol.io/extensions/apps/overview" })
      .then(function () { log("link opened"); }, function (e) { log("link not opened: " + e.message); });
  });
  on("full", function () {
    request("ui/request-display-mode", { mode: "fullscreen" })
      .then(function (r) { context({ displayMode: r.mode }); });
  });
  on("fetch", function () {
    fetch("UNDECLARED_URL").then(function () { log("fetched"); }, function () { log("fetch failed"); });
  });
  request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "demo-counter", version: "1" },
                             appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] } })
    .then(function (r) { context(r.hostContext); notify("ui/notifications/initialized"); size(); });
})();
</script>
</body>
</html>
""".replace("UNDECLARED_URL", UNDECLARED)


class Count(TypedDict):
    count: int


def register(state: DemoState) -> Apps:
    """The demo's MCP Apps extension (passed to `MCPServer(extensions=[...])`)."""
    apps = Apps()

    @apps.tool(resource_uri=VIEW_URI, name="counter_app", title="Counter (MCP App)",
               description="Shows the demo counter in an MCP App view: a host renders its ui:// resource.")
    def counter_app(start: int = 0) -> Count:
        state.counters["app"] = state.counters.get("app", 0) + start
        return {"count": state.counters.get("app", 0)}

    @apps.tool(resource_uri=VIEW_URI, visibility=["app"], name="bump_counter",
               description="Adds to the counter. Visible to apps only: the view calls it.")
    def bump_counter(by: int = 1) -> Count:
        state.counters["app"] = state.counters.get("app", 0) + by
        return {"count": state.counters["app"]}

    @apps.tool(resource_uri=VIEW_URI, visibility=["model"], name="reset_counter",
               description="Sets the counter to 0. Visible to the model only: a host refuses the view's call.")
    def reset_counter() -> Count:
        state.counters["app"] = 0
        return {"count": 0}

    apps.add_html_resource(VIEW_URI, VIEW_HTML, name="counter view", title="The counter's view",
                           description="An MCP App view (text/html;profile=mcp-app)",
                           csp=ResourceCsp(connect_domains=[DECLARED]), prefers_border=True)
    return apps

