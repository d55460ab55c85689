// view_senders.js: the senders the leading fairqd knows (GET /v1/senders,
// admin), with their credit: how many more messages each has asked for.

import { call } from "./api.js";
import { cell, el, fillTable } from "./dom.js";
import * as format from "./format.js";

export const live = true;
export const adminOnly = true;

export function setup() {}

function row(sender) {
  return el(
    "tr",
    { "data-sender": sender.name, "data-connected": String(sender.connected) },
    el("th", { scope: "row" }, sender.name),
    cell("address", sender.address),
    cell("connected", sender.connected ? "yes" : "no"),
    cell("credit", format.count(sender.credit)),
    cell("inflight", format.count(sender.inflight)),
    cell("dispatched", format.count(sender.dispatched)),
    cell("sent", format.count(sender.sent)),
    cell("failed", format.count(sender.failed)),
    cell("dead", format.count(sender.dead)),
    cell("requeued", format.count(sender.requeued)),
  );
}

export async function refresh() {
  const list = await call("GET", "/v1/senders");
  fillTable(document.querySelector("#senders"), list.senders.map(row),
    "No sender has joined this fairqd (only the leader's senders show).");
}
