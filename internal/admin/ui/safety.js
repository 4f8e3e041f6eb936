"use strict";
// The dashboard's sections of safe changes, refreshed with the rest of the page (app.js calls
// refreshSafety): the drills, each with its last result and a button that runs it now.

// refreshSafety fetches and shows the drills.
async function refreshSafety() {
  renderDrills(await api("/api/v1/drills"));
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
