// console.js: the console's start: sign-in, the views' tabs and the live
// refresh. What each view shows is in its own view_*.js; docs/console.md
// describes the console as its users see it.

import { ApiError, call, forgetToken, setToken, token } from "./api.js";
import * as tenants from "./view_tenants.js";
import * as requests from "./view_requests.js";
import * as messages from "./view_messages.js";
import * as destinations from "./view_destinations.js";
import * as senders from "./view_senders.js";

// As fairq top: quick enough to watch a backlog drain, and a trifle for
// fairqd (its in-memory figures, and a few indexed reads).
const REFRESH_MS = 2000;

const VIEWS = { tenants, requests, messages, destinations, senders };

const state = {
  session: null, // {admin, tenant} from GET /v1/whoami; null: signed out
  view: "tenants",
  timer: null,
  refreshing: false,
  again: false, // a refresh was asked for while one ran
};

const $ = (selector) => document.querySelector(selector);

function showError(error) {
  const banner = $("#error");
  banner.textContent = error ? error.message : "";
  banner.hidden = !error;
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

function showView(name) {
  state.view = name;
  for (const id of Object.keys(VIEWS)) $(`#view-${id}`).hidden = id !== name;
  for (const button of document.querySelectorAll("nav button"))
    button.setAttribute("aria-current", String(button.dataset.view === name));
  refresh();
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
  try {
    await VIEWS[state.view].refresh(state.session);
    showError(null);
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    // A token revoked while the console ran signs it out
    if (error instanceof ApiError && error.status === 401) signOut("The token is no longer valid.");
    else showError(error);
  } finally {
    state.refreshing = false;
  }
  if (state.again) refresh();
}

async function signIn(event) {
  event.preventDefault();
  const input = $("#token");
  const value = input.value.trim();
  input.value = "";
  $("#signin-error").textContent = "";
  setToken(value);
  try {
    await start();
  } catch (error) {
    forgetToken();
    $("#signin-error").textContent =
      error instanceof ApiError && error.status === 401
        ? "fairqd does not know this token."
        : error.message;
  }
}

function signOut(reason) {
  forgetToken();
  clearInterval(state.timer);
  state.timer = null;
  state.session = null;
  showSignedIn(null);
  $("#signin-error").textContent = reason || "";
  $("#token").focus();
}

// With a token in this tab: who it is, then the live views.
async function start() {
  const session = await call("GET", "/v1/whoami");
  state.session = session;
  showSignedIn(session);
  if (!session.admin && VIEWS[state.view].adminOnly) state.view = "tenants";
  showView(state.view);
  clearInterval(state.timer);
  state.timer = setInterval(() => {
    if (VIEWS[state.view].live) refresh();
  }, REFRESH_MS);
}

function main() {
  $("#signin").addEventListener("submit", signIn);
  $("#signout").addEventListener("click", () => signOut(""));
  for (const button of document.querySelectorAll("nav button"))
    button.addEventListener("click", () => showView(button.dataset.view));
  for (const view of Object.values(VIEWS)) view.setup({ refresh, showError });
  showSignedIn(null);
  // A reload of the tab keeps its token, as the tab's session does
  if (token()) start().catch(() => signOut(""));
}

main();
