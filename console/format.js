// format.js: figures as people read them.

const integer = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat("en", { maximumFractionDigits: 1 });

export function count(value) {
  return value === null || value === undefined ? "–" : integer.format(value);
}

export function rate(value) {
  return value === null || value === undefined ? "–" : decimal.format(value);
}

// A ratio (0..1) as a percentage; "–" when unknown.
export function percent(value) {
  if (value === null || value === undefined) return "–";
  return `${(value * 100).toFixed(value < 0.001 && value > 0 ? 3 : 2)} %`;
}

// Seconds as the largest units that say it: "42 s", "3 min 5 s", "2 h 10 min".
export function age(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

// An RFC 3339 time in the viewer's time zone; "–" for none.
export function time(text) {
  if (!text) return "–";
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? text : at.toLocaleString();
}
