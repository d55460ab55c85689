// console.js: the console's start: sign-in, the views' tabs and the live
// refresh. What each view shows is in its own view_*.js; docs/console.md
// describes the console as its users see it.

import { ApiError, SignedOut, call, forgetToken, setToken, token } from "./api.js";
import * as tenants from "./view_tenants.js";
import * as requests from "./view_requests.js";
import * as messages from "./view_messages.js";
import * as destinations from "./view_destinations.js";
import * as senders from "./view_senders.js";

// As fairq top: quick enough to watch a backlog drain, and a trifle for
// fairqd (its in-memory figures, and a few indexed reads). The next
// refresh is timed from the end of the last, so a slow fairqd is asked
// less often, never more.
const REFRESH_MS = 2000;

// A tab reloaded while fairqd is away (restarting, failing over) keeps
// its token and tries again this often.
const RESUME_MS = 5000;

const VIEWS = { tenants, requests, messages, destinations, senders };

const state = {
  session: null, // {admin, tenant} from GET /v1/whoami; null: signed out
  view: "tenants",
  timer: null, // the next live refresh
  resumeTimer: null, // the next try to resume a reloaded tab's session
  refreshing: false,
  again: false, // a refresh was asked for while one ran
};

const $ = (selector) => document.querySelector(selector);

function showError(error) {
  const banner = $("#error");
  banner.textContent = error ? error.message : "";
  banner.hidden = !error;
}

// What a failed call means: a token revoked while the console ran signs
// it out; a call of an ended session is dropped; anything else is shown.
function fail(error) {
  if (error instanceof SignedOut) return;
  if (error instanceof ApiError && error.status === 401) signOut("The token is no longer valid.");
  else showError(error);
}

// Shows what the session may see: admin-only tabs and fields are hidden
// from a tenant's token (fairqd refuses their routes to it anyway).
function showSignedIn(session) {
  document.body.dataset.signedIn = String(Boolean(session));
  $("#signin").hidden = Boolean(session);
  $("nav").hidden = !session;
  $(".session").hidden = !session;
  for (const node of document.querySelectorAll("[data-admin]"))
    node.hidden = !(session && session.admin);
  $("#who").textContent = session ? (session.admin ? "admin" : `tenant ${session.tenant}`) : "";
  if (!session) {
    for (const id of Object.keys(VIEWS)) $(`#view-${id}`).hidden = true;
    showError(null);
  }
}

// Empties everything a session showed and the filters it typed: the next
// one, perhaps another tenant's, starts from a blank page.
function clearViews() {
  for (const id of Object.keys(VIEWS))
    for (const body of document.querySelectorAll(`#view-${id} tbody`)) body.replaceChildren();
  $("#share").replaceChildren();
  $("#share-legend").replaceChildren();
  $("#messages-count").textContent = "";
  $("#message-search").reset();
  $("#requests-status").selectedIndex = 0;
  $("#requests-tenant").value = "";
  $("#updated").textContent = "";
}

function showView(name) {
  state.view = name;
  for (const id of Object.keys(VIEWS)) $(`#view-${id}`).hidden = id !== name;
  for (const button of document.querySelectorAll("nav button"))
    button.setAttribute("aria-current", String(button.dataset.view === name));
  refresh();
}

// The next live refresh, REFRESH_MS after the last ended. A hidden tab
// is not refreshed (nobody looks); it is again as soon as it shows.
function scheduleRefresh() {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => {
    state.timer = null;
    if (VIEWS[state.view].live && !document.hidden) refresh();
    else scheduleRefresh();
  }, REFRESH_MS);
}

// Refreshes the view shown; one refresh at a time (a slow fairqd must
// not pile up calls). One asked for meanwhile (another view shown, an
// action done) runs when the current one ends.
async function refresh() {
  if (!state.session) return;
  if (state.refreshing) {
    state.again = true;
    return;
  }
  state.refreshing = true;
  state.again = false;
  clearTimeout(state.timer);
  try {
    await VIEWS[state.view].refresh(state.session);
    showError(null);
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    fail(error);
  } finally {
    state.refreshing = false;
  }
  if (!state.session) return;
  if (state.again) refresh();
  else scheduleRefresh();
}

async function signIn(event) {
  event.preventDefault();
  clearTimeout(state.resumeTimer);
  const input = $("#token");
  const value = input.value.trim();
  input.value = "";
  $("#signin-error").textContent = "";
  setToken(value);
  try {
    await start();
  } catch (error) {
    if (error instanceof SignedOut) return;
    forgetToken();
    $("#signin-error").textContent =
      error instanceof ApiError && error.status === 401
        ? "fairqd does not know this token."
        : error.message;
  }
}

function signOut(reason) {
  forgetToken();
  clearTimeout(state.timer);
  clearTimeout(state.resumeTimer);
  state.timer = null;
  state.session = null;
  clearViews();
  showSignedIn(null);
  $("#signin-error").textContent = reason || "";
  $("#token").focus();
}

// With a token in this tab: who it is, then the live views.
async function start() {
  const session = await call("GET", "/v1/whoami");
  state.session = session;
  clearViews();
  showSignedIn(session);
  if (!session.admin && VIEWS[state.view].adminOnly) state.view = "tenants";
  showView(state.view);
}

// A reloaded tab's token: signed in again, unless fairqd says the token
// is no longer valid. fairqd away keeps the token and tries again.
async function resume() {
  try {
    await start();
  } catch (error) {
    if (error instanceof SignedOut) return;
    if (error instanceof ApiError && error.status === 401) {
      signOut("The token is no longer valid.");
      return;
    }
    $("#signin-error").textContent =
      `${error.message}; trying again in ${RESUME_MS / 1000} s.`;
    state.resumeTimer = setTimeout(resume, RESUME_MS);
  }
}

function main() {
  $("#signin").addEventListener("submit", signIn);
  $("#signout").addEventListener("click", () => signOut(""));
  for (const button of document.querySelectorAll("nav button"))
    button.addEventListener("click", () => showView(button.dataset.view));
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.session && VIEWS[state.view].live) refresh();
  });
  for (const view of Object.values(VIEWS)) view.setup({ refresh, showError: fail });
  showSignedIn(null);
  // A reload of the tab keeps its token, as the tab's session does
  if (token()) resume();
}

main();
