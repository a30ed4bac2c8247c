// The agreement report: each section loads on its own through htmx. When one cannot load
// (the server failed, or the network is gone), its placeholder says so instead of
// "Computing …" forever, with the status, and offers to try again.
(function () {
  "use strict";
  function failed(event, why) {
    var section = event.detail.elt;
    if (!section || !section.classList || !section.classList.contains("report-section")) return;
    var status = section.querySelector(".loading");
    if (!status) return;
    status.classList.remove("muted");
    status.classList.add("error");
    status.textContent = "This section could not be loaded (" + why + "). ";
    var retry = document.createElement("button");
    retry.type = "button";
    retry.textContent = "Try again";
    retry.addEventListener("click", function () {
      status.classList.remove("error");
      status.textContent = "Computing …";
      window.htmx.ajax("GET", section.getAttribute("hx-get"), { target: section, swap: "outerHTML" });
    });
    status.appendChild(retry);
  }
  document.body.addEventListener("htmx:responseError", function (event) {
    failed(event, "the server answered " + event.detail.xhr.status);
  });
  document.body.addEventListener("htmx:sendError", function (event) {
    failed(event, "no answer from the server");
  });
})();
