// Shoal annotator page: one question at a time. Every string from the items goes into the page as
// text (textContent), never as HTML. Answers wait in an outbox (kept in localStorage) until the
// server has taken them; a retry resends them and the server's assignment ids make it a duplicate.
(function () {
  "use strict";
  var app = document.getElementById("app");
  var stepUrl = app.dataset.stepUrl;
  var undoMs = Number(app.dataset.undoSeconds) * 1000;
  var storeKey = "shoal-outbox:" + app.dataset.link;
  var screens = ["question", "waiting", "done", "failed"];
  var outbox = load();
  var queue = [];        // questions shown again after an undo
  var current = null;    // {q, shownAt}
  var held = null;       // the last answer, not sent yet: {q, answer, ms}
  var heldTimer = null;
  var chain = Promise.resolve();
  var stopped = false;
  var waitTimer = null;
  var answeredAt = null; // performance.now() of the last answer, for the timings below

  function load() {
    try {
      var saved = JSON.parse(localStorage.getItem(storeKey) || "{}");
      var box = Array.isArray(saved.outbox) ? saved.outbox : [];
      if (saved.held) box.push(saved.held);
      return box;
    } catch (e) { return []; }
  }
  function persist() {
    try {
      localStorage.setItem(storeKey, JSON.stringify({
        outbox: outbox, held: held && {question_id: held.q.question_id, answer: held.answer, ms: held.ms}}));
    } catch (e) { /* private mode: the outbox lives in memory only */ }
  }
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function showScreen(name, focus) {
    screens.forEach(function (s) { $(s).hidden = s !== name; });
    if (focus) {
      var h = $(name).querySelector("h2");
      h.tabIndex = -1;
      h.focus();
    }
  }
  function status(text, alert) {
    var s = $("status");
    s.textContent = text || "";
    s.className = alert ? "status alert" : "status";
  }
  function setBusy(busy) {
    Array.prototype.forEach.call(document.querySelectorAll(".answer"), function (b) { b.disabled = busy; });
  }

  // ---------------------------------------------------------------- server
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  function post(body, attempt) {
    return fetch(stepUrl, {method: "POST", headers: {"Content-Type": "application/json"},
                           body: JSON.stringify(body), credentials: "omit", cache: "no-store"})
      .then(function (r) {
        if (r.ok) return r.json();
        if (r.status >= 500 || r.status === 429) throw new Error("HTTP " + r.status);
        return r.json().then(function (p) { var e = new Error(p.detail); e.problem = p; throw e; },
                             function () { var e = new Error("HTTP " + r.status); e.problem = {code: "http_" + r.status}; throw e; });
      })
      .catch(function (e) {
        if (e.problem) throw e;
        attempt = (attempt || 0) + 1;
        status("Connection lost. Your answers are kept and will be sent when it is back (try " + attempt + ").", true);
        if (attempt >= 3) {
          $("failed-title").textContent = "Connection lost";
          $("failed-detail").textContent = "Your answers are kept on this device and are sent as soon as the " +
            "connection is back. You can leave this page open.";
          showScreen("failed");
        }
        return sleep(Math.min(1000 * Math.pow(2, attempt - 1), 10000)).then(function () { return post(body, attempt); });
      });
  }

  // One request at a time, in order: each sends the whole outbox.
  function step(next) {
    var run = function () {
      if (stopped) return Promise.resolve(null);
      var sent = outbox.slice();
      return post({answers: sent, next: next, held: held ? 1 : 0}).then(function (data) {
        var ids = {};
        sent.forEach(function (a) { ids[a.question_id] = true; });
        outbox = outbox.filter(function (a) { return !ids[a.question_id]; });
        persist();
        status("");
        progress(data.progress);
        return data;
      }, function (e) { fail(e.problem || {code: "error", detail: String(e)}); return null; });
    };
    chain = chain.then(run, run);
    return chain;
  }

  function fail(problem) {
    stopped = true;
    var titles = {link_expired: "This link has expired", link_revoked: "This link was withdrawn",
                  session_gone: "This task is over", invalid_link: "This link does not work"};
    $("failed-title").textContent = titles[problem.code] || "Something went wrong";
    $("failed-detail").textContent = (problem.detail || "") + " Ask the people who sent it for a new link.";
    status("");
    showScreen("failed", true);
  }

  function progress(p) {
    if (!p) return;
    var parts = [(p.answered + (held ? 1 : 0)) + " answered"];
    if (p.left_in_quota !== null && p.left_in_quota !== undefined) parts.push(Math.max(p.left_in_quota, 0) + " left for you");
    parts.push("session: " + p.budget_remaining + " of " + p.budget + " questions left");
    $("progress").textContent = parts.join(" · ");
  }

  // ------------------------------------------------------------- rendering
  var IMAGE = /^(https?:\/\/|data:image\/(png|jpeg|gif|webp);base64,)/i;

  function renderItem(it) {
    var card = el("article", "item");
    card.setAttribute("aria-label", "Item " + it.label);
    card.dataset.row = String(it.row);
    card.appendChild(el("h3", null, "Item " + it.label + (it.item_id ? " · " + it.item_id : "")));
    var c = it.content;
    if (c) {
      if (c.image_url && IMAGE.test(c.image_url)) {
        var img = el("img");
        img.alt = c.text ? "" : "Picture of item " + it.label;
        img.referrerPolicy = "no-referrer";
        img.src = c.image_url;
        card.appendChild(img);
      }
      if (c.text) card.appendChild(el("p", "text", c.text));
      if (c.fields) {  // [[name, value], ...] in the order uploaded
        var t = el("table");
        c.fields.forEach(function (kv) {
          var tr = el("tr");
          var th = el("th", null, kv[0]); th.scope = "row"; tr.appendChild(th);
          tr.appendChild(el("td", null, kv[1]));
          t.appendChild(tr);
        });
        card.appendChild(t);
      }
    } else if (it.features) {
      var table = el("table");
      var head = el("tr");
      ["feature", "value", "z-score"].forEach(function (h) { var th = el("th", null, h); th.scope = "col"; head.appendChild(th); });
      var bh = el("th", null, ""); bh.setAttribute("aria-hidden", "true"); head.appendChild(bh);
      table.appendChild(head);
      it.features.forEach(function (f) {
        var tr = el("tr");
        var th = el("th", null, f.name); th.scope = "row"; tr.appendChild(th);
        tr.appendChild(el("td", "num", f.value));
        tr.appendChild(el("td", "num", (f.z > 0 ? "+" : "") + f.z.toFixed(1)));
        var cell = el("td"); cell.setAttribute("aria-hidden", "true");
        var bar = el("div", "zbar"), fill = el("span");
        var z = Math.max(-3, Math.min(3, f.z));
        fill.style.left = (z < 0 ? 50 + z / 6 * 100 : 50) + "%";
        fill.style.width = Math.abs(z) / 6 * 100 + "%";
        bar.appendChild(fill); cell.appendChild(bar); tr.appendChild(cell);
        table.appendChild(tr);
      });
      card.appendChild(table);
    } else {
      card.appendChild(el("p", "text", "(no content)"));
    }
    return card;
  }

  // A triplet's candidates change sides at random (no position bias); the answer is mapped back.
  var FLIP = {yes: "no", no: "yes"};

  function show(q) {
    var box = $("items");
    while (box.firstChild) box.removeChild(box.firstChild);
    var swap = q.items.length === 3 && Math.random() < 0.5;
    var shown = swap ? [q.items[0], q.items[2], q.items[1]] : q.items;
    shown.forEach(function (it, i) {
      var card = renderItem({label: "ABC"[i], row: it.row, item_id: it.item_id, content: it.content,
                             features: it.features});
      card.dataset.slot = String(q.items.indexOf(it));
      box.appendChild(card);
    });
    app.dataset.swapped = swap ? "1" : "0";
    current = {q: q, shownAt: performance.now(), swap: swap};
    setBusy(false);
    var first = $("question").hidden;
    showScreen("question", first && document.activeElement === document.body);
    // timings read by tests and bench/annotator_page.py: first question after navigation, answer -> next
    if (!app.dataset.firstShownMs) app.dataset.firstShownMs = String(Math.round(performance.now()));
    if (answeredAt !== null) app.dataset.lastAnswerMs = String(Math.round(performance.now() - answeredAt));
    answeredAt = null;
    app.dataset.questionId = q.question_id;
    app.dataset.ready = String(Number(app.dataset.ready || 0) + 1);
  }

  function handle(data) {
    if (!data) return;
    if (data.question) {
      if (current) queue.push(data.question); else show(data.question);
      return;
    }
    if (current) return;
    if (data.done) {
      var finish = function () {
        $("done-why").textContent = data.done === "quota" ? "You have answered all the questions asked of you."
          : data.done === "flagged" ? "Your answers no longer count in this task: too many of your answers to " +
            "check questions (questions whose answer is known) were wrong, so you get no more questions."
          : "There are no more questions in this task.";
        if (data.completion_url && /^https?:\/\//i.test(data.completion_url)) {
          $("completion-link").href = data.completion_url;
          $("completion").hidden = false;
        }
        stopped = true;
        showScreen("done", true);
      };
      if (held || outbox.length) { commitHeld(); step(false).then(finish); } else finish();
      return;
    }
    // waiting for a pass to refill the pool: the held answer may be what it waits for
    if (held) { commitHeld(); step(false); }
    app.dataset.waits = String(Number(app.dataset.waits || 0) + 1);
    showScreen("waiting", !$("waiting").hidden ? false : true);
    clearTimeout(waitTimer);
    waitTimer = setTimeout(advance, Math.max(1, data.wait_seconds || 1) * 1000);
  }

  function advance() {
    if (stopped) return;
    if (queue.length) {
      show(queue.shift());
      if (outbox.length) step(false);
      return;
    }
    setBusy(true);
    step(true).then(handle);
  }

  // --------------------------------------------------------------- answers
  function commitHeld() {
    clearTimeout(heldTimer);
    if (held) {
      outbox.push({question_id: held.q.question_id, answer: held.answer, ms: held.ms});
      held = null;
      persist();
    }
    $("undo").disabled = true;
  }

  function answer(value) {
    if (!current || stopped) return;
    answeredAt = performance.now();
    var ms = Math.round(answeredAt - current.shownAt);
    if (current.swap && FLIP[value]) value = FLIP[value];
    commitHeld();
    held = {q: current.q, answer: value, ms: ms};
    current = null;
    persist();
    $("undo").disabled = false;
    heldTimer = setTimeout(function () { if (held) { commitHeld(); step(false); } }, undoMs);
    advance();
  }

  function undo() {
    if (!held || stopped) return;
    clearTimeout(heldTimer);
    if (current) queue.unshift(current.q);
    current = null;
    var q = held.q;
    held = null;
    persist();
    $("undo").disabled = true;
    show(q);
    status("Last answer undone: answer this question again.");
  }

  Array.prototype.forEach.call(document.querySelectorAll(".answer"), function (b) {
    b.addEventListener("click", function () { answer(b.dataset.answer); });
  });
  $("undo").addEventListener("click", undo);
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    if ($("question").hidden) return;
    var key = (e.key || "").toLowerCase();
    if (key === "u") { e.preventDefault(); undo(); return; }
    var match = null;
    Array.prototype.forEach.call(document.querySelectorAll(".answer"), function (b) {
      if (key.length === 1 && b.dataset.keys.indexOf(key) >= 0) match = b;
    });
    if (match && !match.disabled) { e.preventDefault(); answer(match.dataset.answer); }
  });
  window.addEventListener("pagehide", function () {
    if (held) commitHeld();
    if (outbox.length && !stopped) {
      try {
        fetch(stepUrl, {method: "POST", keepalive: true, headers: {"Content-Type": "application/json"},
                        body: JSON.stringify({answers: outbox, next: false}), credentials: "omit"});
      } catch (e) { /* the outbox stays in localStorage and is sent on the next visit */ }
    }
  });
  if (window.matchMedia && window.matchMedia("(max-width: 40rem)").matches) $("instructions").open = false;
  // the page came with its first step's answer (no answers sent, the next question asked for)
  var firstEl = $("first");
  var first = null;
  try { first = firstEl ? JSON.parse(firstEl.textContent) : null; } catch (e) { first = null; }
  if (first) {
    progress(first.progress);
    handle(first);
    if (outbox.length) step(false);
  } else {
    advance();
  }
})();
