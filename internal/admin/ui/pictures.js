// Meridian dashboard, its pictures of what the block decided: each record's last failovers
// (GET /api/v1/timelines), drawn from the evidence to the first answer beside its
// failover_target, and where its traffic went (GET /api/v1/shares); and the map of the sites a
// block reads, by freshness (GET /api/v1/sites). It uses el, svg and table of app.js, which
// calls it when it renders.
"use strict";

// failoverTimelines returns the record's last failover timelines (newest first) in a details
// element: one bar each, from the first failed probe (or report) through the state change and
// the view's swap to the first answer, with a tick where another site or instance learned it,
// on a scale that holds the longest of them and the record's target (a dashed line).
function failoverTimelines(name, list) {
  if (!list || !list.length) return "";
  const LABEL = 160, W = 480, ROW = 16;
  const ms = (iso) => (iso ? Date.parse(iso) : NaN);
  const target = list.find((t) => t.target_ms)?.target_ms || 0;
  const longest = Math.max(target, ...list.map((t) => (ms(t.answered || t.swapped || t.changed) - ms(t.detected)) || 0), 1);
  const x = (t, iso) => LABEL + Math.max(0, Math.min(1, (ms(iso) - ms(t.detected)) / longest)) * W;
  const secs = (n) => `${+(n / 1000).toFixed(2)} s`;
  const rows = list.map((t, i) => {
    const y = i * ROW, end = t.answered || t.swapped || t.changed;
    const what = t.answered ? `answered after ${secs(t.measured_ms)}` : t.superseded ? "superseded before an answer" : "no answer yet";
    const steps = [["detect", t.detected, t.changed], ["swap", t.changed, t.swapped], ["answer", t.swapped, t.answered]]
      .filter(([, a, b]) => a && b)
      .map(([cls, a, b]) => svg("rect", { class: `fo-${cls}`, x: x(t, a).toFixed(1), y: y + 3, height: 9,
        width: Math.max(1, x(t, b) - x(t, a)).toFixed(1) }));
    const learned = (t.learned || []).map((l) => svg("line", { class: "tick learned", x1: x(t, l.at).toFixed(1), x2: x(t, l.at).toFixed(1), y1: y + 1, y2: y + 14 },
      svg("title", {}, `${l.by} learned it ${secs(ms(l.at) - ms(t.detected))} after the first failed probe`)));
    const title = `${new Date(t.changed).toLocaleString()}: ${t.backend} ${t.from} \u2192 ${t.to}` +
      (t.reason ? ` (${t.reason})` : "") + `; changed ${secs(ms(t.changed) - ms(t.detected))} after the evidence began, ` +
      (t.swapped ? `served ${secs(ms(t.swapped) - ms(t.detected))}, ` : "") + what +
      (t.target_ms ? `; target ${secs(t.target_ms)}` : "");
    return svg("g", { class: "failover", "data-key": t.key, "data-to": t.to, "data-measured-ms": t.measured_ms || "" },
      svg("title", {}, title),
      svg("text", { x: 0, y: y + 11 }, `${t.backend} \u2192 ${t.to}`),
      steps, learned,
      svg("text", { class: "axis", x: Math.min(x(t, end) + 4, LABEL + W - 2), y: y + 11, "text-anchor": x(t, end) + 60 > LABEL + W ? "end" : "start" },
        t.answered ? secs(t.measured_ms) : t.superseded ? "superseded" : "\u2026"));
  });
  const H = list.length * ROW + 14;
  const goal = target ? [svg("line", { class: "target", x1: LABEL + (target / longest) * W, x2: LABEL + (target / longest) * W, y1: 0, y2: H - 12 }),
    svg("text", { class: "axis", x: LABEL + (target / longest) * W, y: H - 2, "text-anchor": "end" }, `target ${secs(target)}`)] : [];
  const last = list.find((t) => t.answered);
  const summary = `last ${list.length} failover${list.length === 1 ? "" : "s"}` +
    (last ? `: the latest took ${secs(last.measured_ms)}` : "") + (target ? ` (target ${secs(target)})` : "");
  return el("details", { class: "timeline", "data-field": "failovers", open: openFailovers.has(name),
    ontoggle: (ev) => (ev.target.open ? openFailovers.add(name) : openFailovers.delete(name)) },
  el("summary", {}, summary),
  svg("svg", { width: LABEL + W + 40, height: H, viewBox: `0 0 ${LABEL + W + 40} ${H}`, role: "img", "aria-label": `${name}: ${summary}` },
    svg("title", {}, `${name}: ${summary}`), rows, goal,
    svg("text", { class: "axis", x: LABEL, y: H - 2 }, "first failed probe")));
}

// openFailovers are the records whose failover timelines are open.
const openFailovers = new Set();

