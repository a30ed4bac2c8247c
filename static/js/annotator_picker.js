// The new campaign's annotator picker (le2019 has 37 annotators): a filter that hides the
// annotators whose name does not match as you type, "Select all shown" (ticks the annotators
// the filter shows), "Clear all" (unticks every annotator, shown or not), and a count of those
// ticked. Without this file the page works the same: the list is ticked by hand.
(function () {
  "use strict";
  var tools = document.getElementById("annotator-tools");
  var list = document.getElementById("annotator-list");
  if (!tools || !list) return;
  var filter = document.getElementById("annotator-filter");
  var count = document.getElementById("annotators-count");
  var items = Array.prototype.slice.call(list.querySelectorAll("li"));

  function box(item) { return item.querySelector('input[name="annotators"]'); }
  function shown() { return items.filter(function (item) { return !item.hidden; }); }

  function refresh() {
    var ticked = items.filter(function (item) { return box(item).checked; }).length;
    var visible = shown().length;
    var text = ticked + " of " + items.length + " ticked";
    if (visible < items.length) {
      text += visible ? " · " + visible + " shown" : " · no annotator matches";
    }
    count.textContent = text;
  }

  function apply() {
    var needle = filter.value.trim().toLowerCase();
    items.forEach(function (item) {
      var name = (box(item).dataset.username || item.textContent).toLowerCase();
      item.hidden = needle !== "" && name.indexOf(needle) < 0;
    });
    refresh();
  }

  filter.addEventListener("input", apply);
  // Enter in the filter must not create the campaign.
  filter.addEventListener("keydown", function (event) {
    if (event.key === "Enter") event.preventDefault();
  });
  document.getElementById("annotators-tick-shown").addEventListener("click", function () {
    shown().forEach(function (item) { box(item).checked = true; });
    refresh();
  });
  document.getElementById("annotators-clear").addEventListener("click", function () {
    items.forEach(function (item) { box(item).checked = false; });
    refresh();
  });
  list.addEventListener("change", refresh);
  tools.hidden = false;
  apply();
})();
