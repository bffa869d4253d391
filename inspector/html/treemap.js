// The zoomable treemap of a report's bytes. Layout by d3-hierarchy (inlined before this script).
// Data: a script element of type application/json, class treemap-data, data-index I, holding a tree of
// {n: name, v: bytes, c: children, b: bucket (colour), a: area when it differs from v, k: folded count,
//  s: shape, d: dtype, e: elements, o: offset, r: role, f: file}. Names are only ever set as textContent.
"use strict";
(function () {
  var MIN_AREA = 12; // px^2: smaller boxes are not drawn (they would not be seen)
  var MAX_BOXES = 2500; // never more boxes than this, whatever the file
  var tip = document.getElementById("tip");

  function fmt(n) {
    return n.toLocaleString("en-US");
  }
  function human(n) {
    if (n < 1000) return fmt(n) + " B";
    var units = ["kB", "MB", "GB", "TB"];
    var v = n / 1000, i = 0;
    while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
    return v.toFixed(v < 10 ? 2 : 1) + " " + units[i];
  }
  function lines(d, root) {
    var share = root.v ? (100 * d.v / root.v).toFixed(2) : "0";
    var out = [d.n, fmt(d.v) + " bytes (" + share + "% of " + root.n.replace(/^whole /, "the ") + ")"];
    if (d.s) out.push("shape [" + d.s.join(", ") + "], " + d.d + (d.e === undefined ? "" : ", " + fmt(d.e) + " elements"));
    if (d.o !== undefined) out.push("offset " + fmt(d.o) + " (0x" + d.o.toString(16) + ")" + (d.f ? " in " + d.f : ""));
    if (d.r) out.push("role " + d.r);
    if (d.k) out.push(fmt(d.k) + " entries folded together");
    if (d.c) out.push("click to zoom into " + fmt(d.c.length) + " parts");
    return out;
  }

  function Treemap(box, crumbs, root) {
    this.box = box;
    this.crumbs = crumbs;
    this.root = root;
    this.stack = [root];
    this.bucket = [root.b];
    var self = this;
    box.addEventListener("mousemove", function (ev) { self.hover(ev); });
    box.addEventListener("mouseleave", function () { tip.hidden = true; });
    box.addEventListener("click", function (ev) { self.zoom(ev.target); });
    box.addEventListener("keydown", function (ev) {
      var depth = self.stack.length;
      if (ev.key === "Enter" || ev.key === " ") self.zoom(ev.target);
      if (ev.key === "Escape" || ev.key === "Backspace") self.up(self.stack.length - 2);
      if (self.stack.length !== depth) {
        ev.preventDefault();
        var first = box.querySelector(".cell.d1"); // keep the keyboard inside the treemap after a redraw
        if (first) first.focus();
      }
    });
    box.addEventListener("focusin", function (ev) {
      var r = ev.target.getBoundingClientRect();
      self.hover({ target: ev.target, clientX: r.left + 8, clientY: r.top + 8 });
    });
    box.addEventListener("focusout", function () { tip.hidden = true; });
    this.draw();
  }

  Treemap.prototype.draw = function () {
    var focus = this.stack[this.stack.length - 1];
    var open = new Set([focus].concat(focus.c || []));
    var w = this.box.clientWidth, h = this.box.clientHeight;
    var tree = d3.hierarchy(focus, function (d) { return open.has(d) ? d.c : null; })
      .sum(function (d) { return open.has(d) && d.c ? 0 : (d.a !== undefined ? d.a : d.v); })
      .sort(function (a, b) { return b.value - a.value; });
    d3.treemap().tile(d3.treemapSquarify).size([w, h]).round(true)
      .paddingInner(1).paddingOuter(1)
      .paddingTop(function (n) { return n.depth === 1 && n.children ? 16 : 1; })(tree);
    this.box.replaceChildren();
    this.cells = [];
    var drawn = 0, self = this, inherited = this.bucket[this.bucket.length - 1];
    tree.each(function (n) {
      if (n.depth === 0 || drawn >= MAX_BOXES) return;
      var bw = n.x1 - n.x0, bh = n.y1 - n.y0;
      if (bw * bh < MIN_AREA) return;
      var el = document.createElement("div");
      el.className = "cell d" + n.depth + " b-" + (n.data.b || (n.parent.data.b) || inherited || "none") +
        (n.depth === 2 && n.data.b ? " own" : ""); // a box with its own colour (a folder's parameter bytes)
      el.style.left = n.x0 + "px";
      el.style.top = n.y0 + "px";
      el.style.width = bw + "px";
      el.style.height = bh + "px";
      el.dataset.i = String(self.cells.length);
      if (n.depth === 1) el.tabIndex = 0;
      if (bw > 36 && bh > 12) {
        var label = document.createElement("span");
        label.textContent = n.data.n + (bw > 120 ? "  " + human(n.data.v) : "");
        el.appendChild(label);
      }
      self.cells.push(n);
      self.box.appendChild(el);
      drawn++;
    });
    this.box.dataset.boxes = String(drawn);
    this.trail();
  };

  Treemap.prototype.node = function (el) {
    var i = el && el.dataset ? el.dataset.i : undefined;
    if (i === undefined && el && el.parentElement) i = el.parentElement.dataset.i;
    return i === undefined ? null : this.cells[Number(i)];
  };

  Treemap.prototype.hover = function (ev) {
    var n = this.node(ev.target);
    if (!n) { tip.hidden = true; return; }
    tip.replaceChildren();
    lines(n.data, this.root).forEach(function (text, j) {
      var line = document.createElement(j === 0 ? "b" : "div");
      line.textContent = text;
      tip.appendChild(line);
    });
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, ev.clientX - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  };

  Treemap.prototype.zoom = function (el) {
    var n = this.node(el);
    while (n && n.depth > 1) n = n.parent;
    if (!n || !n.data.c) return;
    this.stack.push(n.data);
    this.bucket.push(n.data.b || this.bucket[this.bucket.length - 1]);
    tip.hidden = true;
    this.draw();
  };

  Treemap.prototype.up = function (level) {
    if (level < 0 || level >= this.stack.length - 1) return;
    this.stack.length = level + 1;
    this.bucket.length = level + 1;
    this.draw();
  };

  Treemap.prototype.trail = function () {
    var self = this;
    this.crumbs.replaceChildren();
    this.stack.forEach(function (d, level) {
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = d.n + " (" + human(d.v) + ")";
      b.disabled = level === self.stack.length - 1;
      b.addEventListener("click", function () { self.up(level); });
      self.crumbs.appendChild(b);
    });
  };

  var maps = [];
  document.querySelectorAll("script.treemap-data").forEach(function (el) {
    var i = el.dataset.index;
    var box = document.getElementById("treemap-" + i);
    maps.push(new Treemap(box, document.getElementById("crumbs-" + i), JSON.parse(el.textContent)));
  });
  function redraw() { maps.forEach(function (m) { m.draw(); }); }
  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(redraw, 150);
  });
  window.addEventListener("beforeprint", redraw); // the printed page is narrower than the window
  window.addEventListener("afterprint", redraw);
  document.documentElement.dataset.treemaps = String(maps.length);
})();
