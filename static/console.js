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
  // Multi-select groups: the browser has no built-in minItems/maxItems check, so set one.
  function checkGroups(form) {
    form.querySelectorAll("fieldset[data-multi]").forEach(function (fs) {
      var boxes = fs.querySelectorAll("input[type=checkbox]");
      if (!boxes.length) return;
      var min = parseInt(fs.dataset.minItems || "", 10), max = parseInt(fs.dataset.maxItems || "", 10);
      var n = Array.prototype.filter.call(boxes, function (b) { return b.checked; }).length;
      var msg = "";
      if (n === 0 && fs.dataset.required !== "1") msg = "";
      else if (!isNaN(min) && n < min) msg = "Choose at least " + min + ".";
      else if (!isNaN(max) && n > max) msg = "Choose at most " + max + ".";
      boxes[0].setCustomValidity(msg);
      var err = fs.parentElement.querySelector(".field-error");
      if (err) err.textContent = msg;
    });
  }
  document.addEventListener("change", function (evt) { if (evt.target.form) checkGroups(evt.target.form); });
  document.addEventListener("htmx:validation:validate", function (evt) {
    if (evt.target.tagName === "FORM") checkGroups(evt.target);
  });

  // Copy buttons: fetch the text (e.g. a cURL command) on click, then put it on the clipboard.
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-copy-url],[data-copy-from]");
    if (!btn) return;
    var done = function (text) {
      var ok = function () { btn.dataset.copied = "1"; btn.textContent = "Copied"; };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(ok, ok);
      else { var ta = document.createElement("textarea"); ta.value = text; document.body.appendChild(ta);
             ta.select(); document.execCommand("copy"); ta.remove(); ok(); }
      btn.dataset.copiedText = text;
    };
    if (btn.dataset.copyFrom) {
      var src = btn.parentElement.querySelector(btn.dataset.copyFrom);
      if (src) done(src.value || src.textContent);
    } else {
      fetch(btn.dataset.copyUrl, { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(done);
    }
  });
})();
