// Sluice accounting dashboard: reads /ui/api/* and draws inline SVG. No libraries, so
// it works offline from the binary's embedded files.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#3566d6", "#e58b2b", "#2f9e6e", "#c2417e", "#7a5cd1", "#d1b02b", "#2aa6b8", "#8a5a3c", "#5d6b85", "#d6473a"];
const params = new URLSearchParams(location.search);
const win = {};
for (const k of ["start", "end"]) if (params.get(k)) win[k] = params.get(k);
// The server's default window, stated here so the job table reads a month, not the
// whole ledger.
if (!win.start) win.start = String(Math.floor(Date.now() / 1000) - 30 * 86400);

// The API takes the REST API's token (SLURM_JWT). A link may carry it once as ?token=
// (so `sluice dev` can print one): it is kept in this tab's sessionStorage and taken out
// of the address bar, where it would end up in history and screenshots. Without one, or
// when the server refuses it, the page asks for it.
const TOKEN_KEY = "sluice.token";
if (params.get("token")) {
  sessionStorage.setItem(TOKEN_KEY, params.get("token"));
  params.delete("token");
  history.replaceState(null, "", location.pathname + (params.size ? "?" + params : ""));
}

// Unauthorized is a 401: the page shows the token form rather than a broken dashboard.
class Unauthorized extends Error {}

// api fetches one endpoint with the page's window, extra parameters and the token.
async function api(path, extra) {
  const q = new URLSearchParams({ ...win, ...(extra || {}) });
  const r = await fetch("api/" + path + "?" + q, { headers: { "X-SLURM-USER-TOKEN": sessionStorage.getItem(TOKEN_KEY) || "" } });
  const body = await r.json();
  const msg = (body.errors || []).map(e => e.description).join("; ") || r.statusText;
  if (r.status === 401) throw new Unauthorized(msg);
  if (!r.ok) throw new Error(msg);
  return body;
}

// askToken shows the token form with the server's reason; a token entered there is kept
// for the tab and the page reloads with it.
function askToken(reason) {
  const form = document.getElementById("login");
  form.hidden = false;
  document.getElementById("login-reason").textContent = reason;
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, form.elements.token.value.trim());
    location.reload();
  });
}