// trafficShares returns where the record's traffic went (GET /api/v1/shares) in a details
// element: each backend's share of its family's traffic over the last hour (a line each, a gap
// where there was none), a table of the share each is configured for against the share it got
// over the last five minutes, and for a geo record the shares by client country.
function trafficShares(name, rs) {
  if (!rs || !rs.backends || !rs.backends.length) return "";
  const LABEL = 160, W = 480, H = 60;
  const pct = (v) => (v === null || v === undefined ? "-" : `${Math.round(v * 100)}%`);
  const lines = rs.backends.map((b, i) => {
    const n = b.series.length, runs = [];
    let run = [];
    b.series.forEach((v, j) => {
      if (v === null) { if (run.length) runs.push(run); run = []; return; }
      run.push(`${(LABEL + (j + 0.5) / n * W).toFixed(1)},${(H - v * (H - 4) - 2).toFixed(1)}`);
    });
    if (run.length) runs.push(run);
    return svg("g", { class: `share share-${i % 6}`, "data-key": b.key },
      svg("title", {}, `${b.backend}: ${pct(b.actual)} of the ${b.family} traffic over the last five minutes, configured ${pct(b.configured)}`),
      svg("text", { x: 0, y: 10 + i * 11 }, `${b.backend} ${pct(b.actual)}`),
      runs.map((r) => svg("polyline", { points: r.join(" ") })));
  });
  const axis = [[0, "-60 min"], [1, "now"]].map(([f, text]) =>
    svg("text", { class: "axis", x: LABEL + f * W, y: H + 10, "text-anchor": f === 0 ? "start" : "end" }, text));
  const H2 = Math.max(H + 12, rs.backends.length * 11 + 4);
  const table1 = table(["Backend", "Family", "Configured", "Last 5 min"], rs.backends.map((b) =>
    el("tr", { "data-key": b.key }, el("td", {}, b.backend), el("td", {}, b.family),
      el("td", { "data-field": "configured" }, pct(b.configured)),
      el("td", { "data-field": "actual", class: b.actual !== null && Math.abs(b.actual - b.configured) > 0.1 ? "served-no" : "" }, pct(b.actual)))));
  const byCountry = rs.countries && rs.countries.length ? table(["Country", "Traffic (TTL s)", ...rs.backends.map((b) => b.backend)],
    rs.countries.map((c) => el("tr", { "data-country": c.country }, el("td", {}, c.country), el("td", {}, String(c.ttl_seconds)),
      ...rs.backends.map((b) => el("td", {}, c.shares[b.key] ? pct(c.shares[b.key]) : ""))))) : "";
  const latest = rs.backends.filter((b) => b.actual !== null).map((b) => `${b.backend} ${pct(b.actual)}`).join(", ");
  return el("details", { class: "timeline", "data-field": "shares", open: openShares.has(name),
    ontoggle: (ev) => (ev.target.open ? openShares.add(name) : openShares.delete(name)) },
  el("summary", {}, `traffic: ${latest || "none in the last five minutes"}`),
  svg("svg", { width: LABEL + W, height: H2, viewBox: `0 0 ${LABEL + W} ${H2}`, role: "img", "aria-label": `${name} traffic shares over the last hour: ${latest}` },
    svg("rect", { class: "share-frame", x: LABEL, y: 0, width: W, height: H }), lines, axis),
  table1, byCountry);
}

// openShares are the records whose traffic shares are open.
const openShares = new Set();

// sitesMap draws a block's view of the sites (GET /api/v1/sites): this site in the middle, each
// other site around it coloured by its freshness (fresh, stale, unknown), joined by a line that
// is dashed while it is not fresh and labelled with its heartbeat's age.
function sitesMap(v) {
  const others = v.sites || [];
  const W = 360, H = others.length > 1 ? 200 : 90, cx = W / 2, cy = H / 2, R = Math.min(W, H) / 2 - 22;
  const at = (i) => {
    const a = others.length === 1 ? 0 : (2 * Math.PI * i) / others.length - Math.PI / 2;
    return [cx + (others.length === 1 ? R * 1.6 : R * 1.4) * Math.cos(a), cy + R * Math.sin(a)];
  };
  const nodes = others.map((s, i) => {
    const [x, y] = at(i), heard = s.state !== "unknown";
    const age = heard ? `${s.heartbeat_age_seconds.toFixed(1)} s` : "never heard";
    return svg("g", { class: "site", "data-site": s.name, "data-state": s.state },
      svg("title", {}, `${s.name}: ${s.state}, heartbeat ${age}${s.peer ? `, heard at ${s.peer}` : ""}`),
      svg("line", { class: `link link-${s.state}`, x1: cx, y1: cy, x2: x.toFixed(1), y2: y.toFixed(1) }),
      svg("text", { class: "axis", x: ((cx + x) / 2).toFixed(1), y: ((cy + y) / 2 - 3).toFixed(1), "text-anchor": "middle" }, age),
      svg("circle", { class: `st-${s.state}`, cx: x.toFixed(1), cy: y.toFixed(1), r: 9 }),
      svg("text", { x: x.toFixed(1), y: (y + 21).toFixed(1), "text-anchor": "middle" }, s.name));
  });
  const label = `${v.site} and the sites it reads: ` + (others.map((s) => `${s.name} ${s.state}`).join(", ") || "none");
  return svg("svg", { class: "sitemap", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label },
    svg("title", {}, label), nodes,
    svg("g", { class: "site self", "data-site": v.site, "data-state": "self" },
      svg("circle", { class: "self", cx, cy, r: 11 }), svg("text", { x: cx, y: cy + 24, "text-anchor": "middle" }, v.site)));
}
