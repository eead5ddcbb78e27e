// Loaded before htmx. To find `hx-on:*` attributes, htmx 2 runs the XPath `.//*[@*[starts-with(name(), "hx-on:") …]]`
// over every subtree it processes (the whole page on load, then every swapped fragment). Walking the `@*` axis
// makes Chromium create an Attr node for every attribute it passes, and the element keeps them for as long as it
// lives: about 950 extra DOM nodes on a session page before any call, more with every swapped row. This gives
// htmx the same answer (the descendants that carry an hx-on attribute, in document order) from
// getAttributeNames(), which returns strings and creates no nodes. Any other expression goes to the browser.
(function () {
  "use strict";
  if (typeof XPathEvaluator === "undefined") return;
  var original = XPathEvaluator.prototype.createExpression;
  var prefixes = ["hx-on:", "data-hx-on:", "hx-on-", "data-hx-on-"];
  function hasHxOn(el) {
    var names = el.getAttributeNames();
    for (var i = 0; i < names.length; i++) {
      for (var j = 0; j < prefixes.length; j++) if (names[i].lastIndexOf(prefixes[j], 0) === 0) return true;
    }
    return false;
  }
  var lean = {
    evaluate: function (node) {
      var found = [];
      if (node && node.querySelectorAll) {
        var all = node.querySelectorAll("*");
        for (var i = 0; i < all.length; i++) if (hasHxOn(all[i])) found.push(all[i]);
      }
      var next = 0;
      return { iterateNext: function () { return next < found.length ? found[next++] : null; } };
    }
  };
  XPathEvaluator.prototype.createExpression = function (expression, resolver) {
    if (typeof expression === "string" && expression.indexOf('@*[ starts-with(name(), "hx-on:")') >= 0) return lean;
    return original.call(this, expression, resolver);
  };
})();
