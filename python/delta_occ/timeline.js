// delta-occ timeline: draws the commits embedded in #timeline-data (see delta_occ/timeline.py).
// No network, no library: SVG built as text, one innerHTML per redraw.
(function () {
  "use strict";
  var started = performance.now();
  var D = JSON.parse(document.getElementById("timeline-data").textContent);
  var S = D.strings, C = D.commits, F = D.failed, N = C.v.length;
  var LABEL = 250, LANE_MIN = 28, TRACK_H = 18, TOP = 24, PAD = 14, BAR_H = 9;
  // Overlapping spans of one writer stack on up to this many tracks of its lane.
  var MAX_TRACKS = 8;
  // Past this many spans in view the lanes are drawn as density (zoom in for single commits).
  var DETAIL_MAX = 1500;
  var asked = /[?&]detail=(\d+)/.exec(location.search); // ?detail=N: another threshold
  if (asked) DETAIL_MAX = Number(asked[1]);
  var MAX_LANES = 40;
  var lanesSvg = document.getElementById("lanes"), overview = document.getElementById("overview");
  var box = document.getElementById("lanes-box"), details = document.getElementById("details");
  var note = document.getElementById("view-note");
  var mode = "time", view = null, selected = null;

  var byVersion = new Map();
  for (var i = 0; i < N; i++) byVersion.set(C.v[i], i);

  // Lanes: one per writer; past MAX_LANES writers, one per group (engine and host).
  var laneNames = D.lanes.map(function (l) { return l.name; });
  var laneMap = D.lanes.map(function (_, k) { return k; });
  if (D.lanes.length > MAX_LANES) {
    var groups = new Map();
    laneNames = [];
    laneMap = D.lanes.map(function (l) {
      if (!groups.has(l.group)) { groups.set(l.group, laneNames.length); laneNames.push(l.group + " (all processes)"); }
      return groups.get(l.group);
    });
  }

  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function str(k) { return k == null ? "" : S[k]; }
  function iso(ms) { return ms == null ? "" : new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC"); }
  function timeOf(v) {
    if (v == null) return null;
    var k = byVersion.get(v);
    if (k !== undefined) return C.t1[k];
    var t = D.earlier[String(v)];
    return t == null ? null : t;
  }

  // A commit's extent in the current mode: [start, end] (start: its read, or its first
  // execution's read when it was re-run).
  function commitEnd(k) { return mode === "time" ? C.t1[k] : C.v[k]; }
  function commitStart(k) {
    if (mode === "version") return C.rv[k] == null ? C.v[k] : C.rv[k];
    var s = C.t00[k] != null ? C.t00[k] : C.t0[k];
    return s == null ? C.t1[k] : s;
  }
  function readAt(k) {
    if (mode === "version") return C.rv[k] == null ? C.v[k] : C.rv[k];
    return C.t0[k] == null ? C.t1[k] : C.t0[k];
  }
  function failedStart(f) { return mode === "time" ? f.t0 : (f.rv == null ? 0 : f.rv); }
  function failedEnd(f) {
    if (mode === "time") return f.t1 == null ? f.t0 : f.t1;
    return f.wv != null ? f.wv : (f.rv == null ? 0 : f.rv + 1);
  }
  function versionX(v) { return mode === "time" ? timeOf(v) : v; }

  function extent() {
    var lo = Infinity, hi = -Infinity;
    for (var k = 0; k < N; k++) {
      var a = commitStart(k), b = commitEnd(k);
      if (a != null && a < lo) lo = a;
      if (b != null && b > hi) hi = b;
    }
    F.forEach(function (f) {
      var a = failedStart(f), b = failedEnd(f);
      if (a != null && a < lo) lo = a;
      if (b != null && b > hi) hi = b;
    });
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    var pad = (hi - lo) * 0.02;
    return [lo - pad, hi + pad];
  }

  function niceStep(span, target) {
    var raw = span / target, steps;
    if (mode === "time") {
      steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 144e5, 216e5, 432e5, 864e5];
      for (var j = 0; j < steps.length; j++) if (steps[j] >= raw) return steps[j];
      return Math.ceil(raw / 864e5) * 864e5;
    }
    var p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    var m = [1, 2, 5, 10].find(function (x) { return x * p >= raw; });
    return Math.max(1, m * p);
  }
  function tickLabel(u, step) {
    if (mode === "version") return "v" + u;
    var s = new Date(u).toISOString();
    if (step >= 864e5) return s.slice(0, 10);
    return step < 1000 ? s.slice(11, 23) : s.slice(11, 19);
  }

  function title(k) {
    var lines = ["v" + C.v[k] + " " + str(C.op[k]) + " — " + laneNames[laneMap[C.lane[k]]], str(C.sum[k])];
    C.chk[k].forEach(function (c) { lines.push("against v" + c[0] + " (" + str(c[1]) + "): " + str(c[2])); });
    if (C.more[k]) lines.push("(" + C.more[k] + " more winners checked, not recorded)");
    if (C.att[k] > 1) lines.push("committed on attempt " + C.att[k]);
    if (C.exe[k] > 1) lines.push("execution " + C.exe[k] + " (re-run after conflicts with " + (C.rerun[k] || []).map(function (v) { return "v" + v; }).join(", ") + ")");
    return lines.join("\n");
  }

  // A lane's name on two lines: what tells writers apart (process, thread) above the engine and
  // host they share; the whole name on hover.
  function laneLabel(name, top) {
    var parts = name.split(" · "), cut = function (t) { return t.length > 40 ? t.slice(0, 39) + "…" : t; };
    var main = parts.length > 2 ? parts.slice(2).join(" · ") : name, sub = parts.length > 2 ? parts.slice(0, 2).join(" · ") : "";
    return '<text class="lane-label" x="6" y="' + (top + 12) + '">' + esc(cut(main)) + "<title>" + esc(name) + "</title></text>" +
      (sub ? '<text class="lane-sub" x="6" y="' + (top + 22) + '">' + esc(cut(sub)) + "</text>" : "");
  }

  function render() {
    var W = Math.max(760, box.clientWidth || 1200), plotW = W - LABEL - PAD;
    var a = view[0], b = view[1], scale = plotW / (b - a);
    var X = function (u) { return LABEL + (u - a) * scale; };
    var clampX = function (u) { return Math.max(LABEL - 4, Math.min(W - 2, X(u))); };
    var vis = [], visF = [];
    for (var k = 0; k < N; k++) {
      var s = commitStart(k), e = commitEnd(k);
      if (e != null && e >= a && s <= b) vis.push(k);
    }
    F.forEach(function (f, j) { var s = failedStart(f), e = failedEnd(f); if (s != null && e >= a && s <= b) visF.push(j); });
    var detail = vis.length + visF.length <= DETAIL_MAX;
    // Spans that overlap in one lane (a writer with several transactions open) go on tracks.
    var tracks = laneNames.map(function () { return []; }), trackOf = new Map(), trackOfF = new Map();
    if (detail) {
      var items = vis.map(function (k) { return [X(commitStart(k)), X(commitEnd(k)), laneMap[C.lane[k]], k, false]; })
        .concat(visF.map(function (j) { return [X(failedStart(F[j])), X(failedEnd(F[j])), laneMap[F[j].lane], j, true]; }));
      items.sort(function (p, q) { return p[0] - q[0]; });
      items.forEach(function (it) {
        var ends = tracks[it[2]], t = 0;
        while (t < ends.length && ends[t] + 24 > it[0]) t++;
        if (t >= MAX_TRACKS) t = MAX_TRACKS - 1;
        ends[t] = Math.max(ends[t] || 0, it[1]);
        (it[4] ? trackOfF : trackOf).set(it[3], t);
      });
    }
    var laneTop = [], y0 = TOP;
    laneNames.forEach(function (_, li) { laneTop.push(y0); y0 += Math.max(LANE_MIN, Math.max(1, tracks[li].length) * TRACK_H + 6); });
    var H = y0 + 4;
    var Y = function (lane, track) { return laneTop[lane] + 3 + (track || 0) * TRACK_H + TRACK_H / 2 + 2; };
    var yOf = function (k) { return Y(laneMap[C.lane[k]], trackOf.get(k)); };
    var yOfVersion = function (v, fallback) {
      var k = byVersion.get(v);
      return k === undefined ? fallback : yOf(k);
    };
    var out = [];
    out.push('<defs><pattern id="hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
      '<rect width="5" height="5" class="hatch-bg"/><line x1="0" y1="0" x2="0" y2="5" class="hatch-line"/></pattern>' +
      '<clipPath id="plot"><rect x="' + (LABEL - 6) + '" y="0" width="' + (W - LABEL + 6) + '" height="' + H + '"/></clipPath></defs>');
    laneNames.forEach(function (name, li) {
      var h = Math.max(LANE_MIN, Math.max(1, tracks[li].length) * TRACK_H + 6);
      out.push('<g class="lane" data-lane="' + li + '"><rect class="lane-bg" x="0" y="' + laneTop[li] + '" width="' + W + '" height="' + h + '"/>' +
        laneLabel(name, laneTop[li]) + "</g>");
    });
    var step = niceStep(b - a, Math.max(2, Math.floor(plotW / 130)));
    out.push('<g class="axis">');
    for (var t = Math.ceil(a / step) * step; t <= b; t += step) {
      out.push('<line x1="' + X(t) + '" x2="' + X(t) + '" y1="' + (TOP - 4) + '" y2="' + H + '"/><text x="' + (X(t) + 2) + '" y="' + (TOP - 8) + '">' + esc(tickLabel(t, step)) + "</text>");
    }
    out.push("</g>");
    if (detail) {
      var links = [], spans = [];
      vis.forEach(function (k) {
        var li = laneMap[C.lane[k]], y = yOf(k), x0 = X(readAt(k)), x1 = X(commitEnd(k));
        var cls = "span op-" + C.cls[k] + (C.att[k] > 1 ? " retried" : "") + (C.exe[k] > 1 ? " rerun" : "") + (C.rl[k] ? " row-level" : "") +
          (C.t0rec[k] ? "" : " read-unrecorded") + (selected === C.v[k] ? " selected" : "");
        var g = '<g class="' + cls + '" data-version="' + C.v[k] + '" data-lane="' + li + '">';
        if (C.exe[k] > 1 && mode === "time") g += '<line class="rerun-ghost" x1="' + X(commitStart(k)) + '" x2="' + x0 + '" y1="' + y + '" y2="' + y + '"/>';
        g += '<rect x="' + Math.min(x0, x1 - 2) + '" y="' + (y - BAR_H / 2) + '" width="' + Math.max(2, x1 - x0) + '" height="' + BAR_H + '" rx="2"/>';
        g += '<circle class="commit-mark" cx="' + x1 + '" cy="' + y + '" r="3"/>';
        var badge = (C.att[k] > 1 ? "×" + C.att[k] : "") + (C.exe[k] > 1 ? " run " + C.exe[k] : "");
        if (badge) g += '<text class="badge" x="' + (x1 + 5) + '" y="' + (y + 4) + '">' + esc(badge) + "</text>";
        if (vis.length <= 200) g += '<text class="vlabel" x="' + x1 + '" y="' + (y - BAR_H / 2 - 1) + '">v' + C.v[k] + "</text>";
        g += "<title>" + esc(title(k)) + "</title></g>";
        spans.push(g);
        C.chk[k].forEach(function (c) {
          var wx = versionX(c[0]);
          var x2 = wx == null ? LABEL - 4 : clampX(wx), y2 = yOfVersion(c[0], y);
          links.push('<a class="winner-link' + (c[4] ? " row-level" : "") + '" href="#v' + c[0] + '" data-version="' + C.v[k] + '" data-winner="' + c[0] + '">' +
            '<path d="M' + x1 + " " + y + " Q" + (x1 + x2) / 2 + " " + (Math.min(y, y2) - 14) + " " + x2 + " " + y2 + '"/>' +
            "<title>" + esc("v" + C.v[k] + " checked against v" + c[0] + " (" + str(c[1]) + "): " + str(c[2])) + "</title></a>");
        });
        // Winners past the recorded ones, and the concurrent commits of a writer that records
        // no checks: a range, not one link each.
        var from = null, to = C.v[k] - 1, what = "";
        if (C.more[k]) { from = C.v[k] - C.more[k]; what = C.more[k] + " more winners checked, not recorded"; }
        else if (C.exe[k] == null && C.rv[k] != null && C.v[k] - C.rv[k] > 1) { from = C.rv[k] + 1; what = "concurrent commits (this writer records no checks)"; }
        if (from != null) {
          var fx = versionX(from), tx = versionX(to);
          var rx0 = fx == null ? LABEL - 4 : clampX(fx), rx1 = tx == null ? rx0 : clampX(tx);
          links.push('<g class="winner-range" data-version="' + C.v[k] + '" data-from="' + from + '" data-to="' + to + '">' +
            '<line x1="' + rx0 + '" x2="' + Math.max(rx1, rx0 + 2) + '" y1="' + (y - BAR_H / 2 - 3) + '" y2="' + (y - BAR_H / 2 - 3) + '"/>' +
            "<title>" + esc("v" + C.v[k] + ": v" + from + "–v" + to + ", " + what) + "</title></g>");
        }
      });
      visF.forEach(function (j) {
        var f = F[j], li = laneMap[f.lane], y = Y(li, trackOfF.get(j)), x0 = X(failedStart(f)), x1 = X(failedEnd(f));
        var tt = "failed attempt " + f.id + ": " + str(f.op) + " read v" + f.rv + ", " + str(f.err) + (f.wv != null ? " (lost to v" + f.wv + ")" : "") +
          (f.rule != null ? "\n" + str(f.rule) : "") + (f.msg != null ? "\n" + str(f.msg) : "");
        spans.push('<g class="span failed op-' + f.cls + '" data-attempt="' + esc(f.id) + '" data-lane="' + li + '">' +
          '<rect x="' + Math.min(x0, x1 - 2) + '" y="' + (y - BAR_H / 2) + '" width="' + Math.max(2, x1 - x0) + '" height="' + BAR_H + '" rx="2"/>' +
          '<text class="cross" x="' + (x1 - 4) + '" y="' + (y + 4) + '">✕</text><title>' + esc(tt) + "</title></g>");
        if (f.wv != null) {
          var wx = versionX(f.wv);
          var x2 = wx == null ? LABEL - 4 : clampX(wx), y2 = yOfVersion(f.wv, y);
          links.push('<a class="winner-link failed-link" href="#v' + f.wv + '" data-attempt="' + esc(f.id) + '" data-winner="' + f.wv + '">' +
            '<path d="M' + x1 + " " + y + " Q" + (x1 + x2) / 2 + " " + (Math.min(y, y2) - 14) + " " + x2 + " " + y2 + '"/><title>' + esc(tt) + "</title></a>");
        }
      });
      out.push('<g class="links" clip-path="url(#plot)">' + links.join("") + "</g>", '<g class="spans" clip-path="url(#plot)">' + spans.join("") + "</g>");
      note.textContent = vis.length + " commit(s)" + (visF.length ? " and " + visF.length + " failed attempt(s)" : "") + " in view";
    } else {
      // Density: commits per lane per 3-pixel column.
      var cols = Math.ceil(plotW / 3), counts = new Map(), fails = new Map(), top = 1;
      var bump = function (m, li, u) {
        var c = Math.min(cols - 1, Math.max(0, Math.floor((u - a) * scale / 3))), key = li * cols + c, n = (m.get(key) || 0) + 1;
        m.set(key, n);
        if (n > top) top = n;
      };
      vis.forEach(function (k) { bump(counts, laneMap[C.lane[k]], commitEnd(k)); });
      visF.forEach(function (j) { bump(fails, laneMap[F[j].lane], failedEnd(F[j])); });
      [[counts, "density"], [fails, "density failed"]].forEach(function (pair) {
        pair[0].forEach(function (n, key) {
          var li = Math.floor(key / cols), c = key % cols;
          out.push('<rect class="' + pair[1] + '" x="' + (LABEL + c * 3) + '" y="' + (Y(li) - BAR_H / 2) + '" width="3" height="' + BAR_H +
            '" fill-opacity="' + (0.15 + 0.85 * n / top).toFixed(2) + '"/>');
        });
      });
      note.textContent = vis.length + " commits in view: drawn as density (darker: more commits); drag across the lanes or the overview, or use the mouse wheel, to zoom in to single commits";
    }
    lanesSvg.setAttribute("width", W);
    lanesSvg.setAttribute("height", H);
    lanesSvg.setAttribute("data-mode", detail ? "detail" : "density");
    lanesSvg.setAttribute("data-axis", mode);
    lanesSvg.innerHTML = out.join("");
    renderOverview(W, plotW);
  }

  var full = null;
  function renderOverview(W, plotW) {
    var a = full[0], b = full[1], bins = Math.max(10, Math.floor(plotW / 3)), counts = new Array(bins).fill(0), top = 1;
    for (var k = 0; k < N; k++) {
      var e = commitEnd(k);
      if (e == null) continue;
      var c = Math.min(bins - 1, Math.max(0, Math.floor((e - a) / (b - a) * bins)));
      if (++counts[c] > top) top = counts[c];
    }
    var H = 40, out = ['<text class="ov-label" x="6" y="24">all ' + N + " commits</text>"];
    counts.forEach(function (n, c) {
      if (n) out.push('<rect class="ov-bar" x="' + (LABEL + c * plotW / bins) + '" y="' + (H - 4 - 30 * n / top) + '" width="' + Math.max(1, plotW / bins - 0.5) + '" height="' + (30 * n / top) + '"/>');
    });
    var x0 = LABEL + (view[0] - a) / (b - a) * plotW, x1 = LABEL + (view[1] - a) / (b - a) * plotW;
    out.push('<rect class="brush" x="' + x0 + '" y="1" width="' + Math.max(2, x1 - x0) + '" height="' + (H - 2) + '"/>');
    overview.setAttribute("width", W);
    overview.setAttribute("height", H);
    overview.innerHTML = out.join("");
  }

  function setView(a, b) {
    var minSpan = mode === "time" ? 5 : 2;
    if (b - a < minSpan) { var m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
    view = [Math.max(full[0], a), Math.min(full[1], b)];
    if (view[1] <= view[0]) view = full.slice();
    render();
  }

  function showDetails(k) {
    var v = C.v[k], h = [];
    h.push("<h2>v" + v + " · " + esc(str(C.op[k])) + "</h2>");
    h.push('<p class="writer">writer: ' + esc(laneNames[laneMap[C.lane[k]]]) + (str(C.eng[k]) ? " (" + esc(str(C.eng[k])) + ")" : "") + "</p>");
    h.push('<p class="summary">' + esc(str(C.sum[k])) + "</p>");
    var rows = [];
    if (C.rv[k] != null) rows.push(["read version", '<a href="#v' + C.rv[k] + '">v' + C.rv[k] + "</a>"]);
    rows.push(["read at", C.t0rec[k] ? esc(iso(C.t0[k])) : "not recorded by this writer" + (C.t0[k] != null ? " (at or after " + esc(iso(C.t0[k])) + ", when its read version was committed)" : "")]);
    if (C.exe[k] > 1) rows.push(["execution", C.exe[k] + ", re-run after conflicts with " + (C.rerun[k] || []).map(function (w) { return '<a href="#v' + w + '">v' + w + "</a>"; }).join(", ") + "; the first read at " + esc(iso(C.t00[k]))]);
    if (C.tcs[k] != null) rows.push(["commit began", esc(iso(C.tcs[k]))]);
    rows.push(["committed at", esc(iso(C.t1[k]))]);
    if (C.att[k] != null) rows.push(["commit-loop attempts", String(C.att[k])]);
    h.push('<dl class="times">' + rows.map(function (r) { return "<dt>" + r[0] + "</dt><dd>" + r[1] + "</dd>"; }).join("") + "</dl>");
    if (C.chk[k].length) {
      h.push('<ul class="checks">' + C.chk[k].map(function (c) {
        return '<li class="check' + (c[4] ? " row-level" : "") + '" data-winner="' + c[0] + '">against <a href="#v' + c[0] + '">v' + c[0] + "</a> (" + esc(str(c[1])) +
          '): <span class="rule">' + esc(str(c[2])) + '</span><div class="outcome">' + esc(str(c[3])) + "</div></li>";
      }).join("") + "</ul>");
    }
    if (C.more[k]) h.push('<p class="not-recorded">(' + C.more[k] + " more winners checked, not recorded: v" + (v - C.more[k]) + "–v" + (v - 1) + ")</p>");
    details.innerHTML = h.join("");
    details.setAttribute("data-version", v);
  }

  function showFailed(id) {
    var f = F.find(function (x) { return x.id === id; });
    if (!f) return;
    details.innerHTML = "<h2>failed attempt " + esc(f.id) + " · " + esc(str(f.op)) + "</h2>" +
      '<p class="writer">writer: ' + esc(laneNames[laneMap[f.lane]]) + "</p>" +
      '<dl class="times"><dt>read version</dt><dd>' + (f.rv == null ? "" : '<a href="#v' + f.rv + '">v' + f.rv + "</a>") + "</dd>" +
      "<dt>started at</dt><dd>" + esc(iso(f.t0)) + "</dd><dt>failed at</dt><dd>" + esc(iso(f.t1)) + "</dd>" +
      "<dt>error</dt><dd>" + esc(str(f.err)) + (f.wv != null ? ', lost to <a href="#v' + f.wv + '">v' + f.wv + "</a>" : "") + "</dd></dl>" +
      (f.rule != null ? '<p><span class="rule">' + esc(str(f.rule)) + "</span></p>" : "") + '<p class="outcome">' + esc(str(f.msg)) + "</p>";
    details.setAttribute("data-attempt", f.id);
  }

  // focus: the view closes in on the commit and its winners (a #v link the page opened with).
  function select(v, focus) {
    var k = byVersion.get(v);
    if (k === undefined) {
      details.innerHTML = "<h2>v" + esc(v) + "</h2><p>Not in this timeline's range (v" + D.first + "–v" + D.last + ").</p>";
      return;
    }
    selected = v;
    showDetails(k);
    var s = commitStart(k), e = commitEnd(k), inView = s >= view[0] && e <= view[1];
    if (focus || !inView || lanesSvg.getAttribute("data-mode") === "density") {
      var lo = s, hi = e;
      C.chk[k].forEach(function (c) { var t = versionX(c[0]); if (t != null) { lo = Math.min(lo, t); hi = Math.max(hi, t); } });
      var pad = Math.max((hi - lo) * 0.6, mode === "time" ? 200 : 3);
      setView(lo - pad, hi + pad);
    } else {
      render();
    }
  }

  function fromHash(focus) {
    var m = /^#v(\d+)$/.exec(location.hash);
    if (m) select(Number(m[1]), focus === true);
  }

  // -- interaction ------------------------------------------------------------------------
  function unitAt(svg, clientX) {
    var r = svg.getBoundingClientRect(), plotW = r.width - LABEL - PAD;
    var frac = (clientX - r.left - LABEL) / plotW;
    return svg === overview ? full[0] + frac * (full[1] - full[0]) : view[0] + frac * (view[1] - view[0]);
  }
  function dragZoom(svg) {
    var startX = null, startU = null;
    svg.addEventListener("mousedown", function (ev) { startX = ev.clientX; startU = unitAt(svg, ev.clientX); });
    window.addEventListener("mouseup", function (ev) {
      if (startX == null) return;
      var moved = Math.abs(ev.clientX - startX) > 4, u = unitAt(svg, ev.clientX), s0 = startU;
      startX = null;
      if (moved) setView(Math.min(s0, u), Math.max(s0, u));
      else if (svg === overview) { var half = (view[1] - view[0]) / 2; setView(u - half, u + half); }
    });
  }
  dragZoom(overview);
  dragZoom(lanesSvg);
  lanesSvg.addEventListener("click", function (ev) {
    var g = ev.target.closest && ev.target.closest("g.span");
    if (g && g.hasAttribute("data-version")) location.hash = "#v" + g.getAttribute("data-version");
    else if (g) showFailed(g.getAttribute("data-attempt"));
  });
  lanesSvg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var u = unitAt(lanesSvg, ev.clientX), f = ev.deltaY > 0 ? 1.25 : 0.8;
    setView(u - (u - view[0]) * f, u + (view[1] - u) * f);
  }, { passive: false });
  function zoom(f) { var m = (view[0] + view[1]) / 2, h = (view[1] - view[0]) * f / 2; setView(m - h, m + h); }
  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("zoom-reset").addEventListener("click", function () { setView(full[0], full[1]); });
  Array.prototype.forEach.call(document.querySelectorAll("#controls [data-mode]"), function (b) {
    b.addEventListener("click", function () {
      mode = b.getAttribute("data-mode");
      Array.prototype.forEach.call(document.querySelectorAll("#controls [data-mode]"), function (o) { o.classList.toggle("on", o === b); });
      full = extent();
      view = full.slice();
      if (selected != null) select(selected); else render();
    });
  });
  window.addEventListener("hashchange", fromHash);
  window.addEventListener("resize", function () { render(); });

  var legend = [["append", "append"], ["write", "write / overwrite"], ["delete", "delete"], ["update", "update"], ["merge", "merge"], ["optimize", "optimize"],
    ["metadata", "metadata"], ["create", "create"], ["other", "other"]];
  document.getElementById("legend").innerHTML = legend.map(function (l) { return '<span class="key op-' + l[0] + '"><i></i>' + l[1] + "</span>"; }).join("") +
    '<span class="key failed"><i></i>failed attempt</span><span class="key"><b>×3</b> committed on the 3rd attempt (rebased)</span>' +
    '<span class="key"><b class="dash">- -</b> earlier executions of a re-run operation</span><span class="key"><b class="link">⌒</b> checked winner (green: passed at row level)</span>' +
    '<span class="key"><b class="range">▔</b> winners not recorded, or concurrent commits of a writer that records no checks</span>' +
    '<span class="key">span: read → commit (a writer that records no read time: from its read version\'s commit)</span>';

  full = extent();
  view = full.slice();
  render();
  fromHash(true);
  document.body.getBoundingClientRect(); // layout included in the figure below
  document.documentElement.setAttribute("data-render-ms", performance.now().toFixed(1));
  document.documentElement.setAttribute("data-script-ms", (performance.now() - started).toFixed(1));
})();
