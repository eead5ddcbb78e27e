// The few things htmx does not do for us: tell the server which timeline events this tab has
// seen when its websocket (re)opens, and reload when the server says the tab fell behind.
(function () {
  "use strict";
  var lastSeq = null;

  // Pushed fragments are rendered once for every tab, so some target elements only one tab has
  // (the card of an operation started there). Drop those parts before htmx swaps, instead of
  // letting it log an error for each.
  htmx.defineExtension("mcp-filter", {
    transformResponse: function (text, xhr) {
      if (xhr) return text;  // only websocket messages come without an XHR
      var tpl = document.createElement("template");
      tpl.innerHTML = text;
      Array.prototype.slice.call(tpl.content.children).forEach(function (child) {
        var spec = child.getAttribute("hx-swap-oob") || "true";
        var colon = spec.indexOf(":");
        var present = colon >= 0 ? document.querySelector(spec.slice(colon + 1))
                                 : (child.id ? document.getElementById(child.id) : null);
        if (!present) child.remove();
      });
      return tpl.innerHTML;
    }
  });
  // Live updates merge, never wipe. A pushed list group or an operation's input requests come whole, but only
  // what changed is put on the page, each piece found by its stable id: open forms, typed values, results and
  // half-written dialogs stay as they are. Marks say what a list change added, changed or removed.
  function mark(node, kind) {
    var old = node.querySelector(":scope > .list-mark, :scope > summary > .list-mark");
    if (old) old.remove();
    if (!kind) { delete node.dataset.mark; return; }
    node.dataset.mark = kind;
    var badge = document.createElement("span");
    badge.className = "badge list-mark"; badge.textContent = kind;
    var head = node.querySelector(":scope > summary") || node.querySelector(":scope > form") || node;
    head.appendChild(badge);
  }
  function setRemoved(node, removed) {
    node.querySelectorAll("button[type=submit]").forEach(function (b) {
      b.disabled = removed;
      if (removed) b.title = "The server no longer lists this"; else b.removeAttribute("title");
    });
  }
  // A changed item gets the new markup, with what the person had there carried over: open, typed values
  // (by field id, which comes from the item's name and the field's), and the result box with its cards.
  function carryValues(values, to) {
    values.forEach(function (v) {
      var twin = to.querySelector("#" + CSS.escape(v.id));
      if (!twin || twin.type !== v.type || twin.type === "hidden") return;
      if (v.type === "checkbox" || v.type === "radio") twin.checked = v.checked; else twin.value = v.value;
    });
  }
  function carryOver(from, to) {
    var values = Array.prototype.map.call(from.querySelectorAll("input[id], select[id], textarea[id]"),
      function (el) { return { id: el.id, type: el.type, checked: el.checked, value: el.value }; });
    if (to.dataset.lazy && (from.open || from.querySelector(":scope > .tool-body .call-form"))) {
      // A tool's form is fetched on first open; the one the person used (or has open, its form perhaps still
      // loading) is fetched now, then filled in. Not left to the toggle event: `to` is not in the page yet.
      loadLazy(to).then(function () { carryValues(values, to); });
    }
    if (from.open) to.open = true;
    carryValues(values, to);
    var oldResult = from.querySelector(".result"), newResult = to.querySelector(".result");
    if (oldResult && newResult) while (oldResult.firstChild) newResult.appendChild(oldResult.firstChild);
  }
  // Bodies fetched on first open: a <details data-lazy="URL"> loads URL into its .lazy-body the first time it
  // opens (a tool's form, a timeline entry's frames). One listener for the page instead of htmx attributes on
  // every row: htmx hashes every attribute of an element it processes, which makes Chromium keep an Attr node
  // for each of them, and rows are what a page has many of. `toggle` does not bubble, hence the capture.
  //
  // Fetched with fetch(), not htmx.ajax: htmx keeps one request in flight per source element and queues only the
  // last of the others, so opening a third form while the first loaded dropped the second for good, and a
  // refused request (a 5xx) swapped nothing and left "loading the form…" forever. Each body says how its request
  // went (data-status: the HTTP status, or "failed"); a failed one says so and is fetched again on the next open.
  var LAZY_TIMEOUT_MS = 30000;
  function loadLazy(details) {
    var url = details.dataset.lazy, body = details.querySelector(":scope > .lazy-body");
    if (!url || !body || details.dataset.loaded) return Promise.resolve();
    details.dataset.loaded = "loading";
    body.replaceChildren();
    body.dataset.status = "loading";
    // A request the console never answers must not leave "loading the form…" for good either: after
    // LAZY_TIMEOUT_MS it is given up, said so, and asked again on the next open.
    var abort = new AbortController(), timer = setTimeout(function () { abort.abort(); }, LAZY_TIMEOUT_MS);
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin", signal: abort.signal }).then(function (r) {
      body.dataset.status = String(r.status);
      return r.text().then(function (text) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        body.innerHTML = text;
        htmx.process(body);
        details.dataset.loaded = "1";
      });
    }).catch(function (err) {
      if (err && err.name === "AbortError") err = new Error("no answer in " + LAZY_TIMEOUT_MS / 1000 + " s");
      if (body.dataset.status === "loading") body.dataset.status = "failed";
      delete details.dataset.loaded;
      var alert = document.createElement("p");
      alert.className = "alert error";
      alert.textContent = "Could not load this (" + (err && err.message || "failed") + "): close it and open it to try again.";
      body.replaceChildren(alert);
    }).finally(function () { clearTimeout(timer); });
  }
  document.addEventListener("toggle", function (evt) {
    var details = evt.target;
    if (details instanceof HTMLDetailsElement && details.open && details.dataset.lazy) loadLazy(details);
  }, true);
  function mergeGroup(old, fresh) {
    var oldItems = old.querySelector(".items"), newItems = fresh.querySelector(".items");
    if (!oldItems || !newItems) { old.replaceWith(fresh); htmx.process(fresh); return; }
    var oldHead = old.querySelector("details.group > summary"), newHead = fresh.querySelector("details.group > summary");
    if (oldHead && newHead) oldHead.innerHTML = newHead.innerHTML;
    old.querySelectorAll("details.group > p.help").forEach(function (n) { n.remove(); });
    var notes = fresh.querySelectorAll("details.group > p.help");
    if (oldHead) for (var i = notes.length - 1; i >= 0; i--) oldHead.after(notes[i]);
    var listed = oldItems.children.length > 0, wanted = {};
    Array.prototype.forEach.call(newItems.children, function (n) { wanted[n.id] = true; });
    var cursor = oldItems.firstElementChild;
    Array.prototype.slice.call(newItems.children).forEach(function (incoming) {
      var here = document.getElementById(incoming.id), node = incoming, kind = null;
      if (here && here.dataset.sig === incoming.dataset.sig) {
        node = here;
        kind = here.dataset.mark === "removed" ? "new" : null;
        if (kind) setRemoved(here, false);
      } else if (here) {
        carryOver(here, incoming); kind = "changed";
        if (cursor === here) cursor = here.nextElementSibling;
        here.remove();
      } else if (listed) {
        kind = "new";
      }
      while (cursor && !wanted[cursor.id]) cursor = cursor.nextElementSibling;  // removed ones keep their place
      if (cursor === node) cursor = node.nextElementSibling;
      else oldItems.insertBefore(node, cursor);
      if (node !== here) htmx.process(node);
      mark(node, kind);
    });
    Array.prototype.forEach.call(oldItems.children, function (n) {
      if (!wanted[n.id] && n.dataset.mark !== "removed") { mark(n, "removed"); setRemoved(n, true); }
    });
  }
  function mergeLists(old, fresh) {
    Array.prototype.slice.call(fresh.children).forEach(function (group) {
      var here = group.id && document.getElementById(group.id);
      if (!here) { old.appendChild(group); htmx.process(group); return; }
      if (group.dataset.merge === "group") mergeGroup(here, group);
      else if (here.outerHTML !== group.outerHTML) { here.replaceWith(group); htmx.process(group); }
    });
  }
  // An operation's dialogs: one per operation, round and input key. A new one is inserted, one no longer
  // asked is removed, and one whose state changed (answered, refused with errors) is replaced — unless the
  // person is typing into it in this tab and has not sent it.
  function mergeInboxOp(inbox, fresh) {
    var here = document.getElementById(fresh.id);
    var slots = Array.prototype.slice.call(fresh.querySelectorAll(".dialog-slot"));
    if (!slots.length) { if (here) here.remove(); return; }
    if (!here) { inbox.appendChild(fresh); htmx.process(fresh); return; }
    var oldHead = here.querySelector(".inbox-head"), newHead = fresh.querySelector(".inbox-head");
    if (oldHead && newHead) { oldHead.replaceWith(newHead); htmx.process(newHead); }
    var wanted = {};
    slots.forEach(function (slot) { wanted[slot.id] = true; });
    here.querySelectorAll(".dialog-slot").forEach(function (slot) { if (!wanted[slot.id]) slot.remove(); });
    var list = here.querySelector(".inbox-dialogs");
    slots.forEach(function (slot) {
      var old = document.getElementById(slot.id);
      if (!old) { list.appendChild(slot); htmx.process(slot); return; }
      if (old.dataset.sig === slot.dataset.sig) return;
      if (old.dataset.typing === "1" && old.dataset.sent !== "1" && !slot.dataset.answered) return;
      old.replaceWith(slot); htmx.process(slot);
    });
  }
  // A timeline entry that changes comes as a new closed summary row; one the person has open stays open
  // (its body is fetched again, so it shows the entry as it is now).
  var reopen = {};
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var target = evt.detail.target;
    var open = target && target.matches && target.matches("#timeline-list > li.entry") &&
      target.querySelector(":scope > details[open]");
    if (open) reopen[target.id] = true;
  });
  document.addEventListener("htmx:oobAfterSwap", function () {
    Object.keys(reopen).forEach(function (id) {
      var li = document.getElementById(id), details = li && li.querySelector(":scope > details");
      if (!details || details.open) return;
      details.open = true;  // its toggle fetches the body again (data-lazy)
    });
    reopen = {};
  });
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var fresh = evt.detail.fragment && evt.detail.fragment.firstElementChild, target = evt.detail.target;
    if (!fresh || !target) return;
    if (fresh.dataset.merge === "inbox-op") mergeInboxOp(target, fresh);
    else if (fresh.dataset.merge === "group" && target.id === fresh.id) mergeGroup(target, fresh);
    else if (fresh.id === "lists" && target.id === "lists") mergeLists(target, fresh);
    else return;
    evt.detail.shouldSwap = false;
    searchItems();
  });
  document.addEventListener("input", function (evt) {
    var slot = evt.target.closest && evt.target.closest(".dialog-slot");
    if (slot) slot.dataset.typing = "1";
  });
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var slot = evt.target.closest && evt.target.closest(".dialog-slot");
    if (slot) slot.dataset.sent = "1";
  });
  // An action whose answer swaps nothing (hx-swap="none": it comes back over the live feed) would fail silently:
  // a refusal (a viewer's link is read-only, an answer for a round already past) is said in #action-problems.
  // A new action clears what the last one was refused for: its own answer may never reach the document (a push
  // can replace the button before the response comes, and a detached element's events do not bubble up here).
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt, box = document.getElementById("action-problems");
    var swapper = box && elt && elt.closest && elt.closest("[hx-swap]");
    if (swapper && swapper.getAttribute("hx-swap") === "none") box.replaceChildren();
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    var xhr = evt.detail.xhr, elt = evt.detail.elt, box = document.getElementById("action-problems");
    if (!box || !xhr || !elt || !elt.closest) return;
    var swapper = elt.closest("[hx-swap]");
    if (!swapper || swapper.getAttribute("hx-swap") !== "none") return;
    if (xhr.status < 400) { box.replaceChildren(); return; }
    var alert = document.createElement("p");
    alert.className = "alert error";
    alert.setAttribute("role", "alert");
    alert.textContent = refusalText(xhr);
    box.replaceChildren(alert);
  });
  // What a refusal says, as text only: the fragment is parsed in an inert document and only its text is kept.
  function refusalText(xhr) {
    var said = new DOMParser().parseFromString(xhr.responseText || "", "text/html").body.textContent || "";
    return said.trim() || ("Error " + xhr.status + ": the console refused this action.");
  }
  // A card's Cancel and Enable and retry (data-refusal-beside) swap the card for their answer; a refusal (409:
  // the operation is past that, perhaps in another tab) would swap the whole card for the bare error. It is said
  // beside the button instead, and the card stays until its push shows the operation as it is.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt, note = elt && elt.nextElementSibling;
    if (note && note.classList.contains("action-problem")) note.remove();
  });
  document.addEventListener("htmx:beforeSwap", function (evt) {
    // Fired on the target (the card): the button that asked is the request's own element.
    var elt = evt.detail.requestConfig && evt.detail.requestConfig.elt, xhr = evt.detail.xhr;
    if (!xhr || xhr.status < 400 || !elt || !elt.hasAttribute || !elt.hasAttribute("data-refusal-beside")) return;
    evt.detail.shouldSwap = false;
    var note = document.createElement("span");
    note.className = "action-problem";
    note.setAttribute("role", "alert");
    note.textContent = refusalText(xhr);
    elt.after(note);
  });
  // Forms pushed to every tab alike (client settings, the subscription form) are marked data-keep-typed: one
  // that a person here has changed and not sent stays as it is when another tab's change is pushed (its node
  // is moved into the fresh copy), so a push never wipes what is being written. Sending it makes it fresh again.
  function markTyped(evt) {
    var kept = evt.target.closest && evt.target.closest("[data-keep-typed][id]");
    if (kept) kept.dataset.typed = "1";
  }
  document.addEventListener("input", markTyped);
  document.addEventListener("change", markTyped);
  document.addEventListener("htmx:beforeRequest", function (evt) {
    // A form that asks only for a preview (the secret values listed as a target is typed) has sent nothing.
    if (evt.target.hasAttribute && evt.target.hasAttribute("data-preview-only")) return;
    var kept = evt.target.closest && evt.target.closest("[data-keep-typed][id]");
    if (kept) kept.dataset.typed = "0";  // sent: the next copy pushed is the one to show
  });
  // Typed here and not sent. What the listeners saw decides; a form they never saw (typed while the page was still
  // loading, before this script ran) is typed when a field no longer holds what the page came with.
  function typedHere(form) {
    if (form.dataset.typed) return form.dataset.typed === "1";
    return Array.prototype.some.call(form.querySelectorAll("input, textarea, select"), function (field) {
      if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
      if (field.tagName === "SELECT") {
        var options = Array.prototype.slice.call(field.options);
        if (!options.some(function (o) { return o.defaultSelected; })) {  // the browser's own pick: the first one
          return field.multiple ? field.selectedIndex >= 0 : field.selectedIndex > 0;
        }
        return options.some(function (o) { return o.selected !== o.defaultSelected; });
      }
      return field.value !== field.defaultValue;
    });
  }
  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var fragment = evt.detail.fragment, target = evt.detail.target;
    if (!fragment || !target || !fragment.querySelectorAll) return;
    var top = fragment.firstElementChild;
    if (top && top.id && top.id === target.id && top.hasAttribute("data-keep-typed")) {
      if (typedHere(target)) evt.detail.shouldSwap = false;
      return;
    }
    Array.prototype.forEach.call(fragment.querySelectorAll("[data-keep-typed][id]"), function (fresh) {
      var old = document.getElementById(fresh.id);
      if (old && target.contains(old) && typedHere(old)) fresh.replaceWith(old);
    });
  });
  // The tab that started an operation brings its dialogs into view once both its card and they are here.
  var bringInbox = null;
  function showInbox() {
    var group = bringInbox && document.getElementById("inbox-op-" + bringInbox);
    if (!group) return;
    bringInbox = null;
    group.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("htmx:afterSwap", function (evt) {
    var card = evt.detail.target && evt.detail.target.querySelector &&
      evt.detail.target.querySelector(".operation[data-status=awaiting_input]");
    if (card && evt.detail.xhr) { bringInbox = card.dataset.op; showInbox(); }
  });
  document.addEventListener("htmx:wsAfterMessage", showInbox);

  var SEQ = /^\s*<div id="ws-seq"[^>]*data-seq="(\d+)"( data-reset="1")?/;

  document.addEventListener("htmx:wsOpen", function (evt) {
    var root = document.getElementById("session-root");
    if (lastSeq === null) lastSeq = parseInt((root && root.dataset.seq) || "0", 10);
    evt.detail.socketWrapper.send(JSON.stringify({ last_seq: lastSeq }), root);
    document.body.dataset.ws = "open";
  });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.ws = "closed"; });
  // A filter swaps the timeline pane in place, rendered up to its own seq: what the feed pushed up to there is in it.
  document.addEventListener("htmx:afterSwap", function (evt) {
    var pane = document.getElementById("timeline-pane");
    var seq = pane && parseInt(pane.dataset.seq || "", 10);
    if (seq && evt.detail.target && evt.detail.target.id === "timeline-pane" && (lastSeq === null || seq > lastSeq)) {
      lastSeq = seq;
    }
  });

  document.addEventListener("htmx:wsBeforeMessage", function (evt) {
    var m = SEQ.exec(evt.detail.message);
    if (!m) return;
    if (m[2]) { evt.preventDefault(); window.location.reload(); return; }
    var seq = parseInt(m[1], 10);
    if (lastSeq !== null && seq <= lastSeq) { evt.preventDefault(); return; }  // already shown
    lastSeq = seq;
  });
  // The stderr box keeps its last data-max lines (one <span> each): a flooding server cannot grow the DOM.
  document.addEventListener("htmx:wsAfterMessage", function () {
    var box = document.getElementById("stderr-lines");
    if (!box) return;
    var extra = box.children.length - parseInt(box.dataset.max || "500", 10);
    for (var i = 0; i < extra; i++) box.removeChild(box.firstElementChild);
  });
  // One alert paragraph at the top of the session, made once and reused (its text is set by the caller).
  function topAlert(id, className) {
    var note = document.getElementById(id);
    if (!note) {
      note = document.createElement("p");
      note.id = id; note.className = className; note.setAttribute("role", "alert");
      var root = document.getElementById("session-root") || document.body;
      root.insertBefore(note, root.firstChild);
    }
    return note;
  }

  // A link revoked or expired while the page is open (the server closes the socket with 4003 and a reason):
  // say so plainly and stop offering actions; nothing this page could send would be accepted any more.
  document.addEventListener("htmx:wsClose", function (evt) {
    var e = evt.detail && evt.detail.event;
    if (!e || e.code !== 4003 || document.body.classList.contains("role-owner")) return;
    document.body.classList.add("link-ended");
    var note = topAlert("link-ended", "alert error");
    var why = /expired/.test(e.reason || "") ? "has expired" :
      (/deleted/.test(e.reason || "") ? "no longer works: the session was deleted" : "was revoked");
    note.textContent = "This share link " + why + ". The page no longer updates and can send nothing; " +
      "ask the owner for a new link.";
  });

  // Tool search: a filter over the lists already on the page (name, title, description); no request.
  function searchItems() {
    var box = document.getElementById("item-search");
    if (!box) return;
    var q = box.value.trim().toLowerCase(), shown = 0;
    document.querySelectorAll("#lists .item").forEach(function (item) {
      var hit = !q || item.textContent.toLowerCase().indexOf(q) >= 0 ||
        (item.dataset.tool || "").toLowerCase().indexOf(q) >= 0;
      item.classList.toggle("search-miss", !hit);
      if (hit) shown++;
    });
    var none = document.getElementById("item-search-none");
    if (none) none.hidden = !q || shown > 0;
  }
  document.addEventListener("input", function (evt) { if (evt.target.id === "item-search") searchItems(); });
  document.addEventListener("htmx:afterSettle", searchItems);  // a refreshed list keeps the search applied

  // The timeline filter is applied by the server on load (it is in the URL); entries that arrive live are
  // checked here by the same rules, from the attributes each entry carries.
  var GROUPS = { ok: ["ok", "complete"], pending: ["pending", "running", "awaiting_input", "input_required"],
                 error: ["error", "tool_error", "failed", "protocol_error", "timeout", "cancelled", "abandoned"] };
  function filterEntries() {
    var list = document.getElementById("timeline-list");
    if (!list || !(list.dataset.fMethod || list.dataset.fStatus || list.dataset.fQ || list.dataset.fFindings)) return;
    var m = list.dataset.fMethod, st = list.dataset.fStatus, q = (list.dataset.fQ || "").toLowerCase();
    var fd = list.dataset.fFindings;
    Array.prototype.forEach.call(list.children, function (li) {
      var ok = (!m || li.dataset.method === m) &&
        (!st || (GROUPS[st] || [st]).indexOf(li.dataset.status || "") >= 0) &&
        (!q || li.textContent.toLowerCase().indexOf(q) >= 0) &&
        (!fd || !!li.querySelector(".findings-badge"));
      li.classList.toggle("filtered-out", !ok);
    });
  }
  document.addEventListener("htmx:wsAfterMessage", filterEntries);

  // JSON mode sends the JSON, not the form: the form's own required fields must not block the submit.
  document.addEventListener("change", function (evt) {
    if (evt.target.matches && evt.target.matches("[data-json-mode]") && evt.target.form) {
      evt.target.form.noValidate = evt.target.checked;
    }
  });

  // A socket the server refused (too many open for this credential, or in all) says why, and stays closed.
  document.addEventListener("htmx:wsClose", function (evt) {
    var e = evt.detail && evt.detail.event;
    if (!e || e.code !== 4029) return;
    var note = topAlert("ws-refused", "notice warning");
    note.textContent = "Live updates are off: " + (e.reason || "the server refused this tab's websocket") +
      ". Close other tabs of this console and reload.";
  });
  // The page holds a bounded window of the timeline: live entries push old ones out, and the
  // "Load older entries" button brings them back on demand. Cost stays flat as a session grows.
  document.addEventListener("htmx:wsAfterMessage", function () {
    var list = document.getElementById("timeline-list");
    if (!list) return;
    var limit = parseInt(list.dataset.window || "200", 10);
    // Live inserts bring the whitespace around each entry too: drop it, or it grows one node per call.
    Array.prototype.slice.call(list.childNodes).forEach(function (n) { if (n.nodeType !== 1) list.removeChild(n); });
    var extra = list.children.length - limit;
    if (extra <= 0) return;
    for (var i = 0; i < extra; i++) list.removeChild(list.lastElementChild);
    var oldest = list.lastElementChild && list.lastElementChild.dataset.seq;
    var older = document.getElementById("older");
    if (!oldest || !older) return;
    var btn = document.createElement("button");
    btn.id = "older"; btn.className = "link"; btn.textContent = "Load older entries";
    // A filtered page pages through the filter's older matches (the server searches the whole session).
    var f = {method: list.dataset.fMethod, status: list.dataset.fStatus, q: list.dataset.fQ,
             findings: list.dataset.fFindings};
    var fq = Object.keys(f).filter(function (k) { return f[k]; })
      .map(function (k) { return "&" + k + "=" + encodeURIComponent(f[k]); }).join("");
    btn.setAttribute("hx-get", "/sessions/" + list.dataset.session + "/timeline?before=" + oldest + fq);
    btn.setAttribute("hx-target", "#timeline-list"); btn.setAttribute("hx-swap", "beforeend");
    older.replaceWith(btn);
    htmx.process(btn);
  });

  // Deadlines of running requests: the server renders when it will give up (data-due, epoch ms);
  // count down from it once a second, no polling. A progress or log line pushed for the request
  // restarts the idle part here as the frame did on the server (never past the overall maximum).
  function tickDeadlines() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Math.max(0, Math.round((parseInt(el.dataset.due, 10) - now) / 1000));
      var out = el.querySelector(".deadline-left");
      if (out && out.textContent !== String(left)) out.textContent = String(left);
    });
  }
  setInterval(tickDeadlines, 1000);
  document.addEventListener("htmx:oobAfterSwap", function (evt) {
    var swapped = evt.detail.target;
    if (!swapped || !swapped.id || !/^(progress|logs)-/.test(swapped.id)) return;
    var live = document.getElementById(swapped.id);  // an outerHTML swap detached the old target
    var holder = live && live.closest(".entry, .operation");
    var el = holder && holder.querySelector("[data-deadline]");
    if (!el) return;
    var due = Math.min(Date.now() + parseFloat(el.dataset.idleS) * 1000, parseInt(el.dataset.maxDue, 10));
    if (due > parseInt(el.dataset.due, 10)) el.dataset.due = String(due);
    tickDeadlines();
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

  // "Fill with defaults": put the schema's defaults back in every field (empty where none),
  // whatever the form shows now (a refused draft included).
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-fill-defaults]");
    if (!btn || !btn.form) return;
    btn.form.querySelectorAll("[data-default]").forEach(function (el) {
      if (el.type === "checkbox") el.checked = el.dataset.default === "true";
      else el.value = el.dataset.default;
    });
    checkGroups(btn.form);
  });

  // ---- Generated forms (issue 34): nested items, the JSON box kept in step with the form, huge schemas,
  // resource templates and completions. The server reads and renders every form (app/web/form_tree.py,
  // form_routes.py); this part only moves inputs around and asks it.
  function sessionOf(form) { return (form.getAttribute("hx-post") || "").split("/")[2] || ""; }
  function post(url, params) {
    return fetch(url, { method: "POST", credentials: "same-origin", body: params,
                        headers: { "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true" } });
  }
  // An input inside a nested field is named by its path (`at:["tags",0,"name"]`): the steps are the elements with
  // data-seg up to the field's root, an item's step being its place among its siblings.
  function isItem(n) { return n.nodeType === 1 && n.dataset.seg === "#"; }
  function segPath(el, root) {
    var segs = [], node = el.closest("[data-seg]");
    while (node && root.contains(node)) {
      if (node.dataset.seg === "#") segs.push(Array.prototype.filter.call(node.parentElement.children, isItem).indexOf(node));
      else segs.push(JSON.parse(node.dataset.seg));
      node = node.parentElement.closest("[data-seg]");
    }
    return segs.reverse();
  }
  function renumber(root) {
    root.querySelectorAll("[data-path-named]").forEach(function (el) { el.name = "at:" + JSON.stringify(segPath(el, root)); });
    root.querySelectorAll("fieldset[data-array]").forEach(function (fs) {
      var list = fs.querySelector(":scope > ol.array-items"), items = Array.prototype.filter.call(list.children, isItem);
      items.forEach(function (li, i) {
        li.querySelectorAll("[data-item-no]").forEach(function (s) { if (s.closest("li") === li) s.textContent = String(i + 1); });
        var rm = li.querySelector(":scope > [data-remove-item]");
        if (rm) rm.setAttribute("aria-label", "Remove " + fs.dataset.label + " item " + (i + 1));
      });
      var max = parseInt(fs.dataset.maxItems || "", 10), add = fs.querySelector(":scope > [data-add-item]");
      if (add) add.disabled = !isNaN(max) && items.length >= max;
    });
  }
  var cloned = 0;
  document.addEventListener("click", function (evt) {
    var add = evt.target.closest && evt.target.closest("[data-add-item]");
    var rm = evt.target.closest && evt.target.closest("[data-remove-item]");
    if (!add && !rm) return;
    var root = (add || rm).closest("[data-tree-root]");
    if (add) {
      var fs = add.closest("fieldset[data-array]"), tpl = fs.querySelector(":scope > template[data-item-template]");
      var piece = tpl.content.cloneNode(true), n = "n" + (++cloned);
      piece.querySelectorAll("[id], [for], [aria-describedby]").forEach(function (el) {
        ["id", "for", "aria-describedby"].forEach(function (a) {
          if (el.hasAttribute(a)) el.setAttribute(a, el.getAttribute(a).split("__n__").join(n));
        });
      });
      var li = piece.firstElementChild;
      fs.querySelector(":scope > ol.array-items").appendChild(piece);
      renumber(root);
      var first = li && li.querySelector("input:not([type=hidden]), select, textarea");
      if (first) first.focus();
    } else {
      rm.closest("li").remove();
      renumber(root);
    }
    fieldsEdited(root.closest("form"));
  });

  // JSON mode. The box starts as the form's arguments; while it is open, an edit of the form rewrites it
  // (what parse_form makes of the form, the arguments a call in form mode sends) and an edit of the box is put
  // into the form when the form can show that JSON exactly, else the box says why. A call in JSON mode waits for
  // the box to catch up with the last form edit, and is refused while the form holds something the box cannot.
  var jsonState = new WeakMap();
  function stateOf(form) {
    var st = jsonState.get(form);
    if (!st) { st = { timer: null, seq: 0, pending: null, last: null }; jsonState.set(form, st); }
    return st;
  }
  function jsonParts(form) {
    var box = form.querySelector("[data-json-box]");
    return { box: box, note: box && document.getElementById(box.id + "-note"),
             mode: form.querySelector("[data-json-mode]"), details: box && box.closest("details") };
  }
  function jsonOn(form) { var p = jsonParts(form); return !!p.box && (p.details.open || p.mode.checked); }
  function say(note, text, bad) { if (note) { note.textContent = text; note.classList.toggle("error", !!bad); } }
  // An empty top-level field (`arg.<name>`) is left out whatever its kind (a tool's or a dialog's), so it need not
  // be sent: a form of
  // thousands of fields would pass the console's limit of 1,000 fields a request with empty ones alone.
  function emptyFlat(k, v) { return v === "" && k.indexOf("arg.") === 0; }
  function ownInputs(form) {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (v, k) {
      if (typeof v === "string" && !emptyFlat(k, v) && (k === "tool" || /^(arg\.|at:|present\.)/.test(k))) params.append(k, v);
    });
    return params;
  }
  document.addEventListener("htmx:configRequest", function (evt) {
    var form = evt.detail.elt, data = evt.detail.formData;
    if (!form.matches || !form.matches("form[data-tool-form], form.dialog-form") || !data) return;
    var drop = [];
    data.forEach(function (v, k) { if (emptyFlat(k, v)) drop.push(k); });
    drop.forEach(function (k) { data.delete(k); });
  });
  function formToJson(form) {
    var st = stateOf(form), p = jsonParts(form), seq = ++st.seq;
    clearTimeout(st.timer); st.timer = null;
    st.pending = post("/sessions/" + sessionOf(form) + "/tools/arguments", ownInputs(form))
      .then(function (r) { return r.json(); }).then(function (data) {
        if (seq !== st.seq) return;
        if (data.ok) {
          p.box.value = data.json; delete p.box.dataset.stale;
          say(p.note, data.missing.length ? "Required and still empty: " + data.missing.join(", ") + "." : "");
        } else {
          p.box.dataset.stale = "1";
          var first = Object.keys(data.errors)[0];
          say(p.note, "The form has a value the JSON cannot show yet (" + first + ": " + data.errors[first] +
              "): the JSON below is not what the form says.", true);
        }
      }).catch(function () { if (seq === st.seq) { p.box.dataset.stale = "1"; say(p.note, "Could not read the form.", true); } })
      .finally(function () { if (seq === st.seq) st.pending = null; });
    return st.pending;
  }
  function fieldsEdited(form) {
    if (!form || !form.matches("[data-tool-form]")) return;
    var st = stateOf(form);
    st.last = "form"; st.seq++;  // JSON on its way into the form would now overwrite this edit: it is dropped
    if (!jsonOn(form)) return;
    clearTimeout(st.timer);
    st.timer = setTimeout(function () { formToJson(form); }, 250);
  }
  function swapFields(form, html) {
    var old = form.querySelector("[data-form-fields]"), tpl = document.createElement("template");
    tpl.innerHTML = html;
    var fresh = tpl.content.querySelector("[data-form-fields]");
    if (!old || !fresh) return;
    old.replaceWith(fresh);
    htmx.process(fresh);
  }
  function jsonToForm(form) {
    var st = stateOf(form), p = jsonParts(form), seq = ++st.seq;
    var params = ownInputs(form);
    params.set("source", "json"); params.set("json", p.box.value); params.set("uid", form.dataset.uid || "tool");
    return post("/sessions/" + sessionOf(form) + "/tools/fields", params).then(function (r) {
      return r.text().then(function (text) {
        if (seq !== st.seq) return;
        delete p.box.dataset.stale;
        if (r.ok) { swapFields(form, text); say(p.note, ""); form.querySelector("[data-form-fields]").classList.remove("out-of-step"); return; }
        var why = "This JSON does not fit the form.";
        try { why = JSON.parse(text).why || why; } catch (e) { /* the status says enough */ }
        say(p.note, why + " The form below does not show it; in JSON mode the JSON is what is sent.", true);
        var fields = form.querySelector("[data-form-fields]");
        if (fields) fields.classList.add("out-of-step");
      });
    });
  }
  document.addEventListener("input", function (evt) {
    var form = evt.target.form;
    if (!form || !form.matches("[data-tool-form]")) return;
    if (evt.target.matches("[data-json-box]")) {
      var st = stateOf(form);
      st.last = "json"; clearTimeout(st.timer); st.seq++;  // a form edit still on its way is superseded
      delete form.querySelector("[data-json-box]").dataset.stale;  // what is typed here is now the latest
      // Typing JSON means sending it: left unticked, a JSON the form cannot show was silently not what Call sent.
      var parts = jsonParts(form);
      if (parts.mode && !parts.mode.checked) parts.mode.checked = true;
      st.timer = setTimeout(function () { st.timer = null; jsonToForm(form); }, 300);
    } else if (evt.target.closest("[data-form-fields]")) {
      fieldsEdited(form);
    }
  });
  document.addEventListener("change", function (evt) {
    var form = evt.target.form;
    if (!form || !form.matches("[data-tool-form]")) return;
    if (evt.target.matches("[data-json-mode]")) {
      if (evt.target.checked && stateOf(form).last !== "json") formToJson(form);
    } else if (evt.target.closest("[data-form-fields]") && evt.target.tagName === "SELECT") {
      fieldsEdited(form);  // a select may change without an input event in some browsers
    }
  });
  document.addEventListener("toggle", function (evt) {
    var details = evt.target, form = details.closest && details.closest("form[data-tool-form]");
    if (form && details.matches("details.json-mode") && details.open && stateOf(form).last !== "json") formToJson(form);
  }, true);
  document.addEventListener("htmx:confirm", function (evt) {
    var form = evt.target;
    if (!form.matches || !form.matches("form[data-tool-form]")) return;
    var p = jsonParts(form), st = stateOf(form);
    if (!p.mode || !p.mode.checked) return;
    var waiting = st.last === "form" && (st.timer || st.pending);
    if (!waiting && !p.box.dataset.stale) return;
    evt.preventDefault();
    var ready = waiting ? formToJson(form) : Promise.resolve();
    ready.then(function () {
      if (p.box.dataset.stale) { say(p.note, "Not sent: " + p.note.textContent, true); return; }
      evt.detail.issueRequest(true);
    });
  });
  // A huge schema: its first fields only, until every field is asked for (with what was typed so far).
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest && evt.target.closest("[data-show-all-fields]");
    if (!btn) return;
    var form = btn.closest("form"), params = ownInputs(form);
    params.set("all", "1"); params.set("uid", form.dataset.uid || "tool");
    btn.disabled = true; btn.textContent = "Loading every field…";
    post("/sessions/" + sessionOf(form) + "/tools/fields", params).then(function (r) {
      return r.text().then(function (text) { if (r.ok) swapFields(form, text); else btn.textContent = "Could not load the fields"; });
    });
  });

  // Resource templates: the URI the fields expand to (RFC 6570, expanded by the console) shown as they are typed.
  var previewTimers = new WeakMap();
  function previewTemplate(form) {
    var out = form.querySelector("[data-template-preview]");
    var params = new URLSearchParams();
    new FormData(form).forEach(function (v, k) { if (typeof v === "string" && (k === "template" || k.indexOf("var.") === 0)) params.append(k, v); });
    fetch("/sessions/" + sessionOf(form) + "/templates/expand?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.json(); }).then(function (data) {
        out.textContent = data.problem || data.uri;
        out.classList.toggle("error", !!data.problem);
      }).catch(function () { out.textContent = "(the console did not answer)"; });
  }
  document.addEventListener("input", function (evt) {
    var form = evt.target.form;
    if (!form || !form.matches("[data-template-form]")) return;
    clearTimeout(previewTimers.get(form));
    previewTimers.set(form, setTimeout(function () { previewTemplate(form); }, 150));
  });

  // Completions: a field marked data-complete asks the server (completion/complete, debounced) as it is typed,
  // with the form's other completable fields as context.arguments, and offers the answer in its datalist.
  var completing = new WeakMap();
  function complete(input) {
    var form = input.form, list = document.getElementById(input.getAttribute("list"));
    if (!form || !list) return;
    var seq = (completing.get(input) || { seq: 0 }).seq + 1;
    completing.set(input, { seq: seq });
    var params = new URLSearchParams();
    // A template's ref sits once on its form (every variable repeating a long uriTemplate grew the page with it).
    var ref = input.dataset.completeRef !== undefined ? input.dataset.completeRef : form.dataset.completeRef;
    params.set("ref_type", input.dataset.complete); params.set("ref", ref);
    params.set("argument", input.dataset.completeArg); params.set("value", input.value);
    form.querySelectorAll("[data-complete-arg]").forEach(function (other) {
      if (other !== input && other.value) params.set("ctx." + other.dataset.completeArg, other.value);
    });
    post("/sessions/" + sessionOf(form) + "/complete/suggest", params).then(function (r) { return r.json(); })
      .then(function (data) {
        if ((completing.get(input) || {}).seq !== seq) return;
        list.replaceChildren();
        (data.values || []).forEach(function (v) { var o = document.createElement("option"); o.value = v; list.appendChild(o); });
        list.dataset.answered = String(seq);
      }).catch(function () { /* refused (a viewer's link) or offline: no suggestions, typing goes on */ });
  }
  document.addEventListener("input", function (evt) {
    var input = evt.target;
    if (!input.matches || !input.matches("input[data-complete]")) return;
    var st = completing.get(input) || { seq: 0 };
    clearTimeout(st.timer);
    st.timer = setTimeout(function () { complete(input); }, 250);
    completing.set(input, st);
  });
  document.addEventListener("focusin", function (evt) {
    var input = evt.target;
    if (input.matches && input.matches("input[data-complete]") && !input.dataset.asked) {
      input.dataset.asked = "1";
      complete(input);  // offered before the first keystroke too
    }
  });

  // Copy buttons: fetch the text (e.g. a cURL command) on click, then put it on the clipboard.
  document.addEventListener("click", function (evt) {
    var btn = evt.target.closest("[data-copy-url],[data-copy-from]");
    if (!btn) return;
    var done = function (text) {
      var label = btn.dataset.label || (btn.dataset.label = btn.textContent);
      var ok = function () {  // said for a moment, then the button reads as before (a second copy is said again)
        btn.dataset.copied = "1"; btn.textContent = "Copied";
        clearTimeout(btn.copiedTimer);
        btn.copiedTimer = setTimeout(function () { btn.textContent = label; }, 2000);
      };
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
  // A session page framed by a workspace of this console stays a pane whatever it navigates to (a Connect, a retry,
  // an edited target's redirect without ?pane=1).
  try {
    if (window.top !== window.self && window.parent.document.getElementById("workspace")) {
      document.body.classList.add("in-pane");
    }
  } catch (e) { /* framed by another origin: not a pane */ }
  // MCP Apps' side of the tab (apps.js, ~14 KB) is fetched once the page lists an app: most pages never do (a
  // call's push adds the first one to #apps-list, whose children apps.js mounts when it starts).
  (function watchApps() {
    var list = document.getElementById("apps-list");
    if (!list) return;
    function want() {
      if (!list.querySelector(".app")) return false;
      var script = document.createElement("script");
      script.src = "/static/apps.js";
      document.head.appendChild(script);
      return true;
    }
    if (want()) return;
    var watcher = new MutationObserver(function () { if (want()) watcher.disconnect(); });
    watcher.observe(list, { childList: true });
  })();
  // The session switcher lies over the page while open: a click elsewhere or Escape closes it, as a menu does.
  document.addEventListener("click", function (evt) {
    var open = document.querySelector("details.switcher[open]");
    if (open && !open.contains(evt.target)) open.open = false;
  });
  document.addEventListener("keydown", function (evt) {
    var open = document.querySelector("details.switcher[open]");
    if (open && evt.key === "Escape") { open.open = false; open.querySelector("summary").focus(); }
  });
})();
