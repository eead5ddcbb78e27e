// The few things htmx does not do for us: tell the server which timeline events this tab has
// seen when its websocket (re)opens, and reload when the server says the tab fell behind.
(function () {
  "use strict";
  var lastSeq = null;
  var SEQ = /^\s*<div id="ws-seq"[^>]*data-seq="(\d+)"( data-reset="1")?/;

  document.addEventListener("htmx:wsOpen", function (evt) {
    var root = document.getElementById("session-root");
    if (lastSeq === null) lastSeq = parseInt((root && root.dataset.seq) || "0", 10);
    evt.detail.socketWrapper.send(JSON.stringify({ last_seq: lastSeq }), root);
    document.body.dataset.ws = "open";
  });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.ws = "closed"; });

  document.addEventListener("htmx:wsBeforeMessage", function (evt) {
    var m = SEQ.exec(evt.detail.message);
    if (!m) return;
    if (m[2]) { evt.preventDefault(); window.location.reload(); return; }
    var seq = parseInt(m[1], 10);
    if (lastSeq !== null && seq <= lastSeq) { evt.preventDefault(); return; }  // already shown
    lastSeq = seq;
  });
  // A socket message never carries a form that needs processing; nothing else to do here.
})();
