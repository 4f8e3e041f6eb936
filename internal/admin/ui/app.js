// Meridian dashboard: polls the versioned admin API and renders zones -> records -> backends,
// with overrides, a filter, the explain tool, the recent state changes, each backend's last hour
// (a latency sparkline over its state strip, and per record a timeline of its backends' states),
// each record's last failovers and traffic shares (pictures.js) and, for a block that names its site, what it
// knows of the other sites. Plain DOM and inline
// SVG, no dependencies; every value is inserted as text, never as HTML.
"use strict";

const POLL_MS = 2000;
const AUTH_KEY = "meridian-auth";
const $ = (id) => document.getElementById(id);

let auth = sessionStorage.getItem(AUTH_KEY) || "";
let zones = [];
let lastStates = new Map(); // backend key -> state at the previous poll
let changedAt = new Map(); // backend key -> when the dashboard saw its state change
let shownKeys = [];
let timer = null;
let hist = { start: 0, end: 0, now: 0, buckets: 0, byKey: new Map() }; // GET /api/v1/backends/history
let openTimelines = new Set(); // records whose timeline is open
let failovers = new Map(); // record -> its failover timelines, newest first (GET /api/v1/timelines)
let traffic = new Map(); // record -> where its traffic went (GET /api/v1/shares)
const SITE_WINDOW_MS = 10 * 60 * 1000;
let siteSeen = new Map(); // "this site|other site" -> [ms, state, heartbeat age] of each poll, over SITE_WINDOW_MS

// el builds an element; attrs may hold properties, "class", "data-*" attributes and event
// handlers ("onclick"); children are nodes or strings (inserted as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("data-") || k === "colspan" || k === "title") e.setAttribute(k, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e[k] = v;
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== "") e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

const SVG_NS = "http://www.w3.org/2000/svg";

// svg builds an SVG element with attributes attrs (all set as attributes) and children (nodes
// or strings, inserted as text).
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, v);
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== "") e.append(c);
  return e;
}

// table builds a table with a header row of heads and the body rows.
function table(heads, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

class SignInRequired extends Error {}

async function api(path, body) {
  const headers = { "Accept": "application/json", "X-Requested-With": "XMLHttpRequest" };
  if (auth) headers["Authorization"] = auth;
  const opts = { method: "GET", headers };
  if (body !== undefined) {
    opts.method = "POST";
    headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  if (resp.status === 401) {
    showSignIn(auth ? "These credentials were refused." : "");
    throw new SignInRequired("sign in first");
  }
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = new Error(data.error || `${resp.status} ${resp.statusText}`);
    err.breaches = data.breaches; // a refusal of the drain guard
    throw err;
  }
  return data;
}

function showSignIn(error) {
  stopPolling();
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = error || "";
}

function encodeBasic(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  return "Basic " + btoa(String.fromCharCode(...bytes));
}

$("signin-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const token = $("signin-token").value.trim();
  auth = token ? `Bearer ${token}` : encodeBasic($("signin-user").value, $("signin-password").value);
  sessionStorage.setItem(AUTH_KEY, auth);
  start();
});

// isSet reports whether iso is a time, not empty nor Go's zero time (0001-01-01).
function isSet(iso) {
  return Boolean(iso) && !iso.startsWith("0001-");
}

