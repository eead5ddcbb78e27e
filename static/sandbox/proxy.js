// The MCP Apps sandbox proxy (served under its own host name by app/web/app_routes.py, never the console's origin).
// It frames the view in an inner iframe with an opaque origin (sandbox without allow-same-origin) from srcdoc, under
// the Content-Security-Policy the console built from the view's resource, and relays every message both ways except
// its own ui/notifications/sandbox-* ones. It makes no bridge message itself; a CSP violation the view's frame
// reports is handed to the console in an envelope of its own (mcpConsoleSandbox), never as a bridge message.
(function () {
  "use strict";
  var host = new URLSearchParams(location.search).get("host");
  if (!host || window.parent === window) { return; }
  var inner = null;

  function toHost(message) { window.parent.postMessage(message, host); }

  function escapeAttr(text) {
    return String(text).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  }

  // The policy goes first in <head>, before anything of the view, so nothing of it runs unpoliced; the reporter
  // (inline: the policy allows inline scripts, as the spec's default does) tells of each refusal.
  function withPolicy(html, csp) {
    var meta = '<meta http-equiv="Content-Security-Policy" content="' + escapeAttr(csp) + '">';
    var reporter = "<script>document.addEventListener('securitypolicyviolation',function(e){parent.postMessage(" +
      "{mcpConsoleCsp:{blockedURI:e.blockedURI,violatedDirective:e.violatedDirective," +
      "effectiveDirective:e.effectiveDirective,sourceFile:e.sourceFile,lineNumber:e.lineNumber}},'*')});<\/script>";
    var head = /<head(\s[^>]*)?>/i.exec(html);
    if (head) {
      var at = head.index + head[0].length;
      return html.slice(0, at) + meta + reporter + html.slice(at);
    }
    return meta + reporter + html;
  }

  function load(params) {
    if (inner) { inner.remove(); }
    inner = document.createElement("iframe");
    inner.setAttribute("sandbox", typeof params.sandbox === "string" ? params.sandbox : "allow-scripts allow-forms");
    if (params.allow) { inner.setAttribute("allow", params.allow); }
    inner.setAttribute("title", "MCP App view");
    inner.srcdoc = withPolicy(String(params.html || ""), String(params.csp || "default-src 'none'"));
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
