"use strict";
// The dashboard's sections of safe changes, refreshed with the rest of the page (app.js calls
// refreshSafety): the staged shifts, each with its step and a button that cancels it, and the
// drills, each with its last result and a button that runs it now.

// refreshSafety fetches and shows the shifts, the drills and the canaries.
async function refreshSafety() {
  const [shifts, drills, canaries] = await Promise.all([api("/api/v1/shifts"), api("/api/v1/drills"), api("/api/v1/canaries")]);
  renderShifts(shifts);
  renderDrills(drills);
  renderCanaries(canaries);
}

// canaryResult is a canary row's result cell: ok, or its mismatches' kinds (hover for them).
function canaryResult(mismatches) {
  const ms = mismatches || [];
  return el("td", { "data-field": "result", class: ms.length ? "drill-failed" : "drill-passed",
    title: ms.map((m) => `${m.kind}: ${m.text}`).join("\n") }, ms.length ? ms.map((m) => m.kind).join(", ") : "ok");
}

// renderCanaries shows the Canaries section when the block asks resolvers or parents.
function renderCanaries(rep) {
  const box = $("canaries");
  const checks = rep.checks || [], delegations = rep.delegations || [];
  box.hidden = !checks.length && !delegations.length;
  if (box.hidden) return;
  box.replaceChildren(el("h2", {}, "Canaries ", el("span", { class: "muted" }, `(asked ${localTime(rep.time)})`)),
    table(["Resolver", "Name", "ECS", "Answer", "TTL", "Scope", "This instance", "Result"],
      checks.map((c) => el("tr", { "data-canary": `${c.resolver} ${c.name} ${c.ecs || ""}`.trim() },
        el("td", {}, c.resolver), el("td", {}, c.name), el("td", {}, c.ecs || "-"),
        el("td", {}, (c.answer || []).join(" ") || c.rcode || "-"), el("td", {}, String(c.ttl)),
        el("td", {}, c.scope >= 0 ? `/${c.scope}` : "-"),
        el("td", {}, `${(c.expected.answer || []).join(" ")} (TTL ${c.expected.ttl})`), canaryResult(c.mismatches)))),
    delegations.length ? table(["Parent", "Zone", "Delegated to", "The zone's NS", "Result"],
      delegations.map((d) => el("tr", { "data-delegation": `${d.parent} ${d.zone}` },
        el("td", {}, d.parent), el("td", {}, d.zone), el("td", {}, (d.ns || []).join(" ")),
        el("td", {}, (d.expected_ns || []).join(" ")), canaryResult(d.mismatches)))) : "");
}

// renderShifts shows the Shifts section while there are shifts.
function renderShifts(list) {
  const box = $("shifts");
  box.hidden = !list.length;
  if (!list.length) return;
  const pct = (f) => `${Math.round(f * 1000) / 10}%`;
  box.replaceChildren(el("h2", {}, "Shifts"), table(["Record", "From", "To", "Step", "On to", "State", "Why", ""],
    list.map((s) => el("tr", { "data-shift": s.id, title: (s.history || []).map((h) => `${localTime(h.time)} ${pct(h.share)} ${h.what}`).join("\n") },
      el("td", {}, s.record), el("td", {}, s.from.join(", ")), el("td", {}, s.to.join(", ")),
      el("td", {}, `${s.step + 1} of ${s.steps.length} (${s.steps.map(pct).join(", ")} every ${s.every})`),
      el("td", { "data-field": "share" }, pct(s.share)),
      el("td", { "data-field": "state", class: s.state === "rolled-back" ? "drill-failed" : "" }, s.state),
      el("td", { "data-field": "why" }, s.why || s.note || ""),
      el("td", {}, el("button", { "data-action": "cancel-shift", onclick: () => cancelShift(s.id) }, "Cancel"))))));
}

// cancelShift ends a shift: the record's configured weights serve again.
async function cancelShift(id) {
  try {
    await api(`/api/v1/shifts/${encodeURIComponent(id)}/cancel`, {});
    message(`shift ${id} cancelled: the configured weights serve again`);
    await refresh();
  } catch (e) {
    if (!(e instanceof SignInRequired)) message(`cancelling shift ${id} failed: ${e.message}`, true);
  }
}

// drillResult says what a drill's last run found, for its row.
function drillResult(d) {
  if (!d.last) return el("span", { class: "muted" }, "not run yet");
  const failing = (d.last.records || []).filter((r) => (r.failures || []).length);
  return el("span", { class: d.last.failed ? "drill-failed" : "drill-passed", "data-field": "result",
    title: failing.map((r) => `${r.record}: ${r.failures.join("; ")}`).join("\n") },
    d.last.failed ? `failed: ${d.last.summary}` : "passed");
}

// renderDrills shows the Drills section when a block has drills.
function renderDrills(list) {
  const box = $("drills");
  box.hidden = !list.length;
  if (!list.length) return;
  const supposes = (h) => [(h.down || []).length ? `down ${h.down.join(", ")}` : "",
    (h.drained || []).length ? `drained ${h.drained.join(", ")}` : "", h.primaries ? "primaries down" : ""].filter(Boolean).join("; ");
  box.replaceChildren(el("h2", {}, "Drills"), table(["Drill", "Every", "Supposes", "Next run", "Last run", "Result", ""],
    list.map((d) => el("tr", { "data-drill": d.name },
      el("td", {}, d.name), el("td", {}, d.every),
      el("td", {}, supposes(d.hypothesis), d.live ? el("span", { class: "badge badge-ttl" }, `live ${d.live}`) : ""),
      el("td", {}, localTime(d.next)), el("td", {}, d.last ? localTime(d.last.time) : "-"),
      el("td", {}, drillResult(d)),
      el("td", {}, el("button", { "data-action": "run-drill", onclick: () => runDrill(d.name) }, "Run now"))))));
}

// runDrill runs a drill now and says how it went.
async function runDrill(name) {
  try {
    const rep = await api("/api/v1/drills/run", { name });
    message(`drill ${name}: ${rep.failed ? "failed" : "passed"}: ${rep.summary}`, rep.failed);
    await refresh();
  } catch (e) {
    if (!(e instanceof SignInRequired)) message(`drill ${name} failed to run: ${e.message}`, true);
  }
}
