// The adjudication queue: keyboard shortcuts, as on the labelling page (static/js/annotate.js).
// Without this file the page works the same (forms, htmx, links); the keys are listed on the page.
//   n or →       next patch; at the last one, the next page (#adjudication-next)
//   p or ←       previous patch; at the first one, the previous page (#adjudication-prev)
//   v, i         choose VALID, INVALID for the highlighted patch
//   1 … 5        tick or untick the highlighted patch's themes, in the order listed
//   d            show or hide its diff
//   s            record its consensus (htmx); once recorded, on to the next patch
//   Esc          leave the note field (shortcuts are off while typing in it)
(function () {
  "use strict";
  var list = document.querySelector(".adjudication-list");
  if (!list) return;
  var LABELS = { v: "valid", i: "invalid" };
  var current = null; // the highlighted card's id: cards are swapped whole by htmx

  function cards() {
    return Array.prototype.slice.call(list.querySelectorAll("article.adjudication"));
  }

  function card() {
    var found = current && document.getElementById(current);
    return found && list.contains(found) ? found : null;
  }

  function highlight(element, scroll) {
    cards().forEach(function (other) {
      other.classList.remove("current");
      other.removeAttribute("aria-current");
    });
    if (!element) { current = null; return; }
    current = element.id;
    element.classList.add("current");
    element.setAttribute("aria-current", "true");
    list.dataset.current = element.id;
    if (scroll) {
      element.scrollIntoView({ block: "start" });
      element.focus({ preventScroll: true });
    }
  }

  function move(step) {
    var all = cards();
    var index = all.indexOf(card());
    var next = all[index + step];
    if (index >= 0 && next) { highlight(next, true); return; }
    if (index < 0 && all.length) { highlight(all[step > 0 ? 0 : all.length - 1], true); return; }
    var link = document.getElementById(step > 0 ? "adjudication-next" : "adjudication-prev");
    if (link) window.location.assign(link.href);
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName;
    return target.isContentEditable || tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && target.type !== "radio" && target.type !== "checkbox");
  }

  // The card whose part was clicked or focused becomes the highlighted one.
  list.addEventListener("focusin", function (event) {
    var target = event.target.closest && event.target.closest("article.adjudication");
    if (target && target.id !== current) highlight(target, false);
  });
  list.addEventListener("click", function (event) {
    var target = event.target.closest && event.target.closest("article.adjudication");
    if (target && target.id !== current) highlight(target, false);
  });

  // After a save, htmx swaps the card: highlight it again, or the next one once recorded.
  document.body.addEventListener("htmx:afterSettle", function (event) {
    var swapped = event.target && event.target.closest && event.target.closest("article.adjudication");
    if (!swapped || !list.contains(swapped)) return;
    if (swapped.querySelector(".flash.ok")) {
      var all = cards();
      var next = all[all.indexOf(swapped) + 1];
      highlight(next || swapped, true);
    } else if (swapped.id === current) {
      highlight(swapped, false);
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (key === "n" || key === "ArrowRight") { event.preventDefault(); move(1); return; }
    if (key === "p" || key === "ArrowLeft") { event.preventDefault(); move(-1); return; }
    var here = card();
    if (!here) return;
    var form = here.querySelector("form");
    if (LABELS[key]) {
      var radio = here.querySelector("input[name=label][value=" + LABELS[key].toUpperCase() + "]");
      if (radio) { event.preventDefault(); radio.checked = true; radio.dispatchEvent(new Event("change", { bubbles: true })); }
    } else if (/^[1-9]$/.test(key)) {
      var box = here.querySelectorAll("input[name=themes]")[Number(key) - 1];
      if (box) { event.preventDefault(); box.checked = !box.checked; box.dispatchEvent(new Event("change", { bubbles: true })); }
    } else if (key === "d") {
      var diff = here.querySelector("details.adjudication-diff");
      if (diff) { event.preventDefault(); diff.open = !diff.open; }
    } else if (key === "s" && form) {
      event.preventDefault();
      if (form.requestSubmit) form.requestSubmit(); else form.submit();
    }
  });

  // The patch named in the address (after a save without htmx), else the first one.
  var named = window.location.hash && document.getElementById(window.location.hash.slice(1));
  highlight(named && list.contains(named) ? named : cards()[0] || null, false);
  list.dataset.shortcuts = "on";
})();
