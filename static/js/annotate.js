// The labelling page: keyboard shortcuts and the time the page was visible.
// Without this file the page works the same (plain form posts); a label's time is then 0.
//   v, i, u      label VALID, INVALID, UNSURE (clicks #label-valid, #label-invalid, #label-unsure)
//   n or →       next patch (#annotate-next);  p or ←  previous patch (#annotate-prev)
//   z            undo the label just given (#annotate-undo, shown after a label; u is UNSURE)
//   Esc          leave the note field (shortcuts are off while typing in it)
//   0–9          rate the highlighted dimension (.dimension-current) and move to the next one,
//                when the campaign rates dimensions; clicking or tabbing into a dimension
//                highlights it (its radio buttons keep the browser's own arrow keys)
(function () {
  "use strict";
  var root = document.getElementById("annotate");
  if (!root) return;
  var form = document.getElementById("annotate-form");
  var seconds = document.getElementById("annotate-seconds");
  var LABELS = { v: "label-valid", i: "label-invalid", u: "label-unsure" };
  var NAVIGATION = { n: "annotate-next", ArrowRight: "annotate-next", p: "annotate-prev", ArrowLeft: "annotate-prev" };

  // Time counts only while the page is visible: a tab left in the background is not work.
  var visibleMs = 0;
  var since = document.visibilityState === "visible" ? performance.now() : null;
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      if (since === null) since = performance.now();
    } else if (since !== null) {
      visibleMs += performance.now() - since;
      since = null;
    }
  });
  function elapsedSeconds() {
    return (visibleMs + (since === null ? 0 : performance.now() - since)) / 1000;
  }

  var sent = false;
  // Back to this page from the next one (the browser's back/forward cache): a new visit,
  // which may label again and whose time starts now.
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) return;
    sent = false;
    visibleMs = 0;
    since = document.visibilityState === "visible" ? performance.now() : null;
  });
  if (form) {
    form.addEventListener("submit", function (event) {
      if (sent) { event.preventDefault(); return; }  // one label per page view
      sent = true;
      if (seconds) seconds.value = elapsedSeconds().toFixed(1);
    });
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName;
    if (tag === "INPUT" && target.type === "radio") return false;  // a rating: keys stay on
    return target.isContentEditable || tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT";
  }

  // Dimensions: the digits rate the highlighted one, which then moves to the next.
  var dimensions = Array.prototype.slice.call(document.querySelectorAll("#annotate-dimensions .dimension"));
  var current = 0;
  function highlight(index) {
    current = Math.max(0, Math.min(index, dimensions.length - 1));
    dimensions.forEach(function (fieldset, i) {
      fieldset.classList.toggle("dimension-current", i === current);
      if (i === current) fieldset.setAttribute("aria-current", "true");
      else fieldset.removeAttribute("aria-current");
    });
  }
  if (dimensions.length) {
    // Start at the first dimension not yet rated.
    var unrated = dimensions.findIndex(function (fieldset) {
      var checked = fieldset.querySelector("input:checked");
      return !checked || checked.value === "";
    });
    highlight(unrated < 0 ? 0 : unrated);
    dimensions.forEach(function (fieldset, i) {
      fieldset.addEventListener("focusin", function () { highlight(i); });
      fieldset.addEventListener("click", function () { highlight(i); });
    });
  }
  function rate(digit) {
    var fieldset = dimensions[current];
    if (!fieldset || fieldset.disabled || fieldset.closest("fieldset:disabled") || sent) return false;
    var radio = fieldset.querySelector('input[type="radio"][value="' + digit + '"]');
    if (!radio) return false;  // off this dimension's scale: nothing happens
    radio.checked = true;
    if (current < dimensions.length - 1) highlight(current + 1);
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (dimensions.length && /^[0-9]$/.test(key)) {
      if (rate(key)) event.preventDefault();
      return;
    }
    // On a rating, the arrows are the browser's: they move within the dimension's scale.
    if ((key === "ArrowLeft" || key === "ArrowRight") && event.target.type === "radio") return;
    if (LABELS[key]) {
      var button = document.getElementById(LABELS[key]);
      if (!button || button.disabled || button.closest("fieldset:disabled") || sent) return;
      event.preventDefault();
      button.click();
      return;
    }
    if (key === "z") {
      var undo = document.getElementById("annotate-undo");
      if (!undo || sent) return;
      event.preventDefault();
      sent = true;
      undo.click();
      return;
    }
    if (NAVIGATION[key]) {
      var link = document.getElementById(NAVIGATION[key]);
      if (!link) return;
      event.preventDefault();
      window.location.assign(link.href);
    }
  });
  root.dataset.shortcuts = "on";
})();
