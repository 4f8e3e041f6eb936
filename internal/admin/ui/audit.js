// Meridian dashboard: who the dashboard is signed in as (GET /api/v1/whoami), which hides the
// buttons its role may not use, and the audit log (GET /api/v1/audit) for the roles that may
// read it. Loaded after app.js, whose helpers (el, $, api, table, ago, localTime) it uses.
"use strict";

const AUDIT_SHOWN = 25;
const ROLE_RANK = { read: 1, operate: 2, admin: 3 };
let identity = null;

// loadIdentity asks who the dashboard is, shows it in the header and sets the body's role
// class, which hides what the role may not do.
async function loadIdentity() {
  identity = await api("/api/v1/whoami");
  const name = identity.auth === "none" ? "no authentication" : `${identity.auth === "token" ? "token " : ""}${identity.name}`;
  $("whoami").textContent = `${name} (${identity.role})`;
  document.body.classList.toggle("role-read", identity.role === "read");
  $("audit-denied").hidden = ROLE_RANK[identity.role] >= ROLE_RANK.operate;
}

// refreshAudit shows the latest entries of the audit log, when the role may read it.
async function refreshAudit() {
  if (!identity || ROLE_RANK[identity.role] < ROLE_RANK.operate) {
    $("audit-entries").replaceChildren();
    return;
  }
  const log = await api(`/api/v1/audit?limit=${AUDIT_SHOWN}`);
  $("audit-file").textContent = log.file ? `kept in ${log.file}` : "kept in memory";
  const rows = (log.entries || []).map((e) => el("tr", { class: e.status >= 400 ? "audit-refused" : "", "data-action": e.action },
    el("td", { title: localTime(e.time) }, ago(e.time)),
    el("td", { "data-field": "who" }, e.who || "anonymous", el("span", { class: "muted" }, ` ${e.role}`)),
    el("td", { "data-field": "from" }, e.from),
    el("td", { "data-field": "action" }, e.action),
    el("td", { "data-field": "what", title: (e.backends || []).join("\n") },
      e.backends && e.backends.length ? `${e.backends.length} backend${e.backends.length === 1 ? "" : "s"}` : e.selector || ""),
    el("td", { "data-field": "reason" }, e.reason || ""),
    el("td", { "data-field": "result", class: e.status >= 400 ? "error" : "" }, e.status >= 400 ? `${e.status} ${e.error || ""}` : "ok")));
  $("audit-entries").replaceChildren(rows.length
    ? table(["When", "Who", "From", "Action", "What", "Reason", "Result"], rows)
    : el("p", { class: "muted" }, "no change yet"));
}