function h(tag, attrs, parent, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function s(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

// fmt prints a number with one decimal and thousands separators, as the tests expect.
function fmt(v) {
  return v.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
}
function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : "0.0%"; }
function day(t) { return new Date(t).toISOString().slice(0, 10); }
function stamp(t) { return t ? new Date(t).toISOString().slice(0, 19).replace("T", " ") : ""; }
function duration(sec) {
  sec = Math.max(0, Math.floor(sec));
  const d = Math.floor(sec / 86400), hh = String(Math.floor(sec % 86400 / 3600)).padStart(2, "0");
  const mm = String(Math.floor(sec % 3600 / 60)).padStart(2, "0"), ss = String(sec % 60).padStart(2, "0");
  return (d ? d + "-" : "") + hh + ":" + mm + ":" + ss;
}

const colorOf = (() => {
  const m = new Map();
  return name => { if (!m.has(name)) m.set(name, COLORS[m.size % COLORS.length]); return m.get(name); };
})();

function windows() {
  const nav = document.getElementById("windows");
  for (const [label, days] of [["7 days", 7], ["30 days", 30], ["90 days", 90]]) {
    const a = h("a", { href: "?start=" + Math.floor(Date.now() / 1000 - days * 86400) }, nav, label);
    if (!params.get("start") && days === 30) a.className = "on";
  }
}

function kpi(parent, id, label, value, text) {
  const k = h("div", { class: "kpi" }, parent);
  h("div", { class: "v", "data-testid": id, "data-value": String(value) }, k, text);
  h("div", { class: "l" }, k, label);
}

function overview(o) {
  document.getElementById("window").textContent = o.cluster + " · " + stamp(o.start) + " → " + stamp(o.end) + " UTC";
  const u = o.gpu_utilization, k = document.getElementById("kpis");
  const alloc = u.allocated_seconds / 3600;
  kpi(k, "kpi-gpu-hours", "GPU-hours allocated", alloc, fmt(alloc));
  kpi(k, "kpi-utilization", "of reported GPU time", u.reported_seconds ? u.allocated_seconds / u.reported_seconds : 0, pct(u.allocated_seconds, u.reported_seconds));
  kpi(k, "kpi-gpus-held", "GPUs held now", o.gpus_held_now, fmt(o.gpus_held_now));
  const js = o.jobs_by_state || {};
  kpi(k, "kpi-running", "jobs running", js.RUNNING || 0, String(js.RUNNING || 0));
  kpi(k, "kpi-pending", "jobs pending", js.PENDING || 0, String(js.PENDING || 0));
  donut(u);
}

// donut draws allocated / down / idle GPU-hours as parts of reported.
function donut(u) {
  const box = document.getElementById("utilization");
  const svg = s("svg", { viewBox: "0 0 360 200", role: "img", "aria-label": "GPU utilization" }, box);
  const parts = [["allocated", u.allocated_seconds, "var(--alloc)"], ["down", u.down_seconds, "var(--down)"], ["idle", u.idle_seconds, "var(--idle)"]];
  const total = u.reported_seconds || parts.reduce((a, p) => a + p[1], 0);
  const cx = 95, cy = 100, r = 70, w = 26;
  let a0 = -Math.PI / 2;
  s("circle", { cx, cy, r, fill: "none", stroke: "var(--line)", "stroke-width": w }, svg);
  for (const [name, v, color] of parts) {
    if (!total || v <= 0) continue;
    const frac = Math.min(v / total, 0.99999), a1 = a0 + frac * 2 * Math.PI;
    const large = frac > 0.5 ? 1 : 0;
    const p = s("path", { d: `M ${cx + r * Math.cos(a0)} ${cy + r * Math.sin(a0)} A ${r} ${r} 0 ${large} 1 ${cx + r * Math.cos(a1)} ${cy + r * Math.sin(a1)}`,
      fill: "none", stroke: color, "stroke-width": w }, svg);
    s("title", {}, p, `${name}: ${fmt(v / 3600)} GPU-h`);
    a0 = a1;
  }
  s("text", { x: cx, y: cy + 6, "text-anchor": "middle", class: "strong", style: "font-size:20px" }, svg, pct(u.allocated_seconds, total));
  let y = 50;
  for (const [name, v, color] of [...parts, ["reported", u.reported_seconds, "none"]]) {
    s("rect", { x: 200, y: y - 10, width: 12, height: 12, rx: 2, fill: color, stroke: color === "none" ? "var(--muted)" : "none" }, svg);
    s("text", { x: 218, y }, svg, name);
    s("text", { x: 350, y, "text-anchor": "end", class: "strong", "data-testid": "util-" + name, "data-value": String(v / 3600) }, svg, fmt(v / 3600));
    y += 30;
  }
  s("text", { x: 350, y: y - 8, "text-anchor": "end" }, svg, "GPU-hours");
}

// stacked draws GPU-hours per bucket, one colour per account.
function stacked(g) {
  const box = document.getElementById("gpu-hours-chart"), legend = document.getElementById("gpu-hours-legend");
  const W = 1200, H = 260, L = 50, B = 24, T = 10;
  const n = g.buckets.length, totals = new Array(n).fill(0);
  for (const sr of g.series) sr.gpu_hours.forEach((v, i) => { totals[i] += v; });
  const top = Math.max(1, ...totals);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "GPU-hours by account" }, box);
  for (let i = 0; i <= 4; i++) {
    const y = T + (H - T - B) * (1 - i / 4);
    s("line", { x1: L, x2: W, y1: y, y2: y, stroke: "var(--line)" }, svg);
    s("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, svg, fmt(top * i / 4));
  }
  const bw = (W - L) / Math.max(n, 1), scale = (H - T - B) / top;
  const base = new Array(n).fill(0);
  for (const sr of g.series) {
    sr.gpu_hours.forEach((v, i) => {
      if (v <= 0) return;
      const y = H - B - (base[i] + v) * scale;
      const r = s("rect", { x: L + i * bw + 1, y, width: Math.max(bw - 2, 1), height: v * scale, fill: colorOf(sr.account) }, svg);
      s("title", {}, r, `${sr.account} ${day(g.buckets[i])}: ${fmt(v)} GPU-h`);
      base[i] += v;
    });
  }
  const every = Math.ceil(n / 12);
  g.buckets.forEach((b, i) => {
    if (i % every) return;
    const label = g.bucket_seconds < 86400 ? new Date(b).toISOString().slice(11, 16) : day(b).slice(5);
    s("text", { x: L + i * bw + bw / 2, y: H - 6, "text-anchor": "middle" }, svg, label);
  });
  for (const sr of g.series) {
    const item = h("span", {}, legend);
    h("span", { class: "sw", style: "background:" + colorOf(sr.account) }, item);
    item.appendChild(document.createTextNode(sr.account + " "));
    h("b", { "data-testid": "hours-" + sr.account, "data-value": String(sr.total_gpu_hours) }, item, fmt(sr.total_gpu_hours));
  }
  if (!g.series.length) h("span", { class: "muted" }, legend, "no GPU time in this window");
}

