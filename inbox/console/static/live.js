// Optional live refresh of the overview and a replay run's progress: every 5 s, fetch the
// page again and swap its <main>. Without JavaScript, reloading the page does the same.
(function () {
  "use strict";
  var period = 5000;
  function refresh() {
    if (document.visibilityState !== "visible") { return; }
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var current = document.querySelector("main");
        if (fresh && current) { current.replaceWith(fresh); }
      })
      .catch(function () { /* the next round tries again */ });
  }
  window.setInterval(refresh, period);
})();
