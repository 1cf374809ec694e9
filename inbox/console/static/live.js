// Optional live refresh of the overview and of a running replay: while the page's <main>
// carries data-refresh="SECONDS", fetch the page again that long after the last answer and
// swap its <main>. A fresh <main> without it (a run that has finished) ends the refreshing.
// Without JavaScript, reloading the page does the same.
(function () {
  "use strict";
  function schedule(main) {
    var seconds = main ? parseFloat(main.getAttribute("data-refresh")) : NaN;
    if (seconds > 0) { window.setTimeout(refresh, seconds * 1000); }
  }
  function refresh() {
    var current = document.querySelector("main");
    if (document.visibilityState !== "visible") { schedule(current); return; }
    fetch(window.location.href, {
      credentials: "same-origin", cache: "no-store", headers: { "Accept": "text/html" }
    })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var fresh = html && new DOMParser().parseFromString(html, "text/html").querySelector("main");
        current = document.querySelector("main");
        if (fresh && current) { current.replaceWith(fresh); current = fresh; }
        schedule(current);
      })
      .catch(function () { schedule(document.querySelector("main")); });  // try again
  }
  schedule(document.querySelector("main"));
})();