function ago(iso) {
  if (!isSet(iso)) return "-";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

function localTime(iso) {
  return isSet(iso) ? new Date(iso).toLocaleString() : "";
}

function hostPort(b) {
  if (!b.port) return b.address;
  return b.address.includes(":") ? `[${b.address}]:${b.port}` : `${b.address}:${b.port}`;
}

function overrideText(o, held) {
  if (!o) return "";
  const from = o.starts ? ` from ${new Date(o.starts).toLocaleTimeString()}` : "";
  const text = o.expires ? `${o.action}${from} until ${new Date(o.expires).toLocaleTimeString()}` : o.action + from;
  return text + (o.forced ? " (forced)" : "") + (held ? " (held by the drain guard)" : "");
}

// overrideTitle says why, who, what a forced override broke, and why a drain is held.
function overrideTitle(b) {
  const o = b.override;
  if (!o) return "";
  return [o.reason, o.by ? "by " + o.by : "", o.forced ? "forced past: " + (o.breaches || []).join("; ") : "",
    b.held ? "held: " + b.held : ""].filter(Boolean).join("\n");
}

// matches reports whether backend b of record r in zone z passes the filter and state filter.
function matches(z, r, b) {
  const state = $("state-filter").value;
  if (state === "override" ? !b.override : state && b.state !== state) return false;
  const hay = [z.name, r.name, r.mode, r.degraded ? "degraded" : "", r.failover ? "failover" : "",
    b.key, b.address, hostPort(b), b.location, b.country, b.city, b.continent, b.description,
    ...(b.tags || []), b.site, b.remote ? "remote" : "", b.state, b.healthy ? "served" : "not-served",
    b.override ? `override ${b.override.action}` : "", b.reason].join(" ").toLowerCase();
  return $("filter").value.toLowerCase().split(/\s+/).filter(Boolean).every((t) => hay.includes(t));
}

function actionButtons(b) {
  const act = (action) => () => runAction(action, [b.key]);
  return el("td", { class: "actions" },
    el("button", { "data-action": "enable", title: "serve, even if the YAML disables it", onclick: act("enable") }, "Enable"),
    " ",
    el("button", { "data-action": "disable", title: "take out of every answer", onclick: act("disable") }, "Disable"),
    " ",
    el("button", { "data-action": "drain", title: "disable for the time chosen above", onclick: act("drain") }, "Drain"),
    " ",
    el("button", { "data-action": "force-up", title: "serve as healthy whatever the probes say, for the time chosen above", onclick: act("force-up") }, "Force up"),
    " ",
    b.override ? el("button", { "data-action": "clear", title: "the YAML decides again", onclick: act("clear") }, "Clear") : "");
}

function backendRow(b) {
  const changed = changedAt.has(b.key) && Date.now() - changedAt.get(b.key) < 3000;
  return el("tr", { class: changed ? "backend changed" : "backend", "data-key": b.key },
    el("td", {}, ""),
    el("td", { "data-field": "address", title: b.key }, hostPort(b), b.description ? el("div", { class: "muted" }, b.description) : ""),
    el("td", {}, [b.location, b.country, b.city].filter(Boolean).join(" / ")),
    el("td", { "data-field": "site", title: b.remote ? "another site's backend: its state is what that site publishes" : "" },
      b.site || "", b.remote ? el("span", { class: "badge badge-remote" }, "remote") : ""),
    el("td", {}, (b.tags || []).map((t) => el("span", { class: "tag" }, t))),
    el("td", { "data-field": "state", class: `state state-${b.state}` }, b.state),
    el("td", { "data-field": "served", class: b.healthy ? "" : "served-no" }, b.healthy ? "yes" : b.enabled ? "no" : "no (YAML)"),
    el("td", { "data-field": "override", class: "override", title: overrideTitle(b) }, overrideText(b.override, b.held)),
    el("td", { "data-field": "latency" }, b.latency_ms ? `${b.latency_ms.toFixed(1)} ms` : "-"),
    el("td", { "data-field": "history" }, hist.byKey.has(b.key) ? sparkline(hist.byKey.get(b.key)) : ""),
    el("td", { title: localTime(b.last_change) }, ago(b.last_change)),
    el("td", { "data-field": "reason" }, b.reason || (b.last_check ? `ok ${ago(b.last_check)}` : "")),
    actionButtons(b));
}

// recordBadges returns the badges of record r, each saying one thing once: whether it answers
// other sites' stale targets (degraded) or from a worse priority than its best (failover),
// whether its failover target holds, and why its TTL is not record_ttl. The TTL's reason gets a
// badge of its own only when no other badge says it: "stale" is what degraded says, and
// "failover" what failover says; their titles give the TTL then.
function recordBadges(r) {
  const ttl = `TTL ${r.ttl} s: ${r.ttl_reason}`;
  const badge = (field, kind, text, title) => el("span", { class: `badge badge-${kind}`, "data-field": field, title }, text);
  const out = [];
  if (r.degraded) out.push(badge("degraded", "degraded", "degraded",
    "answering other sites' stale targets: none of its own family is healthy" + (r.ttl_reason === "stale" ? `; ${ttl}` : "")));
  if (r.failover) out.push(badge("failover", "failover", "failover",
    "answering from a worse priority than its best" + (r.ttl_reason === "failover" ? `; ${ttl}` : "")));
  const said = (r.degraded && r.ttl_reason === "stale") || (r.failover && r.ttl_reason === "failover");
  if (r.ttl_reason && r.ttl_reason !== "healthy" && !said) out.push(badge("ttl", "ttl", r.ttl_reason, ttl));
  const g = r.drain_guard;
  if (g) out.push(badge("drain-guard", "budget", "drain guard",
    "drain_guard: " + [g.min_healthy ? `min_healthy ${g.min_healthy}` : "", g.min_share ? `min_share ${g.min_share * 100}%` : ""].filter(Boolean).join(", ")));
  const budget = r.failover_budget;
  if (budget && budget.target_ms) out.push(budget.holds
    ? badge("failover-budget", "budget", "failover target holds", budget.text)
    : badge("failover-budget", "degraded", "failover target missed", budget.text));
  return out;
}

function render() {
  const box = $("zones");
  const counts = { up: 0, down: 0, unknown: 0, stale: 0, overridden: 0, records: 0 };
  const sections = [];
  shownKeys = [];
  for (const z of zones) {
    const rows = [];
    for (const r of z.records || []) {
      counts.records++;
      const shown = [];
      for (const b of r.backends || []) {
        counts[b.state] = (counts[b.state] || 0) + 1;
        if (b.override) counts.overridden++;
        if (matches(z, r, b)) shown.push(b);
      }
      if (!shown.length) continue;
      rows.push(el("tr", { class: "record", "data-record": r.name },
        el("td", { colspan: 13 }, r.name, " ", el("span", { class: "mode" },
          `${r.mode}, fallback ${r.fallback}, ${r.healthy} of ${(r.backends || []).length} served, TTL ${r.ttl} s`),
        recordBadges(r),
        recordTimeline(r),
        failoverTimelines(r.name, failovers.get(r.name)),
        trafficShares(r.name, traffic.get(r.name)))));
      for (const b of shown) {
        rows.push(backendRow(b));
        shownKeys.push(b.key);
      }
    }
    if (!rows.length) continue;
    sections.push(el("section", { class: "zone", "data-zone": z.name },
      el("h2", {}, z.name),
      table(["Record", "Backend", "Location", "Site", "Tags", "State", "Served", "Override",
        "Latency", "Last hour", "Changed", "Last result", ""], rows)));
  }
  box.replaceChildren(...(sections.length ? sections : [el("p", { class: "muted" }, zones.length ? "No backend matches the filter." : "No zone is served.")]));
  const backends = counts.up + counts.down + counts.unknown + counts.stale;
  $("summary").textContent = `${zones.length} zones, ${counts.records} records, ${backends} backends: ` +
    `${counts.up} up, ${counts.down} down, ${counts.unknown} unknown, ` +
    (counts.stale ? `${counts.stale} stale, ` : "") + `${counts.overridden} overridden`;
  $("shown").textContent = `${shownKeys.length} shown`;
}

function message(text, isError) {
  $("message").textContent = text;
  $("message").className = isError ? "error" : "";
}

async function runAction(action, keys, force) {
  const body = { keys, reason: $("reason").value.trim() || undefined, force: force || undefined };
  if ((action === "drain" || action === "force-up") && $("drain-for").value) body.duration = $("drain-for").value;
  try {
    const res = await api(`/api/v1/backends/${action}`, body);
    const until = res.expires ? ` until ${new Date(res.expires).toLocaleString()}` : "";
    message(`${action}: ${res.backends.length} backend${res.backends.length === 1 ? "" : "s"}${until}${force ? ", forced past the drain guard" : ""}`);
    await refresh();
  } catch (e) {
    if (e instanceof SignInRequired) return;
    if (e.breaches && e.breaches.length) return refused(action, keys, e.breaches);
    message(`${action} failed: ${e.message}`, true);
  }
}

// refused shows the records a change would leave below their drain guard, and a button that
// makes it anyway with the reason typed (which the override keeps).
function refused(action, keys, breaches) {
  const force = () => {
    if (!$("reason").value.trim()) return message("Type a reason first: a forced change keeps it with the override.", true);
    runAction(action, keys, true);
  };
  $("message").className = "error";
  $("message").replaceChildren(`${action} refused by the drain guard: it would leave these records below their drain_guard.`,
    el("ul", { id: "breaches" }, breaches.map((b) => el("li", {}, b.text))),
    el("button", { id: "force", onclick: force }, "Force it, with the reason typed"));
}

for (const b of document.querySelectorAll("[data-bulk]")) {
  b.addEventListener("click", () => {
    const action = b.dataset.bulk;
    if (!shownKeys.length) return message("No backend is shown.", true);
    if (confirm(`${action} the ${shownKeys.length} backends shown?`)) runAction(action, shownKeys.slice());
  });
}

// historyEvery is how often the history is fetched again when no backend changed state and its
// last bucket has not ended: building it costs the server a copy of every backend's ring.
const historyEvery = 5000;
let historyAt = 0;

async function refresh() {
  const [z, t, s, f, sh] = await Promise.all([api("/api/v1/zones"), api("/api/v1/transitions?limit=25"), api("/api/v1/sites"),
    api("/api/v1/timelines?limit=1000"), api("/api/v1/shares")]);
  traffic = new Map(sh.map((r) => [r.record, r]));
  failovers = new Map();
  for (const tl of f) failovers.set(tl.record, [...(failovers.get(tl.record) || []), tl]);
  const now = Date.now();
  let changed = false;
  for (const zone of z) for (const r of zone.records || []) for (const b of r.backends || []) {
    const before = lastStates.get(b.key);
    if (before !== undefined && before !== b.state) { changedAt.set(b.key, now); changed = true; }
    lastStates.set(b.key, b.state);
  }
  zones = z;
  if (changed || now >= hist.end || now - historyAt >= historyEvery) {
    setHistory(await api("/api/v1/backends/history"));
    historyAt = now;
  }
  render();
  renderTransitions(t);
  renderSites(s);
  await refreshAudit();
  await refreshSafety(); // safety.js: drills
  $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

function renderTransitions(list) {
  $("transitions").replaceChildren(...list.map((t) => el("li", { title: localTime(t.time) },
    `${ago(t.time)}: ${t.backend.split("|").slice(0, 2).join(" ")} `,
    el("span", { class: `state state-${t.from}` }, t.from), " \u2192 ",
    el("span", { class: `state state-${t.to}` }, t.to),
    t.reason ? ` (${t.reason})` : "")));
  if (!list.length) $("transitions").replaceChildren(el("li", { class: "muted" }, "none yet"));
}

// setHistory keeps the history h (GET /api/v1/backends/history) for render.
function setHistory(h) {
  const start = Date.parse(h.start), buckets = (h.backends[0] || { latency_us: [] }).latency_us.length;
  hist = { start, now: Date.parse(h.now), buckets, end: start + buckets * h.bucket_seconds * 1000,
    byKey: new Map(h.backends.map((b) => [b.key, b])) };
}

// spans returns the state timeline of backend history b: [from ms, to ms, state] up to now.
function spans(b) {
  const out = [];
  let t = Math.max(Date.parse(b.from), hist.start), state = b.state;
  for (const c of b.changes || []) {
    const at = Date.parse(c.time);
    if (at > t) out.push([t, at, state]);
    t = Math.max(t, at);
    state = c.to;
  }
  out.push([t, Math.max(t, hist.now), state]);
  return out;
}

// lasted formats a span of milliseconds: seconds under a minute, minutes above.
function lasted(ms) {
  return ms < 60000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60000)} min`;
}

// stateStrip returns the rects of the state timeline of b in the box x, y, w, h of the hour, with
// a gray rect for the part before its timeline starts.
function stateStrip(b, x, y, w, h) {
  const scale = (t) => x + ((t - hist.start) / (hist.end - hist.start)) * w;
  const list = spans(b);
  const rects = list.map(([from, to, state]) => svg("rect", { class: `st-${state}`, "data-state": state,
    x: scale(from).toFixed(1), y, width: Math.max(scale(to) - scale(from), 0.5).toFixed(1), height: h },
  svg("title", {}, `${state} from ${new Date(from).toLocaleTimeString()} for ${lasted(to - from)}`)));
  if (list[0][0] > hist.start) {
    rects.unshift(svg("rect", { class: "st-none", x, y, width: (scale(list[0][0]) - x).toFixed(1), height: h },
      svg("title", {}, "no history kept")));
  }
  return rects;
}

// timeIn returns how long b spent in each state over its timeline, as text.
function timeIn(b) {
  const by = new Map();
  for (const [from, to, state] of spans(b)) by.set(state, (by.get(state) || 0) + to - from);
  return [...by].map(([state, ms]) => `${state} ${lasted(ms)}`).join(", ");
}

// sparkline draws backend history b: its mean latency per bucket as a line (broken where no
// probe measured one), its failed results as red marks under it, and its state strip below.
function sparkline(b) {
  const W = 120, LINE = 20, n = b.latency_us.length;
  const measured = b.latency_us.filter((v) => v !== null);
  const top = Math.max(1, ...measured);
  const x = (i) => ((i + 0.5) * W / n).toFixed(1);
  const y = (v) => (1 + LINE - (v / top) * LINE).toFixed(1);
  let d = "", fails = 0;
  const marks = [];
  b.latency_us.forEach((v, i) => {
    if (v !== null) d += `${d && b.latency_us[i - 1] !== null ? "L" : "M"}${x(i)} ${y(v)} `;
    if (b.failures[i]) {
      fails += b.failures[i];
      marks.push(svg("rect", { class: "fail", x: (i * W / n).toFixed(1), y: LINE + 1, width: Math.max(W / n, 1).toFixed(1), height: 2 }));
    }
  });
  const ms = (us) => `${(us / 1000).toFixed(1)} ms`;
  const label = "last hour: " + (measured.length
    ? `latency ${ms(Math.min(...measured))} to ${ms(top)}, mean ${ms(measured.reduce((a, v) => a + v, 0) / measured.length)}`
    : "no latency measured") + `; ${fails} failed results; ${timeIn(b)}`;
  return svg("svg", { class: "history", width: W, height: 28, viewBox: `0 0 ${W} 28`, role: "img", "aria-label": label },
    svg("title", {}, label),
    svg("path", { class: "spark", d: d.trim() }),
    marks,
    svg("g", { class: "strip" }, stateStrip(b, 0, 24, W, 4)));
}

// recordTimeline returns the record's timeline over the last hour, in a details element: one
// lane of states per probed backend, and a tick at each change.
function recordTimeline(r) {
  const lanes = (r.backends || []).filter((b) => hist.byKey.has(b.key));
  if (!lanes.length) return "";
  const LABEL = 160, W = 480, LANE = 14;
  const scale = (t) => LABEL + ((t - hist.start) / (hist.end - hist.start)) * W;
  const H = lanes.length * LANE + 14;
  let changes = 0;
  const rows = lanes.map((b, i) => {
    const h = hist.byKey.get(b.key), y = i * LANE;
    changes += (h.changes || []).length;
    return svg("g", { class: "lane", "data-key": b.key },
      svg("text", { x: 0, y: y + 10 }, hostPort(b)),
      stateStrip(h, LABEL, y + 2, W, 9),
      (h.changes || []).map((c) => svg("line", { class: "tick", x1: scale(Date.parse(c.time)).toFixed(1), x2: scale(Date.parse(c.time)).toFixed(1), y1: y, y2: y + 13 },
        svg("title", {}, `${new Date(c.time).toLocaleTimeString()}: ${hostPort(b)} ${c.to}${c.reason ? ` (${c.reason})` : ""}`))));
  });
  const axis = [[0, "-60 min"], [0.5, "-30 min"], [1, "now"]].map(([f, text]) =>
    svg("text", { class: "axis", x: LABEL + f * W, y: H - 2, "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle" }, text));
  const label = `${r.name} over the last hour: ${changes} state change${changes === 1 ? "" : "s"}; ` +
    lanes.map((b) => `${hostPort(b)} ${timeIn(hist.byKey.get(b.key))}`).join("; ");
  return el("details", { class: "timeline", "data-field": "timeline", open: openTimelines.has(r.name),
    ontoggle: (ev) => (ev.target.open ? openTimelines.add(r.name) : openTimelines.delete(r.name)) },
  el("summary", {}, `last hour: ${changes} state change${changes === 1 ? "" : "s"}`),
  svg("svg", { width: LABEL + W, height: H, viewBox: `0 0 ${LABEL + W} ${H}`, role: "img", "aria-label": label },
    svg("title", {}, label), rows, axis));
}

// seconds formats a duration in nanoseconds, as the API gives the sites' options.
function seconds(ns) {
  return `${+(ns / 1e9).toFixed(3)}s`;
}

// siteRow is one other site as a block sees it: freshness, heartbeat, where it was heard, and
// the targets it published per record.
function siteRow(v, s) {
  const heard = s.state !== "unknown";
  return el("tr", { "data-site": s.name },
    el("td", { "data-field": "name" }, s.name),
    el("td", { "data-field": "state", class: `state state-${s.state}` }, s.state),
    el("td", { "data-field": "age", title: heard ? `seq ${s.heartbeat.seq}, boot ${s.heartbeat.boot}, its clock ${localTime(s.heartbeat.time)}` : "" },
      heard ? `${s.heartbeat_age_seconds.toFixed(1)}s` : "-"),
    el("td", { "data-field": "peer" }, s.peer || "-"),
    el("td", { "data-field": "silent", title: localTime(s.silent_since) }, isSet(s.silent_since) ? ago(s.silent_since) : ""),
    el("td", { "data-field": "freshness" }, freshnessStrip(siteSeen.get(`${v.site}|${s.name}`) || [])),
    el("td", { "data-field": "targets" }, Object.keys(s.targets || {}).sort().map((rec) =>
      el("div", {}, `${rec} `, el("span", { class: "muted" }, s.targets[rec].join(", "))))));
}

// peerRow is one peer address: the site its heartbeat names, its last answer and its errors.
function peerRow(p) {
  const errors = Object.entries(p.errors || {}).filter(([, n]) => n > 0).sort();
  return el("tr", { "data-peer": p.address },
    el("td", { "data-field": "address" }, p.address),
    el("td", { "data-field": "site" }, p.self ? "self" : p.site || "-"),
    el("td", { "data-field": "answer", title: localTime(p.last_answer) }, ago(p.last_answer)),
    el("td", { "data-field": "errors", class: errors.length ? "error" : "", title: p.last_error || "" },
      errors.length ? errors.map(([k, n]) => `${k} ${n}`).join(", ") : "none"),
    el("td", { "data-field": "targets" }, p.targets));
}

// noteSites adds what the poll at now said of each other site to siteSeen, and forgets what is
// older than SITE_WINDOW_MS and the sites no block names any more.
function noteSites(blocks, now) {
  const seen = new Map();
  for (const v of blocks) for (const s of v.sites || []) {
    const key = `${v.site}|${s.name}`;
    const list = (siteSeen.get(key) || []).filter(([t]) => now - t < SITE_WINDOW_MS);
    list.push([now, s.state, s.heartbeat_age_seconds]);
    seen.set(key, list);
  }
  siteSeen = seen;
}

// freshnessStrip draws a site's states at the polls of the last SITE_WINDOW_MS (or since the
// page opened), now at the right.
function freshnessStrip(list) {
  if (!list.length) return "";
  const W = 120, now = list[list.length - 1][0];
  const x = (t) => W - ((now - t) / SITE_WINDOW_MS) * W;
  const time = new Map();
  const rects = list.map(([t, state], i) => {
    const to = i + 1 < list.length ? list[i + 1][0] : now;
    time.set(state, (time.get(state) || 0) + to - t);
    return svg("rect", { class: `st-${state}`, "data-state": state, x: x(t).toFixed(1), y: 0,
      width: Math.max(x(to) - x(t), 1).toFixed(1), height: 8 });
  });
  const label = `the last ${lasted(now - list[0][0])} seen here: ` + [...time].map(([st, ms]) => `${st} ${lasted(ms)}`).join(", ") +
    `; heartbeat age up to ${Math.max(...list.map(([, , age]) => age)).toFixed(1)} s`;
  return svg("svg", { class: "freshness", width: W, height: 8, viewBox: `0 0 ${W} 8`, role: "img", "aria-label": label },
    svg("title", {}, label), svg("rect", { class: "st-none", x: 0, y: 0, width: x(list[0][0]).toFixed(1), height: 8 }), rects);
}

// renderSites shows the Sites section when a block names its site, and hides it otherwise.
function renderSites(blocks) {
  noteSites(blocks, Date.now());
  const box = $("sites");
  box.hidden = !blocks.length;
  box.replaceChildren(el("h2", {}, "Sites"), ...blocks.map((v) => el("div", { class: "site-block", "data-block": v.site },
    el("p", {}, "This site: ", el("strong", { "data-field": "self" }, v.site),
      ", heartbeat ", el("span", { "data-field": "seq", title: `boot ${v.heartbeat.boot}` }, `seq ${v.heartbeat.seq}`),
      el("span", { class: "muted" }, ` (zones ${(v.zones || []).join(", ")}; peer interval ${seconds(v.peer_interval_ns)}, ` +
        `split-brain threshold ${seconds(v.split_brain_threshold_ns)})`)),
    sitesMap(v),
    table(["Site", "State", "Heartbeat age", "Heard at", "Silent since", "Last 10 min", "Targets"],
      (v.sites || []).length ? v.sites.map((s) => siteRow(v, s)) : [el("tr", {}, el("td", { colspan: 7, class: "muted" }, "no other site"))]),
    table(["Peer", "Site", "Last answer", "Errors", "Targets"],
      (v.peers || []).length ? v.peers.map(peerRow) : [el("tr", {}, el("td", { colspan: 5, class: "muted" }, "no peer"))]))));
}

async function poll() {
  try {
    await refresh();
    if ($("message").textContent.startsWith("API unreachable")) message("");
  } catch (e) {
    if (e instanceof SignInRequired) return;
    message(`API unreachable: ${e.message}`, true);
  }
  schedule();
}

function schedule() {
  stopPolling();
  if ($("live").checked) timer = setTimeout(poll, POLL_MS);
}

function stopPolling() {
  if (timer) clearTimeout(timer);
  timer = null;
}

$("live").addEventListener("change", () => ($("live").checked ? poll() : stopPolling()));
$("filter").addEventListener("input", render);
$("state-filter").addEventListener("change", render);

$("explain-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const q = new URLSearchParams({ name: $("explain-name").value.trim(), type: $("explain-type").value });
  if ($("explain-client").value.trim()) q.set("client", $("explain-client").value.trim());
  if ($("explain-ecs").value.trim()) q.set("ecs", $("explain-ecs").value.trim());
  const out = $("explain-result");
  try {
    const e = await api(`/api/v1/explain?${q}`);
    const query = e.query;
    out.replaceChildren(
      el("p", {}, `${query.name} ${query.type} from ${query.client}${query.ecs ? ` (ECS ${query.ecs})` : ""}: `,
        el("strong", {}, e.rcode), `, zone ${e.zone}, record ${e.record || "none"}`),
      el("pre", { "data-field": "answer" }, (e.answer || []).join("\n") || "(empty answer)"),
      el("ol", {}, (e.steps || []).map((s) => el("li", {},
        el("span", { class: "stage" }, s.stage), s.text,
        s.fields ? el("div", { class: "muted" }, Object.entries(s.fields).map(([k, v]) => `${k}=${v}`).join(" ")) : "",
        s.backends && s.backends.length ? el("div", { class: "muted" }, `backends: ${s.backends.join(", ")}`) : ""))));
  } catch (e) {
    if (!(e instanceof SignInRequired)) out.replaceChildren(el("p", { class: "error" }, e.message));
  }
});

async function start() {
  try {
    await loadIdentity();
    await refresh();
  } catch (e) {
    if (e instanceof SignInRequired) return;
    message(`API unreachable: ${e.message}`, true);
  }
  $("signin").hidden = true;
  $("app").hidden = false;
  schedule();
}

start();
