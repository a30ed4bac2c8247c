// The rubric review screen: keyboard shortcuts, a guard for unsaved edits, and the tabs.
// Everything else is htmx and server-rendered; without this file the page still works
// (the tabs' panels are then simply stacked).
(function () {
  "use strict";
  var form = document.querySelector("form[data-rubric-editor]");
  if (!form) return;
  var dirty = false;
  var TAB_KEY = "sejury.rubric.tab";

  function editor() { return document.getElementById("rubric-editor"); }
  function readDirty() { var e = editor(); dirty = !!e && e.dataset.dirty === "true"; }
  readDirty();

  form.addEventListener("input", function () { dirty = true; });

  // Ctrl/Cmd+Enter saves; Enter in a requirement's title moves on to its detail.
  form.addEventListener("keydown", function (event) {
    if (event.key !== "Enter") return;
    if (event.ctrlKey || event.metaKey) {
      var save = document.getElementById("rubric-save");
      if (save && !save.disabled) {
        event.preventDefault();
        // A click, not requestSubmit(): htmx takes the URL from the last button clicked,
        // which may be an add/remove button of the editor.
        save.click();
      }
      return;
    }
    var target = event.target;
    if (target.classList && target.classList.contains("req-title")) {
      event.preventDefault();
      var detail = target.parentElement.querySelector("textarea");
      if (detail) detail.focus();
    }
  });

  // A preview must never show a stale state. While the editor is being saved or
  // re-rendered (its fields disabled) no preview is sent; one sent before is dropped.
  var generation = 0;
  var busy = false;
  function isPreview(event) { return event.detail.elt && event.detail.elt.id === "preview-live"; }
  document.body.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (isPreview(event)) {
      if (busy) event.preventDefault();
      else event.detail.requestConfig.generation = generation;
    } else if (elt === form || form.contains(elt)) {
      busy = true;
      generation += 1;
      event.detail.requestConfig.fromEditor = true;
    }
  });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.requestConfig && event.detail.requestConfig.fromEditor) busy = false;
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (isPreview(event) && event.detail.requestConfig.generation !== generation) {
      event.detail.shouldSwap = false;
    }
  });
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "rubric-editor") readDirty();
  });
  document.body.addEventListener("htmx:oobAfterSwap", function (event) {
    readDirty();
    // A save or a review action swapped the history in: the judge preview reloads on this
    // event (an event filter in hx-trigger would need eval, which the CSP forbids).
    if (event.detail.target && event.detail.target.id === "rubric-history") {
      document.body.dispatchEvent(new CustomEvent("rubric-history-changed"));
    }
  });

  // A request that failed changed nothing on the page: say so, above the editor.
  function failed(event) {
    var box = document.getElementById("rubric-request-error");
    if (!box) {
      box = document.createElement("p");
      box.id = "rubric-request-error";
      box.className = "flash bad";
      box.setAttribute("role", "alert");
      form.parentElement.insertBefore(box, form);
    }
    var status = event.detail.xhr && event.detail.xhr.status;
    box.textContent = (status ? "The server answered " + status + ". " : "The server could not be reached. ") +
      "Nothing was lost: your edit is still in the editor. Try again.";
  }
  document.body.addEventListener("htmx:responseError", failed);
  document.body.addEventListener("htmx:sendError", failed);
  // Only the editor's own requests clear it: the judge panel's polling must not hide it.
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var box = document.getElementById("rubric-request-error");
    var fromEditor = event.detail.requestConfig && event.detail.requestConfig.fromEditor;
    if (box && fromEditor && event.detail.successful) box.remove();
  });

  // Submitting or confirming acts on the saved revision, not on unsaved edits: say so.
  document.body.addEventListener("htmx:confirm", function (event) {
    var source = event.detail.elt;
    if (!dirty || !source.closest || !source.closest("[data-warn-unsaved]")) return;
    event.preventDefault();
    var question = "You have unsaved edits in the editor. This acts on the saved revision, " +
      "without them (they stay in the editor). Continue?";
    if (window.confirm(question)) event.detail.issueRequest(true);
  });

  window.addEventListener("beforeunload", function (event) {
    if (dirty) { event.preventDefault(); event.returnValue = ""; }
  });

  // Tabs: shown only with this script; arrow keys move between them.
  var tablist = document.querySelector(".review-side .tabs");
  if (!tablist) return;
  var tabs = Array.prototype.slice.call(tablist.querySelectorAll("[role=tab]"));
  function select(tab, focus, remember) {
    tabs.forEach(function (other) {
      var on = other === tab;
      other.setAttribute("aria-selected", on ? "true" : "false");
      other.tabIndex = on ? 0 : -1;
      document.getElementById(other.getAttribute("aria-controls")).hidden = !on;
    });
    if (focus) tab.focus();
    if (remember === false) return;
    try { sessionStorage.setItem(TAB_KEY, tab.id); } catch (e) { /* private mode */ }
  }
  tablist.hidden = false;
  document.querySelector(".review-side").classList.add("tabbed");
  var saved = null;
  try { saved = sessionStorage.getItem(TAB_KEY); } catch (e) { /* private mode */ }
  // The page may name the tab to open on (a rubric awaiting this reviewer's confirmation
  // opens on its changes), without making it the tab last chosen; else that tab.
  var opening = tabs.filter(function (t) {
    return t.getAttribute("aria-controls") === tablist.dataset.open;
  })[0];
  if (opening) select(opening, false, false);
  else select(document.getElementById(saved) || tabs[0], false);
  tabs.forEach(function (tab, index) {
    tab.addEventListener("click", function () { select(tab, false); });
    tab.addEventListener("keydown", function (event) {
      var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (!step) return;
      event.preventDefault();
      select(tabs[(index + step + tabs.length) % tabs.length], true);
    });
  });
  // Links to a panel ("check the changes") open its tab.
  document.body.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("[data-tab]");
    if (!link) return;
    var tab = tabs.filter(function (t) {
      return t.getAttribute("aria-controls") === link.dataset.tab;
    })[0];
    if (tab) { event.preventDefault(); select(tab, true); }
  });
})();
