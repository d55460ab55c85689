// view_tenants.js: the tenants (GET /v1/tenants) and the share of
// dispatch each got over the last minutes (GET /v1/share), live.

import { call } from "./api.js";
import { cell, el, fillTable } from "./dom.js";
import * as format from "./format.js";
import { drawShare } from "./share_chart.js";

export const live = true;
export const adminOnly = false;

// Bulk senders must stay under these (fairq top marks the same): above
// them, mailbox providers start to junk or refuse a sender's mail.
const BOUNCE_LIMIT = 0.02;
const COMPLAINT_LIMIT = 0.001;

export function setup() {}

// held: an operator holds it; sending: messages went out in the last
// minute or are out now; waiting: it has messages but none went out
// (paused, scheduled, backing off, over its budget, or no sender);
// idle: nothing to send.
function stateOf(tenant) {
  if (tenant.held) return "held";
  if (tenant.inflight > 0 || tenant.send_rate > 0) return "sending";
  return tenant.depth > 0 ? "waiting" : "idle";
}

function flagged(value, limit) {
  return el("span", { class: value !== null && value > limit ? "over" : null }, format.percent(value));
}

function row(tenant) {
  return el(
    "tr",
    { "data-tenant": tenant.name, "data-state": stateOf(tenant) },
    el("th", { scope: "row" }, tenant.name),
    cell("weight", format.count(tenant.weight)),
    cell("depth", format.count(tenant.depth)),
    cell("inflight", format.count(tenant.inflight)),
    cell("send_rate", format.rate(tenant.send_rate)),
    // 0: nothing due waits
    cell("oldest_due_age_s", tenant.oldest_due_age_s ? format.age(tenant.oldest_due_age_s) : "–"),
    cell("bounce_rate", flagged(tenant.bounce_rate, BOUNCE_LIMIT)),
    cell("complaint_rate", flagged(tenant.complaint_rate, COMPLAINT_LIMIT)),
    cell("state", stateOf(tenant)),
  );
}

export async function refresh(session) {
  const [list, share] = await Promise.all([
    call("GET", "/v1/tenants"),
    call("GET", "/v1/share?minutes=10"),
  ]);
  const table = document.querySelector("#tenants");
  fillTable(table, list.tenants.map(row), "No tenants yet.");
  drawShare(document.querySelector("#share"), document.querySelector("#share-legend"), share,
    session);
}
