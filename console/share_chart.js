// share_chart.js: the share of dispatch each tenant got, as a stacked
// area chart in SVG: one column a slot (GET /v1/share, oldest left), each
// tenant's band as high as its part of the slot's messages. Fairness made
// visible: equal weights make equal bands while every tenant has work.
// A tenant's token sees its own series only: its messages a slot.

import { el, svg } from "./dom.js";
import * as format from "./format.js";

const WIDTH = 720;
const HEIGHT = 200;

// Distinct hues; tenants beyond a dozen share them (the legend and the
// hover text still tell them apart).
const COLOURS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6",
  "#dd4477", "#66aa00", "#b82e2e", "#316395", "#994499", "#22aa99"];

// A tenant keeps its colour while the page is open, whoever else comes
// and goes: the first tenant seen takes the first colour, and so on.
const colours = new Map();
function colourOf(name) {
  if (!colours.has(name)) colours.set(name, COLOURS[colours.size % COLOURS.length]);
  return colours.get(name);
}

// The left edge of slot i of n, across the chart.
function x(i, n) {
  return (i / n) * WIDTH;
}

// Draws share (GET /v1/share's answer) into box, and its legend, for
// session (GET /v1/whoami's answer).
export function drawShare(box, legend, share, session) {
  const tenants = share.tenants;
  const slots = tenants.length ? tenants[0].dispatched.length : 0;
  const totals = Array.from({ length: slots }, (_, i) =>
    tenants.reduce((sum, t) => sum + t.dispatched[i], 0));
  // For the admin each column is split by share (100 % high), even while
  // only one tenant sends; for a tenant's own token (its series only) the
  // column is its count, against the busiest slot, so its own pace shows
  const shared = session.admin;
  const busiest = Math.max(1, ...totals);
  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img",
    "aria-label": "share of dispatch per tenant over the last minutes",
  });
  chart.append(svg("rect", { x: 0, y: 0, width: WIDTH, height: HEIGHT, class: "plot" }));
  // Each band runs from the sum of the tenants below it to that sum plus
  // its own share; a slot with no dispatch at all has no band
  const below = new Array(slots).fill(0);
  tenants.forEach((tenant) => {
    const top = [];
    const bottom = [];
    // Each slot is a column: its band is flat across it
    for (let i = 0; i < slots; i++) {
      const of = shared ? totals[i] : busiest;
      const part = of ? tenant.dispatched[i] / of : 0;
      const low = HEIGHT - below[i] * HEIGHT;
      below[i] += part;
      const high = HEIGHT - below[i] * HEIGHT;
      bottom.push([x(i, slots), low], [x(i + 1, slots), low]);
      top.push([x(i, slots), high], [x(i + 1, slots), high]);
    }
    const points = top.concat(bottom.reverse());
    const d = points.map(([px, py], i) => `${i ? "L" : "M"}${px.toFixed(1)},${py.toFixed(1)}`).join("") + "Z";
    const sent = tenant.dispatched.reduce((a, b) => a + b, 0);
    const path = svg("path", { d, fill: colourOf(tenant.name), "data-tenant": tenant.name });
    const title = svg("title");
    title.textContent = `${tenant.name}: ${format.count(sent)} messages in the window`;
    path.append(title);
    chart.append(path);
  });
  const minutes = Math.round((slots * share.slot_s) / 60);
  const caption = el("p", { class: "hint" },
    slots ? `${shared ? "Share" : "Messages"} per ${share.slot_s} s over ${minutes} minutes ` +
      `until ${format.time(share.until)}; ` +
      `${format.count(totals.reduce((a, b) => a + b, 0))} messages dispatched`
      : "Nothing was dispatched in the last minutes.");
  const axis = el("div", { class: "axis" }, el("span", {}, `${minutes} min ago`), el("span", {}, "now"));
  box.replaceChildren(chart, axis, caption);
  legend.replaceChildren(...tenants.map((tenant) => {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = colourOf(tenant.name);
    return el("li", { "data-tenant": tenant.name }, swatch, tenant.name);
  }));
}
