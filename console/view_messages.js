// view_messages.js: a search of messages (GET /v1/messages) by recipient,
// domain, request, tenant and status. It runs when asked, not live: a
// search answers a question, and its rows would move under the reader.

import { call, withQuery } from "./api.js";
import { cell, el, fillTable } from "./dom.js";
import * as format from "./format.js";

export const live = false;
export const adminOnly = false;

const SHOWN = 100;

let context = null;

export function setup(ctx) {
  context = ctx;
  document.querySelector("#message-search").addEventListener("submit", (event) => {
    event.preventDefault();
    context.refresh();
  });
}

function row(message) {
  return el(
    "tr",
    { "data-message": message.id },
    el("th", { scope: "row" }, message.id),
    cell("request", message.request),
    cell("tenant", message.tenant),
    cell("to", message.to),
    cell("status", message.status),
    cell("attempts", format.count(message.attempts)),
    cell("last_attempt_at", format.time(message.last_attempt_at)),
    cell("error", message.last_error || ""),
  );
}

export async function refresh(session) {
  const form = new FormData(document.querySelector("#message-search"));
  const query = { limit: SHOWN };
  for (const name of ["to", "domain", "request", "status", "tenant"]) {
    const value = String(form.get(name) || "").trim();
    if (name === "tenant" && !session.admin) continue;
    query[name] = value;
  }
  const list = await call("GET", withQuery("/v1/messages", query));
  fillTable(document.querySelector("#messages"), list.messages.map(row), "No message matches.");
  document.querySelector("#messages-count").textContent =
    list.next_after ? `The first ${list.messages.length} matches.` : `${list.messages.length} found.`;
}
