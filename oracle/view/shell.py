"""The page frame, its stylesheet and its one script: small, hand-written, nothing fetched from outside.

One script serves both modes (``<body data-mode="served|export">``): the task list, its filters and
counts (the rows come page by page from ``/api/rows`` when served, from an embedded JSON block in
the export), the hash pages of the export, and the answer form of a task page. The filter runs in
the browser only, over the small list records (oracle/view/catalog.py), so it exists once.
"""

from __future__ import annotations

import html

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#fafbfc}
header{background:#24292f;color:#fff;padding:6px 16px}
header a{color:#fff;margin-right:14px}
main{padding:12px 16px}
h1{font-size:20px;margin:6px 0}
h2{font-size:16px;border-bottom:1px solid #d0d7de;margin-top:22px}
table{border-collapse:collapse;margin:6px 0}
td,th{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f3f6}
.muted{color:#687079}
.error{color:#b3261e}
pre{background:#f4f6f8;padding:8px;overflow:auto;max-height:480px;white-space:pre-wrap;margin:4px 0}
.side{display:flex;gap:10px;overflow-x:auto}
.cand{flex:1 1 0;min-width:260px;border:1px solid #d0d7de;padding:6px;background:#fff}
.cand.best{border-color:#1a7f37}
.cand h3{margin:2px 0;font-size:15px}
.score{float:right;color:#687079}
.badge{display:inline-block;border-radius:8px;padding:0 7px;font-size:12px;background:#e4e8ec;margin-left:4px}
.badge.pass{background:#d2f4dc}
.badge.fail{background:#ffdcd7}
.badge.flip{background:#ffe7a3}
.diff span{display:block;min-height:1.2em}
.diff .add{background:#e6ffec}
.diff .del{background:#ffebe9}
.diff .hunk{color:#0550ae}
.cols{display:flex;gap:24px;flex-wrap:wrap}
.cols>div{flex:1 1 380px}
.barrow{display:flex;align-items:center;gap:6px;margin:1px 0}
.barlabel{width:120px;font-size:12px}
.bar{display:inline-block;height:10px;background:#8c959f}
.bar.weight{background:#6e40c9}
.bar.score{background:#0969da}
.bar.total{background:#1a7f37}
.barval{font-size:12px;color:#687079}
.vote{border-left:3px solid #d0d7de;padding-left:8px;margin:8px 0}
.vote h4{margin:2px 0}
.reason{margin:2px 0;font-size:12px}
.gates .ok{color:#1a7f37}
.gates .no{color:#b3261e}
.meter{position:relative;height:12px;width:300px;background:#e4e8ec;margin:6px 0}
.meter .fill{display:block;height:12px;background:#1a7f37}
.meter .mark{position:absolute;top:-3px;height:18px;width:2px;background:#b3261e}
tr.outcome-fail .oc,tr.outcome-error .oc{color:#b3261e;font-weight:600}
tr.outcome-pass .oc{color:#1a7f37}
.pair.flipped{border-left:4px solid #d4a72c;padding-left:8px}
#filters{display:flex;gap:8px;flex-wrap:wrap;align-items:center;margin:8px 0}
#rows td{font-size:13px}
#answer-form{display:flex;flex-direction:column;gap:4px;max-width:520px}
#answer-form{border:1px solid #d0d7de;padding:8px;background:#fff}
.plot img{max-width:100%}
figure{margin:8px 0}
"""

JS = r"""
(function () {
  "use strict";
  var mode = document.body.dataset.mode, PAGE = 200, FACETS = ["evaluator", "status", "passed", "escalated"];
  var rows = [], shown = PAGE, total = null;
  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function href(kind, key) { return mode === "export" ? "#/" + kind + "/" + key : "/" + kind + "/" + key; }
  function el(id) { return document.getElementById(id); }
  function filters() {
    var f = {q: el("f-q").value.toLowerCase()};
    FACETS.forEach(function (n) { f[n] = el("f-" + n).value; });
    return f;
  }
  function match(r, f) {
    for (var i = 0; i < FACETS.length; i++) { var n = FACETS[i]; if (f[n] && r[n] !== f[n]) return false; }
    if (f.q) {
      var t = (r.task_id + " " + r.prompt + " " + r.evaluator + " " + r.reason + " " + r.source).toLowerCase();
      if (t.indexOf(f.q) < 0) return false;
    }
    return true;
  }
  function counts() {
    FACETS.forEach(function (n) {
      var c = {}, sel = el("f-" + n), cur = sel.value;
      rows.forEach(function (r) { c[r[n]] = (c[r[n]] || 0) + 1; });
      var h = '<option value="">' + n + ': all (' + rows.length + ')</option>';
      Object.keys(c).sort().forEach(function (v) {
        h += '<option value="' + esc(v) + '"' + (v === cur ? " selected" : "") + ">" + esc(v) +
          " (" + c[v] + ")</option>";
      });
      sel.innerHTML = h;
    });
  }
  function render() {
    var f = filters(), hit = [];
    for (var i = 0; i < rows.length; i++) if (match(rows[i], f)) hit.push(rows[i]);
    var h = [];
    hit.slice(0, shown).forEach(function (r) {
      h.push('<tr data-key="' + esc(r.key) + '"><td><a href="' + esc(href("task", r.key)) + '">' + esc(r.task_id) +
        "</a></td><td>" + esc(r.evaluator) + '</td><td class="st">' + esc(r.status) + "</td><td>" + esc(r.passed) +
        "</td><td>" + esc(r.score == null ? "" : (+r.score).toFixed(3)) + "</td><td>" + esc(r.best.join(", ")) +
        "</td><td>" + esc(r.reason ? r.reason + (r.state ? " (" + r.state + ")" : "") : "") + "</td><td>" +
        esc(r.source) + "</td></tr>");
    });
    el("rows-body").innerHTML = h.join("");
    el("count").textContent = hit.length + " of " + rows.length + " tasks" +
      (total !== null && rows.length < total ? " (loading " + total + ")" : "") +
      (hit.length > shown ? "; showing " + shown : "");
    el("more").hidden = hit.length <= shown;
    document.body.dataset.rendered = String(rows.length);
    if (!document.body.dataset.firstRenderMs) document.body.dataset.firstRenderMs = performance.now().toFixed(1);
  }
  function listen() {
    ["f-q"].concat(FACETS.map(function (n) { return "f-" + n; })).forEach(function (id) {
      el(id).addEventListener(id === "f-q" ? "input" : "change", function () { shown = PAGE; render(); });
    });
    el("more").addEventListener("click", function () { shown += PAGE * 5; render(); });
  }
  function loadServed(offset) {
    fetch("/api/rows?offset=" + offset + "&limit=2000").then(function (r) { return r.json(); }).then(function (d) {
      rows = rows.concat(d.rows); total = d.total;
      if (offset === 0 || rows.length >= total) { counts(); render(); }
      if (rows.length < total && d.rows.length) loadServed(rows.length);
      else {
        total = rows.length; counts(); render();
        document.body.dataset.loadedMs = performance.now().toFixed(1); document.body.dataset.loaded = "1";
      }
    });
  }
  function route() {
    var page = el("page"), list = el("list"), m = /^#\/(task|compare|item)\/(.+)$/.exec(location.hash);
    if (!m) { page.hidden = true; list.hidden = false; return; }
    var t = el("page-" + m[1] + "-" + decodeURIComponent(m[2]));
    page.innerHTML = t ? t.innerHTML : "<p class='error'>no such page</p>";
    page.hidden = false; list.hidden = true; window.scrollTo(0, 0);
  }
  function answerForm() {
    var form = el("answer-form");
    if (!form) return;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var data = new FormData(form), headers = {"content-type": "application/json"}, token = data.get("token");
      if (token) headers.authorization = "Bearer " + token;
      var body = {text: data.get("text") || "", choice: data.get("choice") || null, answered_by: data.get("by") || null,
                  replace: data.get("replace") === "on"};
      fetch("/api/escalations/" + encodeURIComponent(form.dataset.id) + "/answer",
            {method: "POST", headers: headers, body: JSON.stringify(body)}).then(function (r) {
        return r.json().then(function (d) { return [r.ok, d]; });
      }).then(function (res) {
        el("answer-status").textContent = res[0] ? "answered: apply it with oracle resume " + form.dataset.id
                                                   : res[1].message;
        el("answer-status").className = res[0] ? "ok" : "error";
        if (res[0]) el("esc-state").textContent = res[1].state;
      });
    });
  }
  if (el("rows-body")) {
    listen();
    if (mode === "export") {
      rows = JSON.parse(el("rows-data").textContent); counts(); render(); document.body.dataset.loaded = "1";
      window.addEventListener("hashchange", route); route();
    } else { loadServed(0); }
  }
  answerForm();
})();
"""

LIST = """<section id="list"><h1>Tasks</h1><div id="filters">
<select id="f-evaluator"></select><select id="f-status"></select><select id="f-passed"></select>
<select id="f-escalated"></select><input id="f-q" type="search" placeholder="search task, prompt, reason">
<span id="count"></span></div>
<table id="rows"><thead><tr><th>task</th><th>evaluator</th><th>status</th><th>passed</th><th>score</th><th>best</th>
<th>escalation</th><th>source</th></tr></thead><tbody id="rows-body"></tbody></table>
<button id="more" hidden>show more</button></section>"""


def page(title: str, body: str, *, mode: str, nav: str = "", script: str | None = None) -> str:
    """A whole HTML page. ``script``: inline JS (the export); else the served ``/static/view.js``."""
    js = f"<script>{script}</script>" if script is not None else '<script src="/static/view.js"></script>'
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            f'<meta name="viewport" content="width=device-width"><title>{html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body data-mode="{mode}"><header>{nav}</header><main>{body}</main>'
            f'{js}</body></html>\n')
