// Meridian dashboard, its pictures of what the block decided (GET /api/v1/timelines): each
// record's last failovers, drawn from the evidence to the first answer, beside its
// failover_target. It uses el and svg of app.js, which calls it when it renders.
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
