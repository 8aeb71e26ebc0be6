// The page of a job or session with nothing to draw yet: asks again every Retry-After seconds and
// reloads only once the answer changes (no Retry-After: a result, or a state that will not change).
// Unlike <meta http-equiv="refresh">, the page does not reload under a screen reader every few seconds.
(function () {
  "use strict";
  var note = document.getElementById("waiting");
  if (!note) { return; }
  function ask(seconds) {
    setTimeout(function () {
      fetch(window.location.href, {credentials: "same-origin", cache: "no-store", headers: {Accept: "text/html"}})
        .then(function (r) {
          var again = r.headers.get("Retry-After");
          if (r.ok && again) { ask(Number(again) || seconds); } else { window.location.reload(); }
        })
        .catch(function () { ask(Math.min(seconds * 2, 60)); });
    }, Math.max(1, seconds) * 1000);
  }
  ask(Number(note.getAttribute("data-retry-after")) || 3);
})();