// fairshare draws, per account, its share of the parent next to its usage of it.
function fairshare(f) {
  const box = document.getElementById("fairshare");
  const rows = f.rows.filter(r => r.depth > 0);
  const W = 420, R = 26, L = 120, H = Math.max(rows.length * R + 24, 40);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "fair share" }, box);
  s("rect", { x: L, y: 2, width: 10, height: 8, fill: "var(--share)" }, svg);
  s("text", { x: L + 14, y: 10 }, svg, "share");
  s("rect", { x: L + 70, y: 2, width: 10, height: 8, fill: "var(--use)" }, svg);
  s("text", { x: L + 84, y: 10 }, svg, "usage");
  s("text", { x: W, y: 10, "text-anchor": "end" }, svg, "LevelFS / FairShare");
  rows.forEach((r, i) => {
    const y = 20 + i * R, bw = W - L - 70;
    const name = r.user ? r.user : r.account;
    s("text", { x: 4 + 10 * (r.depth - 1), y: y + 14, class: r.user ? "" : "strong" }, svg, name);
    s("rect", { x: L, y: y + 2, width: Math.max(r.norm_shares * bw, 1), height: 8, fill: "var(--share)" }, svg);
    s("rect", { x: L, y: y + 12, width: Math.max(r.effectv_usage * bw, 1), height: 8, fill: "var(--use)" }, svg);
    const id = "fs-" + r.account + (r.user ? "-" + r.user : "");
    const v = r.user ? r.fair_share : r.level_fs;
    const text = v === null ? "∞" : v.toFixed(3);
    s("text", { x: W, y: y + 14, "text-anchor": "end", class: "strong", "data-testid": id, "data-value": v === null ? "inf" : String(v) }, svg, text);
  });
}

function topUsers(t) {
  const box = document.getElementById("top-users");
  const W = 420, R = 24, L = 90, H = Math.max(t.rows.length * R + 6, 30);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "top users" }, box);
  const top = Math.max(1e-9, ...t.rows.map(r => r.gpu_hours));
  t.rows.forEach((r, i) => {
    const y = 4 + i * R;
    s("text", { x: 0, y: y + 13, class: "strong" }, svg, r.user);
    const bar = s("rect", { x: L, y, width: Math.max((W - L - 80) * r.gpu_hours / top, 1), height: 16, rx: 3, fill: colorOf(r.accounts.split(",")[0]) }, svg);
    s("title", {}, bar, r.user + " (" + r.accounts + ")");
    s("text", { x: W, y: y + 13, "text-anchor": "end", class: "strong", "data-testid": "top-" + r.user, "data-value": String(r.gpu_hours) }, svg, fmt(r.gpu_hours));
  });
  if (!t.rows.length) s("text", { x: 0, y: 16 }, svg, "no GPU time in this window");
}

const JOB_COLUMNS = ["JobID", "Name", "User", "Account", "Partition", "QOS", "State", "Submit", "Start", "End", "Elapsed", "GPUs", "NodeList", "ExitCode"];

