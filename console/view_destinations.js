// view_destinations.js: the destinations (GET /v1/destinations, admin)
// as the leader's scheduler shapes them now: state, configured and
// effective rate, messages ready and in flight.

import { call } from "./api.js";
import { cell, el, fillTable } from "./dom.js";
import * as format from "./format.js";

export const live = true;
export const adminOnly = true;

export function setup() {}

function row(destination) {
  const live = destination.live;
  const state = destination.held ? "held" : live.state;
  return el(
    "tr",
    { "data-destination": destination.name, "data-state": state },
    el("th", { scope: "row" }, destination.name),
    cell("state", state),
    cell("rate", destination.rate || "no limit"),
    cell("effective_rate", live.effective_rate === null ? "–" : format.rate(live.effective_rate)),
    cell("ready", format.count(live.ready)),
    cell("inflight", format.count(live.inflight)),
    cell("sent", format.count(live.sent)),
    cell("deferred", format.count(live.deferred)),
    cell("throttled", format.count(live.throttled)),
    cell("domains", destination.domains.join(", ")),
  );
}

export async function refresh() {
  const list = await call("GET", "/v1/destinations");
  fillTable(document.querySelector("#destinations"), list.destinations.map(row), "No destinations.");
}
