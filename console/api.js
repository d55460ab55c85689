// api.js: calls to fairqd's HTTP API (api/API.md) with the signed-in token.
//
// The token lives in this tab's sessionStorage: it is gone when the tab
// closes, never written to a cookie (no other site can make the browser
// send it: no CSRF) and never put in an address (addresses end up in logs
// and histories). Every call carries it as "Authorization: Bearer".

const TOKEN_KEY = "fairq.token";

// Counts tokens set and forgotten: a call answered after the token it
// was made with was forgotten or replaced is dropped (SignedOut), so that
// one session's data never shows in the next.
let epoch = 0;

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

// Thrown by a call whose session ended while it was out; not an error to
// show, only the end of what the call was for.
export class SignedOut extends Error {
  constructor() {
    super("signed out");
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  epoch++;
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function forgetToken() {
  epoch++;
  sessionStorage.removeItem(TOKEN_KEY);
}

// The path with each defined, non-empty parameter of query added.
export function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {}))
    if (value !== undefined && value !== null && value !== "") params.set(name, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

// Calls method path (a body is sent as JSON); resolves to the answer's
// JSON, or rejects with an ApiError holding fairqd's error and detail
// (status 0: fairqd could not be reached), or with SignedOut when the
// token changed meanwhile.
export async function call(method, path, body) {
  const calledIn = epoch;
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let answer;
  try {
    answer = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    if (epoch !== calledIn) throw new SignedOut();
    throw new ApiError(0, "unreachable", `fairqd cannot be reached (${error.message})`);
  }
  const text = await answer.text();
  if (epoch !== calledIn) throw new SignedOut();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(answer.status, "bad_answer", `fairqd answered ${answer.status} with no JSON`);
  }
  if (!answer.ok) throw new ApiError(answer.status, json && json.error, json && json.detail);
  return json;
}
