// Draws a result page's data (the JSON block #shoal-data) with plotly.js.
// Every client string is set as text (textContent, plotly's text), never parsed as HTML.
(function () {
  "use strict";

  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363"];
  var LINES = {
    "must_link/": {name: "must-link", color: "rgba(44,160,44,0.45)", dash: "solid", width: 1},
    "cannot_link/": {name: "cannot-link", color: "rgba(214,39,40,0.40)", dash: "dot", width: 1},
    "must_link/violated": {name: "must-link violated", color: "#ff7f0e", dash: "solid", width: 3},
    "cannot_link/violated": {name: "cannot-link violated", color: "#ff7f0e", dash: "dash", width: 3},
    "must_link/contradictory": {name: "must-link contradictory", color: "#7b2cbf", dash: "solid", width: 3},
    "cannot_link/contradictory": {name: "cannot-link contradictory", color: "#7b2cbf", dash: "dash", width: 3}
  };
  var FONT = {family: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", size: 14, color: "#222"};

  var data = JSON.parse(document.getElementById("shoal-data").textContent);
  var panel = document.getElementById("panel");
  var where = {};  // row -> [x, y]

  function colour(k) { return PALETTE[((k % PALETTE.length) + PALETTE.length) % PALETTE.length]; }

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }

  function rowName(row, itemId) { return itemId !== null && itemId !== undefined ? itemId : "row " + row; }

  // plotly reads a few HTML-like tags in its texts: a client's string goes to it with <, > and & as entities
  function plotText(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }

  function drawMap() {
    var map = data.map;
    if (!map) { return; }
    var p = map.points, n = p.rows.length, gl = n > 5000;
    var byCluster = {};
    for (var i = 0; i < n; i++) {
      where[p.rows[i]] = [p.x[i], p.y[i]];
      var k = p.cluster[i];
      var c = byCluster[k] || (byCluster[k] = {x: [], y: [], row: [], text: []});
      c.x.push(p.x[i]); c.y.push(p.y[i]); c.row.push(p.rows[i]);
      c.text.push(plotText(rowName(p.rows[i], p.item_id ? p.item_id[i] : null)) + " · cluster " + k);
    }
    var traces = [];
    var groups = {};
    ((data.constraints || {}).lines || []).forEach(function (ln) {
      var a = where[ln[0]], b = where[ln[1]], key = ln[2] + "/" + ln[3];
      var g = groups[key] || (groups[key] = {x: [], y: [], n: 0});
      g.x.push(a[0], b[0], null); g.y.push(a[1], b[1], null); g.n += 1;
    });
    Object.keys(LINES).forEach(function (key) {
      var g = groups[key];
      if (!g) { return; }
      var s = LINES[key];
      traces.push({type: gl ? "scattergl" : "scatter", mode: "lines", x: g.x, y: g.y, hoverinfo: "skip",
        name: s.name + " (" + g.n + ")", meta: "constraint", line: {color: s.color, dash: s.dash, width: s.width}});
    });
    Object.keys(byCluster).map(Number).sort(function (a, b) { return a - b; }).forEach(function (k) {
      var c = byCluster[k];
      traces.push({type: gl ? "scattergl" : "scatter", mode: "markers", x: c.x, y: c.y, customdata: c.row,
        text: c.text, hoverinfo: "text", name: "cluster " + k + " (" + (data.cluster_sizes[k] || c.x.length) + ")",
        meta: "cluster", marker: {color: colour(k), size: n > 2000 ? 4 : 8, opacity: 0.85,
          line: {width: n > 2000 ? 0 : 0.5, color: "#fff"}}});
    });
    traces.push({type: "scatter", mode: "markers", x: [], y: [], hoverinfo: "skip", name: "selected", meta: "selected",
      showlegend: false, marker: {size: 18, color: "rgba(0,0,0,0)", line: {width: 3, color: "#111"}}});
    var ratio = map.explained_variance_ratio, what = map.source === "embedding" ? "embedding" : "data";
    var layout = {
      title: {text: plotText(data.title)},
      font: FONT, hovermode: "closest", dragmode: "pan", margin: {l: 60, r: 20, t: 60, b: 55},
      xaxis: {title: {text: "PC 1 of the " + what + " (" + Math.round(ratio[0] * 100) + "%)"}, zeroline: false},
      yaxis: {title: {text: "PC 2 (" + Math.round(ratio[1] * 100) + "%)"}, zeroline: false},
      legend: {title: {text: "Clusters and constraints"}, itemclick: "toggle"},
      paper_bgcolor: "#fff", plot_bgcolor: "#fafafa"
    };
    var div = document.getElementById("map");
    Plotly.newPlot(div, traces, layout, {displaylogo: false, responsive: true, scrollZoom: true});
    div.on("plotly_click", function (ev) {
      var pt = ev.points && ev.points[0];
      if (pt && pt.customdata !== undefined) { showRow(pt.customdata); }
    });
  }

  function select(row) {
    var div = document.getElementById("map");
    if (!div || !div.data) { return; }
    var idx = div.data.length - 1, at = where[row];
    Plotly.restyle(div, {x: [at ? [at[0]] : []], y: [at ? [at[1]] : []]}, [idx]);
  }

  function table(rows, head) {
    var t = el("table"), th = el("thead"), tr = el("tr");
    head.forEach(function (h) { var c = el("th", h); c.scope = "col"; tr.appendChild(c); });
    th.appendChild(tr); t.appendChild(th);
    var tb = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (v, i) { row.appendChild(el("td", v, i > 0 && typeof v === "number" ? "num" : null)); });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    return t;
  }

  function fmt(v) { return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : +v.toFixed(4); }

  function safeImage(url) {
    return typeof url === "string" && /^(https?:\/\/|data:image\/(png|jpeg|gif|webp);)/i.test(url);
  }

  function showContent(c) {
    if (!c) { return; }
    if (c.text) { panel.appendChild(el("p", c.text, "item-text")); }
    if (safeImage(c.image_url)) {
      var img = el("img", null, "item-image");
      img.alt = "item image"; img.referrerPolicy = "no-referrer"; img.src = c.image_url;
      panel.appendChild(img);
    }
    if (c.fields && typeof c.fields === "object") {
      panel.appendChild(table(Object.keys(c.fields).map(function (k) { return [k, String(c.fields[k])]; }),
        ["Field", "Value"]));
    }
  }

  // focus: true when a keyboard or button asked (the panel's heading takes the focus; a map click keeps it)
  function showRow(row, focus) {
    select(row);
    fetch(data.rows_url + encodeURIComponent(row), {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)); })
      .then(function (d) {
        panel.textContent = "";
        var h = el("h2", rowName(d.row, d.item_id) + " ");
        h.tabIndex = -1;
        var sw = el("span", null, "swatch"); sw.style.backgroundColor = colour(d.cluster);
        h.insertBefore(sw, h.firstChild);
        h.appendChild(el("span", "cluster " + d.cluster, "count"));
        panel.appendChild(h);
        if (d.item_id !== null) { panel.appendChild(el("p", "row " + d.row, "hint")); }
        showContent(d.content);
        panel.appendChild(el("h3", "Features"));
        var shown = d.features.slice(0, 40);
        panel.appendChild(table(shown.map(function (f) { return [f.name, fmt(f.value), fmt(f.min), fmt(f.max)]; }),
          ["Column", "Value", "Min", "Max"]));
        if (d.features.length > shown.length) {
          panel.appendChild(el("p", "first " + shown.length + " of " + d.features.length + " columns", "hint"));
        }
        panel.appendChild(el("h3", "Nearest on the map"));
        var ul = el("ul", null, "neighbours");
        d.neighbours.forEach(function (nb) {
          var li = el("li"), b = el("button", rowName(nb.row, nb.item_id), "row-link");
          b.type = "button";
          b.addEventListener("click", function () { showRow(nb.row, true); });
          var s = el("span", null, "swatch"); s.style.backgroundColor = colour(nb.cluster);
          li.appendChild(s); li.appendChild(b); li.appendChild(el("span", " cluster " + nb.cluster, "count"));
          ul.appendChild(li);
        });
        if (!d.neighbours.length) { ul.appendChild(el("li", "none (the row is not on the map)", "hint")); }
        panel.appendChild(ul);
        if (focus) { h.focus(); }
      })
      .catch(function (err) {
        panel.textContent = "";
        var h = el("h2", "Row " + row);
        h.tabIndex = -1;
        panel.appendChild(h);
        panel.appendChild(el("p", "Could not load this row: " + err.message, "hint"));
        if (focus) { h.focus(); }
      });
  }

  function drawPasses() {
    var div = document.getElementById("passes"), passes = data.passes || [];
    if (!div || !passes.length) { return; }
    var x = passes.map(function (p) { return p.n_questions_used; });
    var traces = [
      {type: "scatter", mode: "lines+markers", name: "ARI vs ground truth", x: x,
        y: passes.map(function (p) { return p.ari; }), line: {color: "#1f77b4", width: 3}},
      {type: "scatter", mode: "lines+markers", name: "crowd agreement", x: x,
        y: passes.map(function (p) { return p.agreement; }), line: {color: "#2ca02c", width: 3, dash: "dash"}}
    ];
    Plotly.newPlot(div, traces, {
      title: {text: "ARI and crowd agreement after each pass"}, font: FONT, margin: {l: 60, r: 20, t: 50, b: 55},
      xaxis: {title: {text: "questions used by the model"}, rangemode: "tozero"},
      yaxis: {title: {text: "score"}, range: [-0.05, 1.05]},
      legend: {x: 1, xanchor: "right", y: 0.05, yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)"},
      hovermode: "x unified"
    }, {displaylogo: false, responsive: true});
  }

  Array.prototype.forEach.call(document.querySelectorAll(".swatch[data-cluster]"), function (s) {
    s.style.backgroundColor = colour(Number(s.getAttribute("data-cluster")));
  });
  Array.prototype.forEach.call(document.querySelectorAll("button.row-link[data-row]"), function (b) {
    b.addEventListener("click", function () { showRow(Number(b.getAttribute("data-row")), true); });
  });

  // Any row without the mouse: its number, or the item id of a row drawn on the map.
  function findRow(s) {
    s = s.trim();
    var ids = data.map && data.map.points.item_id;
    if (ids) {
      var i = ids.indexOf(s);
      if (i >= 0) { return data.map.points.rows[i]; }
    }
    return /^[0-9]+$/.test(s) && Number(s) < data.n_samples ? Number(s) : null;
  }
  var form = document.getElementById("row-form");
  if (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var input = document.getElementById("row-input"), msg = document.getElementById("row-error");
      var row = findRow(input.value);
      input.setAttribute("aria-invalid", row === null ? "true" : "false");
      msg.textContent = row === null ? "No such row: a number from 0 to " + (data.n_samples - 1) +
        (data.map && data.map.points.item_id ? ", or the item id of a row on the map" : "") + "." : "";
      if (row !== null) { showRow(row, true); }
    });
  }
  drawPasses();
  drawMap();
})();