function jobRow(tbody, j) {
  const tr = h("tr", { "data-job": String(j.job_id) }, tbody);
  const end = j.end_time ? Date.parse(j.end_time) : Date.now();
  const elapsed = j.start_time ? (end - Date.parse(j.start_time)) / 1000 : 0;
  const cells = [j.array_job_id ? j.array_job_id + "_" + j.array_task_id : String(j.job_id), j.name, j.user, j.account, j.partition, j.qos,
    null, stamp(j.submit_time), stamp(j.start_time), stamp(j.end_time), duration(elapsed), String(j.allocated.gpus || 0), j.node_list, j.exit_code + ":" + j.exit_signal];
  cells.forEach((c, i) => {
    const td = h("td", { class: i === 11 ? "num" : "" }, tr);
    if (c === null) h("span", { class: "pill " + j.state }, td, j.state);
    else td.textContent = c;
  });
}

// nodeHealth fills the node health card: availability and mean time between faults per
// partition, then each node's faults and validations, newest first.
function nodeHealth(n) {
  const parts = document.getElementById("node-partitions");
  h("thead", {}, parts).appendChild(headRow(["Partition", "Nodes", "Available", "Faults", "MTBF (h)", "Validations passed / failed / preempted"]));
  const pb = h("tbody", {}, parts);
  for (const p of n.partitions) {
    const tr = h("tr", { "data-partition": p.partition || "(none)" }, pb);
    for (const c of [p.partition || "(none)", String(p.nodes), (100 * p.availability).toFixed(2) + "%", String(p.faults),
      p.faults ? fmt(p.mtbf_seconds / 3600) : "-", p.validations_passed + " / " + p.validations_failed + " / " + p.validations_preempted]) {
      h("td", {}, tr, c);
    }
  }
  const hist = document.getElementById("node-history");
  h("thead", {}, hist).appendChild(headRow(["Node", "What", "Kind", "Start", "End", "Out of service"]));
  const hb = h("tbody", {}, hist);
  for (const e of n.history) {
    const tr = h("tr", { "data-node": e.node, "data-kind": e.kind }, hb);
    const gpus = e.kind === "fault" && e.gpus ? " (" + e.gpus + " GPUs)" : "";
    for (const c of [e.node, e.what + gpus, e.kind, stamp(e.start), stamp(e.end), e.kind === "fault" ? duration(e.out_of_service_seconds) : ""]) {
      h("td", {}, tr, c);
    }
  }
  document.getElementById("node-history-count").textContent = n.history.length + " events";
}

function headRow(names) {
  const tr = document.createElement("tr");
  for (const n of names) h("th", {}, tr, n);
  return tr;
}

async function jobs(first) {
  const form = document.getElementById("job-filters"), extra = { limit: "500" };
  for (const sel of form.querySelectorAll("select")) if (sel.value) extra[sel.name] = sel.value;
  const body = await api("jobs", extra);
  const table = document.getElementById("jobs"), head = table.tHead, tbody = table.tBodies[0];
  if (!head.rows.length) {
    const tr = h("tr", {}, head);
    for (const c of JOB_COLUMNS) h("th", {}, tr, c);
  }
  tbody.replaceChildren();
  for (const j of [...body.jobs].reverse()) jobRow(tbody, j);
  const shown = document.getElementById("jobs-count");
  shown.textContent = body.total + " jobs" + (body.total > body.jobs.length ? ", latest " + body.jobs.length + " shown" : "");
  shown.dataset.value = String(body.total);
  if (first) {
    const pick = { users: j => j.user, accounts: j => j.account, partitions: j => j.partition, states: j => j.state };
    for (const sel of form.querySelectorAll("select")) {
      for (const v of [...new Set(body.jobs.map(pick[sel.name]))].filter(Boolean).sort()) h("option", { value: v }, sel, v);
      sel.addEventListener("change", () => jobs(false).catch(showError));
    }
  }
}

function showError(e) {
  const el = document.getElementById("error");
  el.hidden = false;
  el.textContent = (el.textContent ? el.textContent + " · " : "") + e.message;
}

windows();
Promise.allSettled([
  api("overview").then(overview),
  api("gpu-hours").then(stacked),
  api("fairshare").then(fairshare),
  api("top-users").then(topUsers),
  api("node-health").then(nodeHealth),
  jobs(true),
]).then(results => {
  const refused = results.find(r => r.status === "rejected" && r.reason instanceof Unauthorized);
  if (refused) {
    document.querySelector("main").hidden = true;
    askToken(refused.reason.message);
  }
  else for (const r of results) if (r.status === "rejected") showError(r.reason);
  document.body.dataset.ready = "1";
});
