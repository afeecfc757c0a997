// tabled pit: the little the page does by itself. htmx and its SSE extension swap the
// server-rendered fragments in; this keeps "how long ago" labels current, shows whether the
// live stream is connected, leaves a page whose session has ended for the sign-in page, sounds
// an escalated incident (the supervisor can mute it) and keeps the bulk selection of incidents.
// No inline script anywhere (the CSP forbids it).
(function () {
  "use strict";

  // "how long ago" in the page's language: its four forms come translated from the page
  // (base.html's data-ago-formats: under a minute, an hour, a day, beyond), as the server wrote
  // the first label; English when a page has none
  var FORMS = ["%(s)ss", "%(m)sm %(s)ss", "%(h)sh %(m)sm", "%(d)sd %(h)sh"];
  try {
    var given = JSON.parse(document.querySelector("[data-ago-formats]").getAttribute("data-ago-formats"));
    if (Array.isArray(given) && given.length === 4) FORMS = given;
  } catch (e) { /* no forms on this page: English */ }

  function form(i, values) {
    return FORMS[i].replace(/%\((\w+)\)s/g, function (_, name) { return String(values[name]); });
  }

  function two(n) { return String(n).padStart(2, "0"); }

  function ago(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    if (s < 60) return form(0, {s: s});
    if (s < 3600) return form(1, {m: Math.floor(s / 60), s: two(s % 60)});
    if (s < 86400) return form(2, {h: Math.floor(s / 3600), m: two(Math.floor(s % 3600 / 60))});
    return form(3, {d: Math.floor(s / 86400), h: Math.floor(s % 86400 / 3600)});
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

  // Escalated incidents: a short sound (Web Audio, no file) once per incident and level in
  // this tab, unless the supervisor muted the page (remembered in localStorage). The page
  // counts what it sounded in <html data-alarms> (what a person can check in the inspector).
  var MUTE_KEY = "tabled.pit.mute", HEARD_KEY = "tabled.pit.escalations-heard";
  var audio = null;

  function muted() {
    try { return localStorage.getItem(MUTE_KEY) === "1"; } catch (e) { return false; }
  }

  function heard() {
    try { return JSON.parse(sessionStorage.getItem(HEARD_KEY) || "[]"); } catch (e) { return []; }
  }

  function beep() {
    var root = document.documentElement;
    root.setAttribute("data-alarms", String(parseInt(root.getAttribute("data-alarms") || "0", 10) + 1));
    try {
      var Ctx = window.AudioContext || window.webkitAudioContext;
      if (!Ctx) return;
      audio = audio || new Ctx();
      if (audio.state === "suspended") audio.resume();
      var t = audio.currentTime;
      [0, 0.25].forEach(function (at) {
        var osc = audio.createOscillator(), gain = audio.createGain();
        osc.type = "square";
        osc.frequency.value = 880;
        gain.gain.setValueAtTime(0.0001, t + at);
        gain.gain.exponentialRampToValueAtTime(0.2, t + at + 0.02);
        gain.gain.exponentialRampToValueAtTime(0.0001, t + at + 0.18);
        osc.connect(gain).connect(audio.destination);
        osc.start(t + at);
        osc.stop(t + at + 0.2);
      });
    } catch (e) { /* no sound on this browser: the page still shows the escalation */ }
  }

  // Everything below looks only inside what was swapped in (``root``; the whole document on
  // load): at a floor of 1,000 tiles a walk of the whole document on every tile's swap was most
  // of the page's time (bench/scale.py's page profile).
  function within(root, selector) {
    var found = Array.prototype.slice.call(root.querySelectorAll(selector));
    if (root.matches && root.matches(selector)) found.unshift(root);
    return found;
  }

  function escalations(root) {
    var keys = within(root, "[data-escalated-key]");
    if (!keys.length) return;
    var known = heard(), fresh = false;
    keys.forEach(function (el) {
      var key = el.getAttribute("data-escalated-key");
      if (known.indexOf(key) < 0) { known.push(key); fresh = true; }
    });
    if (!fresh) return;
    try { sessionStorage.setItem(HEARD_KEY, JSON.stringify(known.slice(-500))); } catch (e) { /* private mode */ }
    if (!muted()) beep();
  }

  function muteLabel(root) {
    var on = !muted();
    var flag = on ? "0" : "1", html = document.documentElement;
    if (html.getAttribute("data-muted") !== flag) html.setAttribute("data-muted", flag);
    within(root, "#mute").forEach(function (b) {
      b.setAttribute("aria-pressed", on ? "false" : "true");
      b.textContent = b.getAttribute(on ? "data-on" : "data-off") || (on ? "Sound on" : "Sound muted");
    });
  }

  // The bulk acknowledgement's selection survives the live table being swapped in again.
  var selected = {};
  function restoreSelection(root) {
    within(root, 'input[name="incident"][form="bulk"]').forEach(function (box) {
      box.checked = !!selected[box.value];
    });
  }

  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("#mute");
    if (!button) return;
    try { localStorage.setItem(MUTE_KEY, muted() ? "0" : "1"); } catch (e) { /* private mode */ }
    muteLabel(document);
  });
  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (box.id === "select-all") {
      document.querySelectorAll('input[name="incident"][form="bulk"]').forEach(function (b) {
        b.checked = box.checked;
        if (box.checked) selected[b.value] = true; else delete selected[b.value];
      });
    } else if (box.name === "incident" && box.getAttribute("form") === "bulk") {
      if (box.checked) selected[box.value] = true; else delete selected[box.value];
    }
  });
  // htmx:afterSwap fires on the element swapped into (an SSE fragment's too, before its
  // htmx:sseMessage, which needs nothing more)
  function swapped(root) { restoreSelection(root); muteLabel(root); escalations(root); }
  document.addEventListener("htmx:afterSwap", function (ev) {
    swapped(ev.target && ev.target.querySelectorAll ? ev.target : document);
  });
  document.addEventListener("DOMContentLoaded", function () { swapped(document); });
  if (document.readyState !== "loading") swapped(document);
})();
