// The API tokens page: a "Copy" button puts the new token on the clipboard and says so.
// Without this file (or without a clipboard) the token is still on the page to select.
(function () {
  "use strict";

  function setUp() {
    var button = document.getElementById("new-token-copy");
    if (!button || !navigator.clipboard || !window.isSecureContext) return;
    var source = document.getElementById(button.getAttribute("data-copies"));
    var status = document.getElementById("new-token-copied");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent.trim()).then(
        function () { if (status) status.textContent = "Copied."; },
        function () { if (status) status.textContent = "Could not copy: select the token instead."; }
      );
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
