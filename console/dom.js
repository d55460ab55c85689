// dom.js: building the page's elements. Every value fairqd returns is put
// in as text (textContent), never as markup: a tenant name, an address or
// a relay's error is data, and must not become script.

// An element: attrs are set as attributes (false, null and undefined
// leave one out); children are nodes or text.
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {}))
    if (value !== false && value !== null && value !== undefined)
      node.setAttribute(name, value === true ? "" : String(value));
  for (const child of children)
    if (child !== null && child !== undefined)
      node.append(child instanceof Node ? child : String(child));
  return node;
}

// An SVG element, attributes as el's.
export function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

// A table cell for field (data-field, which tests and styles select by).
export function cell(field, ...children) {
  return el("td", { "data-field": field }, ...children);
}

// Replaces the rows of table's body with rows, or with one row saying
// empty when there are none.
export function fillTable(table, rows, empty) {
  const body = table.tBodies[0];
  const columns = table.tHead.rows[0].cells.length;
  if (rows.length === 0)
    rows = [el("tr", { class: "empty" }, el("td", { colspan: columns }, empty))];
  body.replaceChildren(...rows);
}
