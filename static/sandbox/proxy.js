// The MCP Apps sandbox proxy (served under its own host name by app/web/app_routes.py, never the console's origin).
// It frames the view in an inner iframe with an opaque origin (sandbox without allow-same-origin), loaded from the
// one-time address the console gives in sandbox-resource-ready (served there with the view's Content-Security-Policy
// as a header), and relays every message both ways except its own ui/notifications/sandbox-* ones. It makes no
// bridge message itself; a CSP violation the view's frame reports is handed to the console in an envelope of its
// own (mcpConsoleSandbox), never as a bridge message.
(function () {
  "use strict";
  var host = new URLSearchParams(location.search).get("host");
  if (!host || window.parent === window) { return; }
  var inner = null;

  function toHost(message) { window.parent.postMessage(message, host); }

  function load(params) {
    if (inner) { inner.remove(); }
    inner = document.createElement("iframe");
    inner.setAttribute("sandbox", typeof params.sandbox === "string" ? params.sandbox : "allow-scripts allow-forms");
    if (params.allow) { inner.setAttribute("allow", params.allow); }
    inner.setAttribute("title", "MCP App view");
    // The console serves the view at this one-time address with its policy as an HTTP header: nothing in the
    // view's HTML can undo it (a <meta> policy put into the HTML could be), and this page may frame nothing else.
    var src = String(params.src || "");
    if (src.indexOf("/sandbox/view/") !== 0) { return; }
    inner.src = src;
    document.body.appendChild(inner);
  }

  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source === window.parent) {
      if (event.origin !== host) { return; }
      if (message && message.method === "ui/notifications/sandbox-resource-ready") {
        load(message.params || {});
        return;
      }
      if (message && typeof message.method === "string" && message.method.indexOf("ui/notifications/sandbox-") === 0) {
        return;
      }
      if (inner && inner.contentWindow) { inner.contentWindow.postMessage(message, "*"); }
      return;
    }
    if (inner && event.source === inner.contentWindow) {
      if (message && typeof message === "object" && message.mcpConsoleCsp) {
        toHost({ mcpConsoleSandbox: "csp-violation", report: message.mcpConsoleCsp });
        return;
      }
      toHost(message);
    }
  });

  toHost({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} });
})();
