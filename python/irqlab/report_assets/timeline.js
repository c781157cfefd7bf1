/* irqlab report: the interactive timeline (python/irqlab/report.py inlines
 * this file; no library, no network).
 *
 * Each <section class="timeline"> holds its data: a JSON description
 * (script.tl-meta: labels with their colours, tracks, counters, servers,
 * the run's duration) and the deflated LEB128 varint stream of the slices
 * (script.tl-blob, base64; python/irqlab/timeline.py writes both). The
 * canvas draws one track per CPU (threads in their colours, top halves in
 * reds with a tick for each on the track's top edge, softirq in magentas,
 * idle grey), a thin track of VCPU switches where there are any and, on
 * demand, a row per server with its remaining budget.
 *
 * Mouse: wheel zooms around the pointer, a sideways swipe or a drag pans, double-click shows the
 * whole run; keys (canvas focused): + - zoom, arrows pan, 0 whole run.
 * With several runs on the page, "same view" keeps their timelines on one
 * range.
 * The visible range is on the section as data-view-start-ns /
 * data-view-end-ns (tests read it back).
 */
(function () {
  "use strict";
  var GUTTER = 120, AXIS = 26, MIN_SPAN = 50;

  function inflate(b64) {
    var bin = atob(b64), u = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    var ds = new DecompressionStream("deflate");
    var stream = new Blob([u]).stream().pipeThrough(ds);
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }

  function Reader(u) { this.u = u; this.p = 0; }
  Reader.prototype.read = function (n) {
    var out = new Float64Array(n), u = this.u, p = this.p;
    for (var i = 0; i < n; i++) {
      var v = 0, mul = 1, b;
      do { b = u[p++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
      out[i] = v;
    }
    this.p = p;
    return out;
  };

  function cumsum(a) { for (var i = 1; i < a.length; i++) a[i] += a[i - 1]; return a; }

  function lowerBound(a, x) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
    return lo;
  }

  function fmt(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toPrecision(6).replace(/\.?0+$/, "") + " s";
    if (a >= 1e6) return (ns / 1e6).toPrecision(6).replace(/\.?0+$/, "") + " ms";
    if (a >= 1e3) return (ns / 1e3).toPrecision(6).replace(/\.?0+$/, "") + " us";
    return Math.round(ns) + " ns";
  }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  function Timeline(sec, meta, bytes) {
    this.sec = sec; this.meta = meta;
    this.canvas = sec.querySelector("canvas");
    this.tip = sec.querySelector(".tl-tip");
    this.rangeText = sec.querySelector(".tl-range");
    this.duration = meta.duration_ns;
    var r = new Reader(bytes);
    this.tracks = meta.tracks.map(function (t) {
      var s = cumsum(r.read(t.n)), d = r.read(t.n), l = r.read(t.n);
      var e = new Float64Array(t.n), maxDur = 0;
      for (var i = 0; i < t.n; i++) { e[i] = s[i] + d[i]; if (d[i] > maxDur) maxDur = d[i]; }
      return { cpu: t.cpu, kind: t.kind, s: s, e: e, l: l, maxDur: maxDur };
    });
    this.counters = meta.counters.map(function (c) {
      var t = cumsum(r.read(c.n)), z = r.read(c.n), v = new Float64Array(c.n);
      for (var i = 0; i < c.n; i++) v[i] = z[i] % 2 ? -(z[i] + 1) / 2 : z[i] / 2;
      return { server: c.server, cpu: c.cpu, t: t, v: v };
    });
    this.servers = this.serverTracks();
    var w = meta.initial || [0, this.duration];
    this.t0 = w[0]; this.t1 = w[1];
    this.showServers = false;
    this.bind();
    this.layout();
    this.setView(this.t0, this.t1);
  }

  // a server's slices: those of its CPU's track whose label names it
  Timeline.prototype.serverTracks = function () {
    var self = this, labels = this.meta.labels;
    return this.meta.servers.map(function (srv) {
      var tr = self.tracks.filter(function (t) { return t.cpu === srv.cpu && t.kind === "cpu"; })[0];
      var idx = [];
      if (tr) for (var i = 0; i < tr.l.length; i++) if (labels[tr.l[i]].server === srv.name) idx.push(i);
      var n = idx.length, s = new Float64Array(n), e = new Float64Array(n), l = new Float64Array(n), maxDur = 0;
      for (var k = 0; k < n; k++) {
        s[k] = tr.s[idx[k]]; e[k] = tr.e[idx[k]]; l[k] = tr.l[idx[k]];
        if (e[k] - s[k] > maxDur) maxDur = e[k] - s[k];
      }
      var counter = self.counters.filter(function (c) { return c.cpu === srv.cpu && c.server === srv.name; })[0];
      return { srv: srv, track: { s: s, e: e, l: l, maxDur: maxDur }, counter: counter };
    });
  };

  Timeline.prototype.layout = function () {
    var rows = [], self = this;
    var cpus = this.meta.cpus;
    cpus.forEach(function (cpu) {
      var main = self.tracks.filter(function (t) { return t.cpu === cpu && t.kind === "cpu"; })[0];
      var sw = self.tracks.filter(function (t) { return t.cpu === cpu && t.kind === "switch"; })[0];
      rows.push({ type: "cpu", label: "CPU " + cpu, h: 30, track: main || null });
      if (sw) rows.push({ type: "switch", label: "  switches", h: 10, track: sw });
      if (self.showServers) {
        self.servers.forEach(function (x) {
          if (x.srv.cpu !== cpu || !x.srv.row) return;
          rows.push({ type: "server", label: "  " + x.srv.name, h: 14, track: x.track, srv: x.srv });
          rows.push({ type: "budget", label: x.srv.budget_ns ? "    budget \u2264 " + fmt(x.srv.budget_ns) : "    budget", h: x.srv.budget_ns ? 26 : 14, counter: x.counter, srv: x.srv });
        });
      }
    });
    var y = AXIS;
    rows.forEach(function (r) { r.y = y; y += r.h + 4; });
    this.rows = rows;
    this.height = y + 4;
    this.resize();
  };

  Timeline.prototype.resize = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1;
    var w = Math.max(400, this.sec.clientWidth);
    c.style.width = w + "px"; c.style.height = this.height + "px";
    c.width = Math.round(w * dpr); c.height = Math.round(this.height * dpr);
    this.cssW = w; this.dpr = dpr;
    this.draw();
  };

  Timeline.prototype.setView = function (t0, t1) {
    var full = this.duration, span = Math.min(Math.max(t1 - t0, MIN_SPAN), full);
    if (t0 < 0) t0 = 0;
    if (t0 + span > full) t0 = full - span;
    this.t0 = t0; this.t1 = t0 + span;
    this.sec.setAttribute("data-view-start-ns", String(Math.round(this.t0)));
    this.sec.setAttribute("data-view-end-ns", String(Math.round(this.t1)));
    if (this.rangeText)
      this.rangeText.textContent = fmt(this.t0) + " \u2013 " + fmt(this.t1) + " (" + fmt(this.t1 - this.t0) + " of " + fmt(full) + ")";
    var link = this.sec.querySelector("input.tl-link");
    if (link && link.checked && !Timeline.syncing) {
      // the same range in every other linked timeline (design A vs B)
      Timeline.syncing = true;
      var a = this.t0, b = this.t1, me = this;
      window.irqlabTimelines.forEach(function (o) {
        var l = o.sec.querySelector("input.tl-link");
        if (o !== me && l && l.checked) o.setView(a, b);
      });
      Timeline.syncing = false;
    }
    if (!this.pending) {
      var self = this;
      this.pending = true;
      requestAnimationFrame(function () { self.pending = false; self.draw(); });
    }
  };
  Timeline.prototype.view = function () { return [this.t0, this.t1]; };
  Timeline.prototype.zoom = function (factor, anchor) {
    var a = anchor === undefined ? (this.t0 + this.t1) / 2 : anchor;
    var span = this.t1 - this.t0, ns = Math.min(Math.max(span * factor, MIN_SPAN), this.duration);
    var f = (a - this.t0) / span;
    this.setView(a - f * ns, a - f * ns + ns);
  };

  Timeline.prototype.xOf = function (t) { return GUTTER + (t - this.t0) * (this.cssW - GUTTER) / (this.t1 - this.t0); };
  Timeline.prototype.tOf = function (x) { return this.t0 + (x - GUTTER) * (this.t1 - this.t0) / (this.cssW - GUTTER); };

  Timeline.prototype.draw = function () {
    var ctx = this.canvas.getContext("2d"), W = this.cssW, self = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, W, this.height);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, this.height);
    this.drawAxis(ctx);
    var traced = this.meta.trace_end_ns === undefined ? this.duration : this.meta.trace_end_ns;
    var x0 = Math.max(GUTTER, this.xOf(0)), x1 = Math.max(x0, Math.min(W, this.xOf(traced)));
    var x2 = Math.min(W, this.xOf(this.duration));
    this.rows.forEach(function (r) {
      ctx.fillStyle = "#222"; ctx.font = "11px system-ui,sans-serif"; ctx.textBaseline = "middle";
      ctx.fillText(r.label, 4, r.y + r.h / 2, GUTTER - 8);
      if (x2 > x1) self.drawUntraced(ctx, x1, x2, r.y, r.h);
      if (r.type === "budget") { self.drawBudget(ctx, r); return; }
      ctx.fillStyle = r.type === "switch" ? "#f4f4f4" : self.meta.idle_color;
      ctx.fillRect(x0, r.y, x1 - x0, r.h);
      if (r.track) self.drawSlices(ctx, r.track, r.y, r.h, r.type === "cpu");
    });
  };

  // the part of the run the trace does not cover: hatched, not idle grey
  Timeline.prototype.drawUntraced = function (ctx, xa, xb, y, h) {
    ctx.save();
    ctx.beginPath(); ctx.rect(xa, y, xb - xa, h); ctx.clip();
    ctx.fillStyle = "#fff"; ctx.fillRect(xa, y, xb - xa, h);
    ctx.strokeStyle = "#d0d0d0"; ctx.beginPath();
    for (var x = xa - h; x < xb; x += 8) { ctx.moveTo(x, y + h); ctx.lineTo(x + h, y); }
    ctx.stroke(); ctx.restore();
  };

  Timeline.prototype.drawAxis = function (ctx) {
    var W = this.cssW, span = this.t1 - this.t0;
    var step = niceStep(span / Math.max(2, (W - GUTTER) / 110));
    ctx.strokeStyle = "#ccc"; ctx.fillStyle = "#444"; ctx.font = "11px system-ui,sans-serif";
    ctx.textBaseline = "top";
    for (var t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) {
      var x = Math.round(this.xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 6); ctx.lineTo(x, this.height); ctx.stroke();
      ctx.fillText(fmt(t), x + 2, 4);
    }
  };

  // Slices wider than a pixel are drawn as they are; narrower ones are
  // summed per pixel column and drawn as a stacked bar of that column:
  // each label's share of the column (top halves at the bottom, then
  // softirq, then threads), the whole bar at least a quarter of the row.
  // Top halves also get a tick on the top edge.
  var KIND_ORDER = { isr: 0, softirq: 1, switch: 2, task: 3, thread: 3 };
  Timeline.prototype.drawSlices = function (ctx, tr, y, h, ticks) {
    var labels = this.meta.labels, t0 = this.t0, t1 = this.t1;
    var k = (this.cssW - GUTTER) / (t1 - t0);
    var i = lowerBound(tr.s, t0 - tr.maxDur), n = tr.s.length;
    var col = -1, cov = {}, lastTick = -1;
    function flush() {
      if (col < 0) return;
      var keys = Object.keys(cov), tot = 0;
      keys.forEach(function (key) { tot += cov[key]; });
      if (tot > 0) {
        keys.sort(function (a, b) { return KIND_ORDER[labels[a].kind] - KIND_ORDER[labels[b].kind] || cov[b] - cov[a]; });
        var scale = Math.max(1, 0.25 / tot) * h, yy = y + h;
        keys.forEach(function (key) {
          var bh = Math.min(cov[key] * scale, yy - y);
          ctx.fillStyle = labels[key].color;
          ctx.fillRect(col, yy - bh, 1, bh);
          yy -= bh;
        });
      }
      cov = {}; col = -1;
    }
    for (; i < n && tr.s[i] < t1; i++) {
      if (tr.e[i] < t0) continue;
      var xa = GUTTER + (tr.s[i] - t0) * k, xb = GUTTER + (tr.e[i] - t0) * k;
      if (xa < GUTTER) xa = GUTTER;
      var lab = labels[tr.l[i]];
      if (ticks && lab.kind === "isr") {
        var tx = Math.floor(xa);
        if (tx !== lastTick) { ctx.fillStyle = lab.color; ctx.fillRect(tx, y - 3, 1, 3); lastTick = tx; }
      }
      if (xb - xa >= 1) {
        flush();
        ctx.fillStyle = lab.color;
        ctx.fillRect(xa, y, xb - xa, h);
      } else if (xb > xa) {
        var c = Math.floor(xa);
        if (c !== col) { flush(); col = c; }
        cov[tr.l[i]] = (cov[tr.l[i]] || 0) + (xb - xa);
      }
    }
    flush();
  };

  Timeline.prototype.drawBudget = function (ctx, r) {
    var W = this.cssW, srv = r.srv, c = r.counter;
    ctx.fillStyle = "#fafafa"; ctx.fillRect(GUTTER, r.y, W - GUTTER, r.h);
    if (!srv.budget_ns || !c || !c.t.length) {
      ctx.fillStyle = "#777"; ctx.font = "italic 11px system-ui,sans-serif";
      ctx.fillText("not applicable: " + (srv.no_budget || "no budget counter in the trace"), GUTTER + 6, r.y + r.h / 2);
      return;
    }
    var top = srv.budget_ns, t0 = this.t0, t1 = this.t1, k = (W - GUTTER) / (t1 - t0);
    // whole pixels and a 2 px line: crisp, in the server's own colour
    function yOf(v) { return Math.round(r.y + 1 + (r.h - 2) * (1 - Math.max(0, Math.min(1, v / top)))); }
    var i = Math.max(0, lowerBound(c.t, t0) - 1), n = c.t.length;
    ctx.strokeStyle = srv.color; ctx.lineWidth = 2; ctx.beginPath();
    // a step line; the changes within one pixel column are drawn as one
    // vertical stroke from their lowest to their highest value
    var v = c.v[i], col = -1, lo = 0, hi = 0;
    ctx.moveTo(GUTTER, yOf(v));
    function flush() {
      if (col < 0) return;
      ctx.lineTo(col, yOf(lo)); ctx.lineTo(col, yOf(hi)); ctx.lineTo(col, yOf(v));
      col = -1;
    }
    for (i = i + 1; i < n && c.t[i] <= t1; i++) {
      var x = Math.floor(GUTTER + (c.t[i] - t0) * k) + 0.5;
      if (x !== col) {
        flush();
        ctx.lineTo(x, yOf(v));
        col = x; lo = hi = v;
      }
      v = c.v[i];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    flush();
    ctx.lineTo(Math.min(W, this.xOf(this.duration)), yOf(v));
    ctx.stroke(); ctx.lineWidth = 1;
  };

  Timeline.prototype.hit = function (x, y) {
    var row = this.rows.filter(function (r) { return y >= r.y && y < r.y + r.h; })[0];
    if (!row || !row.track || x < GUTTER) return null;
    var tr = row.track, t = this.tOf(x), tol = 2 * (this.t1 - this.t0) / (this.cssW - GUTTER);
    var i = lowerBound(tr.s, t - tr.maxDur - tol), best = -1, bestD = Infinity;
    for (; i < tr.s.length && tr.s[i] <= t + tol; i++) {
      var d = t < tr.s[i] ? tr.s[i] - t : t > tr.e[i] ? t - tr.e[i] : 0;
      if (d <= tol && (d < bestD || (d === bestD && tr.e[i] - tr.s[i] < tr.e[best] - tr.s[best]))) { best = i; bestD = d; }
    }
    if (best < 0) return null;
    var lab = this.meta.labels[tr.l[best]];
    return lab.name + (lab.server ? " (server " + lab.server + ")" : "") + " \u00b7 " + lab.kind +
      "\nstart " + fmt(tr.s[best]) + ", duration " + fmt(tr.e[best] - tr.s[best]);
  };

  Timeline.prototype.bind = function () {
    var self = this, c = this.canvas, drag = null;
    function local(e) { var b = c.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; }
    c.addEventListener("wheel", function (e) {
      e.preventDefault();
      var unit = e.deltaMode === 1 ? 16 : 1, dx = e.deltaX * unit, dy = e.deltaY * unit;
      if (Math.abs(dx) > Math.abs(dy)) {  // a sideways swipe (trackpad): pan
        var dt = dx * (self.t1 - self.t0) / (self.cssW - GUTTER);
        self.setView(self.t0 + dt, self.t1 + dt);
        return;
      }
      var p = local(e);
      self.zoom(Math.exp(dy * 0.0015), p[0] >= GUTTER ? self.tOf(p[0]) : undefined);
    }, { passive: false });
    c.addEventListener("mousedown", function (e) {
      if (e.button !== 0) return;
      drag = { x: e.clientX, t0: self.t0, t1: self.t1 };
      c.style.cursor = "grabbing"; e.preventDefault();
    });
    window.addEventListener("mousemove", function (e) {
      if (drag) {
        var dt = (e.clientX - drag.x) * (drag.t1 - drag.t0) / (self.cssW - GUTTER);
        self.setView(drag.t0 - dt, drag.t1 - dt);
        return;
      }
      if (e.target !== c) { self.tip.style.display = "none"; return; }
      var p = local(e), text = self.hit(p[0], p[1]);
      if (!text) { self.tip.style.display = "none"; return; }
      self.tip.textContent = text; self.tip.style.display = "block";
      self.tip.style.left = Math.min(p[0] + 12, self.cssW - 260) + "px"; self.tip.style.top = (p[1] + 14) + "px";
    });
    window.addEventListener("mouseup", function () { drag = null; c.style.cursor = "grab"; });
    c.addEventListener("dblclick", function () { self.setView(0, self.duration); });
    c.addEventListener("keydown", function (e) {
      var span = self.t1 - self.t0;
      if (e.key === "+" || e.key === "=") self.zoom(0.5);
      else if (e.key === "-") self.zoom(2);
      else if (e.key === "ArrowLeft") self.setView(self.t0 - span / 4, self.t1 - span / 4);
      else if (e.key === "ArrowRight") self.setView(self.t0 + span / 4, self.t1 + span / 4);
      else if (e.key === "0") self.setView(0, self.duration);
      else return;
      e.preventDefault();
    });
    this.sec.querySelectorAll("button[data-act]").forEach(function (b) {
      b.addEventListener("click", function () {
        var a = b.getAttribute("data-act"), span = self.t1 - self.t0;
        if (a === "all") self.setView(0, self.duration);
        else if (a === "in") self.zoom(0.5);
        else if (a === "out") self.zoom(2);
        else if (a === "left") self.setView(self.t0 - span / 2, self.t1 - span / 2);
        else if (a === "right") self.setView(self.t0 + span / 2, self.t1 + span / 2);
      });
    });
    var box = this.sec.querySelector("input.tl-servers");
    if (box) box.addEventListener("change", function () { self.showServers = box.checked; self.layout(); });
    window.addEventListener("resize", function () { self.resize(); });
  };

  window.irqlabTimelines = [];
  document.querySelectorAll("section.timeline").forEach(function (sec) {
    var meta = JSON.parse(sec.querySelector("script.tl-meta").textContent);
    var blob = sec.querySelector("script.tl-blob").textContent.trim();
    var status = sec.querySelector(".tl-status");
    if (typeof DecompressionStream === "undefined") {
      status.textContent = "This browser has no DecompressionStream (Chromium 80+, Firefox 113+, Safari 16.4+ have it): the timeline cannot be drawn.";
      return;
    }
    inflate(blob).then(function (bytes) {
      var tl = new Timeline(sec, meta, bytes);
      window.irqlabTimelines.push(tl);
      status.textContent = "";
      sec.setAttribute("data-ready", "1");
      if (document.querySelectorAll("section.timeline").length > 1)
        sec.querySelector(".tl-link-label").style.display = "";
    }).catch(function (e) { status.textContent = "timeline: " + e; });
  });
})();
