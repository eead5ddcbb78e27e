// MCP Apps, the tab's side (app/console/apps.py is the host): each app in #apps gets one frame of the sandbox proxy,
// framed from the sandbox origin (never this one), and every message between the view and the console passes through
// here to /sessions/<id>/apps/<app>/bridge, which records it and answers with what to post back. Messages are relayed
// in order, one at a time; what comes later (the call's result, a forwarded request's reply, a link's answer) is
// collected by a long poll. The tab decides nothing: it posts what the console says, and sizes the frame.
(function () {
  "use strict";
  var apps = {};  // app id → {el, iframe, id, sid, frame, origin, chain, collecting}

  function frameId() {
    var bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }

  function say(app, text) {
    var holder = app.el.querySelector(".app-frame-holder");
    var p = app.el.querySelector(".app-relay-problem");
    if (!p) {
      p = document.createElement("p");
      p.className = "alert error app-relay-problem";
      p.setAttribute("role", "alert");
      holder.parentNode.insertBefore(p, holder);
    }
    p.textContent = text;  // text, never markup: it may carry what a server sent
  }

  function relay(app, body) {
    body.frame = app.frame;
    return fetch("/sessions/" + app.sid + "/apps/" + app.id + "/bridge", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body)
    }).then(function (r) {
      if (r.ok) { return r.json(); }
      return r.text().then(function (t) { throw new Error("the console refused the relay (" + r.status + "): " + t.slice(0, 300)); });
    });
  }

  function applyFrame(app, apply) {
    if (!apply) { return; }
    if (typeof apply.height === "number" && !app.el.classList.contains("mode-fullscreen")) {
      app.iframe.style.height = Math.max(40, Math.min(apply.height, 5000)) + "px";
    }
    if (typeof apply.displayMode === "string") { setMode(app, apply.displayMode); }
  }

  function setMode(app, mode) {
    ["inline", "fullscreen", "pip"].forEach(function (m) { app.el.classList.toggle("mode-" + m, m === mode); });
    var exit = app.el.querySelector(".app-exit");
    if (exit) { exit.hidden = mode === "inline"; }
    var select = app.el.querySelector(".app-context select[name=displayMode]");
    if (select) { select.value = mode; }
  }

  function finishClose(app) {
    if (!app.closing) { return; }
    app.closing = null;
    window.clearTimeout(app.closeTimer);
    app.iframe.remove();
    delete apps[app.id];
    var el = app.el;
    delete el.dataset.mounted;
    el.classList.add("view-closed");  // its Close view and the bridge's last state are hidden until shown again
    var again = document.createElement("button");
    again.type = "button";
    again.className = "small app-reopen";
    again.textContent = "Show the view again";
    el.querySelector(".app-frame-holder").appendChild(again);
  }

  function deliver(app, answer) {
    if (!answer) { return; }
    (answer.post || []).forEach(function (message) {
      if (message && message.method === "ui/resource-teardown" && app.closing) { app.closing = message.id; }
      if (app.iframe.contentWindow) { app.iframe.contentWindow.postMessage(message, app.origin); }
    });
    applyFrame(app, answer.apply);
    if (answer.problem) { say(app, "The view cannot be shown: " + answer.problem); }
    if (answer.refused) {
      // The person asked for what the host may not do (a display mode the view did not list): said, and undone.
      say(app, answer.refused);
      setMode(app, answer.mode || "inline");
    }
  }

  function step(app, body) {
    app.chain = app.chain.then(function () { return relay(app, body); })
      .then(function (answer) { deliver(app, answer); })
      .catch(function (err) { say(app, String(err && err.message || err)); });
    return app.chain;
  }

  function collect(app) {
    if (apps[app.id] !== app) { return; }  // closed in this tab (or mounted again: that frame collects)
    if (!document.body.contains(app.el)) { delete apps[app.id]; return; }
    relay(app, { step: "collect" }).then(function (answer) {
      deliver(app, answer);
      collect(app);
    }, function (err) {
      say(app, String(err && err.message || err));
      window.setTimeout(function () { collect(app); }, 3000);  // the console restarting: try again shortly
    });
  }

  function mount(el) {
    if (el.dataset.mounted) { return; }
    var body = el.querySelector(".app-body");
    if (body && !body.open) { return; }  // mounted when opened: a view shown is a view run
    var root = document.getElementById("apps");
    var origin = root && root.dataset.sandbox;
    if (!origin) { return; }
    el.dataset.mounted = "1";
    var iframe = document.createElement("iframe");
    iframe.className = "app-frame";
    iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
    // What a view may be granted has to be the proxy's first; the view's own frame gets only what it declared.
    iframe.setAttribute("allow", "camera; microphone; geolocation; clipboard-write");
    iframe.setAttribute("title", "MCP App " + (el.dataset.tool || ""));
    iframe.src = origin + "/sandbox/proxy?host=" + encodeURIComponent(location.origin);
    el.querySelector(".app-frame-holder").appendChild(iframe);
    apps[el.dataset.app] = { el: el, iframe: iframe, id: el.dataset.app, sid: el.dataset.session, frame: frameId(),
                             origin: origin, chain: Promise.resolve(), collecting: false };
  }

  function mountAll() {
    document.querySelectorAll("#apps-list .app[data-app]").forEach(mount);
  }

  window.addEventListener("message", function (event) {
    var app = null;
    Object.keys(apps).forEach(function (k) { if (apps[k].iframe.contentWindow === event.source) { app = apps[k]; } });
    if (!app || event.origin !== app.origin) { return; }
    var message = event.data;
    if (message && message.mcpConsoleSandbox === "csp-violation") {
      step(app, { step: "csp", report: message.report });
      return;
    }
    if (message && message.method === "ui/notifications/sandbox-proxy-ready") {
      // The host context this tab shows goes with it, so ui/initialize's hostContext is whole from the start.
      step(app, { step: "ready", context: contextOf(app.el.querySelector(".app-context")) });
      if (!app.collecting) { app.collecting = true; collect(app); }
      return;
    }
    step(app, { step: "message", message: message });
    if (app.closing && message && message.id === app.closing && message.method === undefined) {
      app.chain.then(function () { finishClose(app); });
    }
  });

  function contextOf(form) {
    // The whole host context this tab would show the view in (the spec's HostContext fields a browser knows).
    var change = {};
    var mode = form.querySelector("[name=displayMode]").value;
    var viewport = form.querySelector("[name=viewport]").value;
    change.theme = form.querySelector("[name=theme]").value;
    change.locale = form.querySelector("[name=locale]").value || navigator.language || "en-US";
    change.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    change.displayMode = mode;
    change.userAgent = "mcp-console";
    change.safeAreaInsets = { top: 0, right: 0, bottom: 0, left: 0 };
    if (viewport) {
      var wh = viewport.split("x");
      change.containerDimensions = { width: Number(wh[0]), maxHeight: Number(wh[1]) };
      change.platform = Number(wh[0]) < 700 ? "mobile" : "web";
      change.deviceCapabilities = { touch: Number(wh[0]) < 1000, hover: Number(wh[0]) >= 1000 };
    } else if (mode === "fullscreen") {
      change.containerDimensions = { width: window.innerWidth, height: Math.max(200, window.innerHeight - 120) };
      change.platform = "web";
      change.deviceCapabilities = { touch: matchMedia("(pointer: coarse)").matches, hover: matchMedia("(hover: hover)").matches };
    } else {
      change.containerDimensions = { maxWidth: Math.round(form.parentNode.clientWidth), maxHeight: 5000 };
      change.platform = "web";
      change.deviceCapabilities = { touch: matchMedia("(pointer: coarse)").matches, hover: matchMedia("(hover: hover)").matches };
    }
    return change;
  }

  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest(".app-context");
    if (!form) { return; }
    var el = form.closest(".app[data-app]");
    var app = el && apps[el.dataset.app];
    if (!app) { return; }
    var change = contextOf(form);
    var holder = el.querySelector(".app-frame-holder");
    holder.style.width = change.containerDimensions.width ? change.containerDimensions.width + "px" : "";
    step(app, { step: "context", change: change });
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) { return; }
    var reopen = target.closest(".app-reopen");
    if (reopen) {
      var host = reopen.closest(".app[data-app]");
      reopen.remove();
      host.classList.remove("view-closed");
      mount(host);
      return;
    }
    var close = target.closest(".app-close");
    if (close) {
      var closing = apps[close.closest(".app[data-app]").dataset.app];
      if (closing && !closing.closing) {
        closing.closing = "pending";
        step(closing, { step: "close" }).then(function () {
          // The teardown request went to the view (deliver posted it); its id is what the view answers.
          closing.closeTimer = window.setTimeout(function () { finishClose(closing); }, 3000);
        });
      }
      return;
    }
    var exit = target.closest(".app-exit");
    if (exit) {
      var el = exit.closest(".app[data-app]");
      var app = el && apps[el.dataset.app];
      if (app) {
        var form = el.querySelector(".app-context");
        form.querySelector("[name=displayMode]").value = "inline";
        setMode(app, "inline");
        step(app, { step: "context", change: contextOf(form) });
      }
      return;
    }
    var open = target.closest("[data-app-link]");
    var dismiss = target.closest("[data-app-link-dismiss]");
    if (!open && !dismiss) { return; }
    var button = open || dismiss;
    // From the panel, not the button's ancestors: a push may have replaced the button's part of the page already.
    var session = document.getElementById("apps").dataset.session;
    var body = new URLSearchParams({ opened: open ? "1" : "0" });
    // The person's click opens the link (the anchor's own navigation, in a new tab); the view is told it was.
    fetch("/sessions/" + session + "/apps/" + button.dataset.app + "/links/" + (open ? open.dataset.appLink : dismiss.dataset.appLinkDismiss),
          { method: "POST", credentials: "same-origin", body: body, keepalive: true });
  });

  // A closed app's body is fetched on its first open (templates/_app.html), then its view is mounted.
  function opened(el) {
    var lazy = el.querySelector(".app-lazy[data-lazy-app]");
    if (!lazy) { mount(el); return; }
    var url = lazy.dataset.lazyApp;
    lazy.removeAttribute("data-lazy-app");
    fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } }).then(function (r) {
      return r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status));
    }).then(function (html) {
      var box = document.createElement("div");
      box.innerHTML = html;  // the console's own fragment: every server string in it is escaped there
      lazy.replaceWith.apply(lazy, Array.prototype.slice.call(box.childNodes));
      if (window.htmx) { window.htmx.process(el); }
      mount(el);
    }, function (err) { lazy.textContent = "The app could not be loaded: " + err.message; });
  }

  // Details the person opened inside an app's status stay open when a push replaces the status.
  var keptOpen = {};
  document.addEventListener("toggle", function (event) {
    var d = event.target;
    if (!d.matches || !d.matches(".app-status details")) {
      if (d.matches && d.matches(".app-body") && d.open) { opened(d.closest(".app[data-app]")); }
      return;
    }
    var id = d.closest(".app[data-app]").dataset.app + " " + d.className;
    if (d.open) { keptOpen[id] = true; } else { delete keptOpen[id]; }
  }, true);
  function reopen() {
    document.querySelectorAll("#apps-list .app-status details").forEach(function (d) {
      var id = d.closest(".app[data-app]").dataset.app + " " + d.className;
      if (keptOpen[id] && !d.open) { d.open = true; }
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") { return; }
    var full = document.querySelector("#apps-list .app.mode-fullscreen, #apps-list .app.mode-pip");
    var exit = full && full.querySelector(".app-exit");
    if (exit) { exit.click(); }
  });

  function start() {
    mountAll();
    var list = document.getElementById("apps-list");
    // Only the apps list is watched: a push adds an app there (an observer of the whole page would run on every
    // timeline entry).
    if (list) {
      new MutationObserver(mountAll).observe(list, { childList: true });
      new MutationObserver(reopen).observe(list, { childList: true, subtree: true });
    }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
