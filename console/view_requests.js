// view_requests.js: the newest requests (GET /v1/requests) with their
// progress, and their lifecycle actions: pause, resume, cancel
// (POST /v1/requests/ID/pause|resume|cancel).

import { call, withQuery } from "./api.js";
import { cell, el, fillTable } from "./dom.js";
import * as format from "./format.js";

export const live = true;
export const adminOnly = false;

// The newest this many: a console shows what is going on now; the CLI
// and the API page through the rest.
const SHOWN = 50;

const FINISHED = new Set(["done", "cancelled", "rejected"]);

let context = null;

export function setup(ctx) {
  context = ctx;
  document.querySelector("#requests-status").addEventListener("change", () => context.refresh());
  document.querySelector("#requests-tenant").addEventListener("change", () => context.refresh());
  document.querySelector("#requests").addEventListener("click", act);
}

// The actions a request in status may take.
function actions(request) {
  if (FINISHED.has(request.status)) return [];
  return request.status === "paused" ? ["resume", "cancel"] : ["pause", "cancel"];
}

// A bar of what is finished (sent, dead, cancelled, rejected) of total,
// with the sent part apart from the rest.
function progress(request) {
  const total = request.total || 0;
  const done = request.sent + request.dead + request.cancelled + request.rejected;
  const bar = el("div", { class: "progress", "data-done": done, "data-total": total,
    title: `${format.count(done)} of ${format.count(total)} finished` });
  const sent = el("div", { class: "sent" });
  const other = el("div", { class: "other" });
  sent.style.width = `${total ? (request.sent / total) * 100 : 0}%`;
  other.style.width = `${total ? ((done - request.sent) / total) * 100 : 0}%`;
  bar.append(sent, other);
  return el("div", { class: "progress-cell" }, bar,
    el("span", {}, `${total ? Math.floor((done / total) * 100) : 0} %`));
}

function row(request) {
  const buttons = actions(request).map((action) =>
    el("button", { type: "button", "data-action": action, "data-request": request.id },
      action[0].toUpperCase() + action.slice(1)));
  return el(
    "tr",
    { "data-request": request.id, "data-status": request.status },
    el("th", { scope: "row" }, request.id),
    cell("tenant", request.tenant),
    cell("status", request.status),
    cell("progress", progress(request)),
    cell("sent", format.count(request.sent)),
    cell("failed", format.count(request.failed)),
    cell("dead", format.count(request.dead)),
    cell("created_at", format.time(request.created_at)),
    cell("actions", ...buttons),
  );
}

async function act(event) {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const { action, request } = button.dataset;
  // A cancel cannot be undone: the recipients not yet sent are dropped
  if (action === "cancel" &&
      !window.confirm(`Cancel request ${request}? Its messages not yet sent will not be sent.`))
    return;
  button.disabled = true;
  try {
    await call("POST", `/v1/requests/${encodeURIComponent(request)}/${action}`);
    await context.refresh();
  } catch (error) {
    context.showError(error);
    button.disabled = false;
  }
}

export async function refresh(session) {
  const query = {
    status: document.querySelector("#requests-status").value,
    tenant: session.admin ? document.querySelector("#requests-tenant").value.trim() : "",
    limit: SHOWN,
  };
  const list = await call("GET", withQuery("/v1/requests", query));
  fillTable(document.querySelector("#requests"), list.requests.map(row), "No requests.");
}
