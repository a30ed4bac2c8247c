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

// The contents bar (#report-contents): each section's subsections (its h3s) are listed under
// it as the section arrives, and the link of the part being read is marked (aria-current).
(function () {
  "use strict";
  var contents = document.getElementById("report-contents");
  if (!contents) return;

  function slug(text) {
    return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
  }

  function list(section) {
    var item = contents.querySelector('li[data-section="' + section.id + '"]');
    var sub = item && item.querySelector("ol");
    if (!sub) return;
    sub.textContent = "";
    section.querySelectorAll("h3").forEach(function (heading) {
      if (!heading.id) heading.id = section.id + "-" + slug(heading.textContent);
      var link = document.createElement("a");
      link.href = "#" + heading.id;
      link.textContent = heading.textContent.trim();
      var entry = document.createElement("li");
      entry.appendChild(link);
      sub.appendChild(entry);
    });
    sub.hidden = !sub.children.length;
    // A link to a subsection followed before its section had arrived.
    var wanted = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    if (wanted && wanted !== section && section.contains(wanted)) wanted.scrollIntoView();
    mark();
  }

  var links = function () { return contents.querySelectorAll("a[href^='#']"); };
  var current = null;
  function mark() {
    // The last part whose heading has reached the top of the window; at the page's end,
    // the last one in sight (the last parts may be too short to reach the top).
    var reading = null;
    var atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
    var line = atEnd ? window.innerHeight : 48;
    links().forEach(function (link) {
      var target = document.getElementById(link.getAttribute("href").slice(1));
      if (target && target.getBoundingClientRect().top <= line) reading = link;
    });
    if (reading === current) return;
    if (current) current.removeAttribute("aria-current");
    if (reading) reading.setAttribute("aria-current", "location");
    current = reading;
  }
  var pending = false;
  window.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; mark(); });
  }, { passive: true });

  document.body.addEventListener("htmx:load", function (event) {
    var element = event.detail.elt;
    if (element && element.classList && element.classList.contains("report-section")) list(element);
  });
  mark();
})();

// Printing (or saving as PDF) shows everything: the closed <details> (the κ matrix) open for
// the print and close again after it.
(function () {
  "use strict";
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll(".report-section details:not([open])").forEach(function (box) {
      box.open = true;
      opened.push(box);
    });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (box) { box.open = false; });
    opened = [];
  });
})();
