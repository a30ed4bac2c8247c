// The Users page: the box at the head of the table ticks every user of the page shown, and
// the form that changes a role for many says how many are ticked. Without this file the page
// works the same: tick users one by one, or choose "all N users found" (every page).
(function () {
  "use strict";

  function boxes() {
    return Array.prototype.slice.call(
      document.querySelectorAll('#user-table tbody input[name="users"]')
    );
  }

  function refresh() {
    var all = document.getElementById("users-tick-page");
    if (!all) return;
    all.hidden = false;
    var list = boxes();
    var ticked = list.filter(function (box) { return box.checked; }).length;
    all.checked = list.length > 0 && ticked === list.length;
    all.indeterminate = ticked > 0 && ticked < list.length;
    var count = document.getElementById("users-ticked-count");
    if (count) count.textContent = " (" + ticked + ")";
  }

  // Ticking a user means "the users ticked", not "all found".
  function chooseTicked() {
    var radio = document.querySelector('#users-bulk input[name="scope"][value="ticked"]');
    if (radio) radio.checked = true;
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.id === "users-tick-page") {
      boxes().forEach(function (box) { box.checked = target.checked; });
      if (target.checked) chooseTicked();
      refresh();
    } else if (target.name === "users" && target.closest("#user-table")) {
      if (target.checked) chooseTicked();
      refresh();
    }
  });
  // The list is swapped whole after a change for many, a row after its own change.
  document.body.addEventListener("htmx:afterSettle", refresh);
  refresh();
})();
