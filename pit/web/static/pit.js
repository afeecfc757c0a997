// tabled pit: the little the page does by itself. htmx and its SSE extension swap the
// server-rendered fragments in; this keeps "how long ago" labels current, shows whether the
// live stream is connected, and leaves a page whose session has ended for the sign-in page.
// No inline script anywhere (the CSP forbids it).
(function () {
  "use strict";

  function ago(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + String(s % 60).padStart(2, "0") + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
    return Math.floor(s / 86400) + "d " + Math.floor(s % 86400 / 3600) + "h";
  }

  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("[data-ago]").forEach(function (el) {
      var ts = parseFloat(el.getAttribute("data-ago"));
      if (isNaN(ts)) return;
      var text = ago(now - ts);
      if (el.textContent !== text) el.textContent = text;  // no layout for a label unchanged
    });
  }

  function live(state) {
    var el = document.getElementById("live");
    if (!el) return;
    el.classList.toggle("on", state === "on");
    el.classList.toggle("off", state === "off");
    // the words are the page's, in its language (data-on, data-off: base.html)
    el.textContent = state === "on" ? el.getAttribute("data-on") || "live"
      : el.getAttribute("data-off") || "reconnecting";
  }

  // A stream that fails may have ended with its session (signed out in another tab, a new
  // password): if this page now redirects to sign-in, go there instead of showing a stale floor.
  var checked = 0;
  function signedOut() {
    if (Date.now() - checked < 5000) return;
    checked = Date.now();
    var here = location.pathname + location.search;
    fetch(here, {redirect: "manual", cache: "no-store", credentials: "same-origin"})
      .then(function (r) {
        if (r.type === "opaqueredirect") location.assign("/login?next=" + encodeURIComponent(here));
      })
      .catch(function () { /* the pit is away: the stream reconnects by itself */ });
  }

  document.addEventListener("htmx:sseOpen", function () { live("on"); });
  document.addEventListener("htmx:sseError", function () { live("off"); signedOut(); });
  document.addEventListener("htmx:sseClose", function () { live("off"); });
  // the time of the last swap, for the tests' delay measurements and for a person's glance
  document.addEventListener("htmx:sseMessage", function () {
    document.documentElement.setAttribute("data-last-update", String(Date.now()));
  });
  setInterval(tick, 1000);
})();
