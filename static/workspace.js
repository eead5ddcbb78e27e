// A workspace page (templates/workspace.html): tabs pick the pane on a narrow screen, and the combined timeline is
// fetched again when a pane's own timeline changes (the panes are this console's pages: same origin, so their
// timelines are watched directly, no polling).
(function () {
  "use strict";
  var root = document.getElementById("workspace");
  if (!root) { return; }
  var list = document.getElementById("combined-list");
  var select = document.getElementById("combined-server");
  var timer = null;

  function refresh() {
    window.clearTimeout(timer);
    timer = window.setTimeout(function () {
      var url = "/workspaces/" + root.dataset.workspace + "/timeline?server=" + encodeURIComponent(select.value);
      fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) { if (html !== null) { list.innerHTML = html; } });
    }, 400);
  }

  function watch(frame) {
    var observe = function () {
      var doc = frame.contentDocument;
      var timeline = doc && doc.getElementById("timeline-list");
      if (!timeline) { return; }
      new MutationObserver(refresh).observe(timeline, { childList: true, subtree: true, attributes: true,
                                                         attributeFilter: ["data-status"] });
      refresh();
    };
    frame.addEventListener("load", observe);
    observe();
  }

  function show(id) {
    root.querySelectorAll(".pane").forEach(function (p) { p.classList.toggle("active", p.dataset.session === id); });
    root.querySelectorAll(".pane-tabs [role=tab]").forEach(function (t) {
      t.setAttribute("aria-selected", t.dataset.pane === id ? "true" : "false");
    });
  }

  root.querySelectorAll("iframe.pane-frame").forEach(watch);
  root.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest(".pane-tabs [role=tab]");
    if (tab) { show(tab.dataset.pane); return; }
    var link = event.target.closest && event.target.closest("[data-pane-link]");
    if (link) { show(link.dataset.paneLink); }
  });
})();
