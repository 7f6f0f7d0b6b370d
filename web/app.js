// The dashboard: sign-in, a hash router, and the views. Data comes from the JSON API; the
// event stream says when something changed, and only the data the current view shows is
// fetched again (debounced), never the page.
import { ApiError, followEvents, getJson, session, setUnauthenticatedHandler } from "./api.js";
import { h, notice, replace } from "./dom.js";
import { caller, starts } from "./state.js";
import { clusterView, queuesView } from "./view_cluster.js";
import { jobView, jobsView } from "./view_jobs.js";
import { nodesView } from "./view_nodes.js";
import { serviceView, servicesView } from "./view_services.js";
import { datasetsView } from "./view_datasets.js";
import { sessionsView } from "./view_sessions.js";

const main = document.getElementById("main");
const live = document.getElementById("live");
const who = document.getElementById("who");

// Which Corral serves the page, beside its name; open (no token), like /metrics.
fetch("/v1/version", { cache: "no-store" })
  .then((r) => (r.ok ? r.json() : null))
  .then((v) => v && replace(document.getElementById("version"), v.version))
  .catch(() => {});

let stream = null;
let current = null;  // {view, refresh(dirty), unmount()}
let dirty = new Set();
let timer = null;

function showSignIn(message) {
  if (stream) stream.stop();
  stream = null;
  if (current && current.unmount) current.unmount();
  current = null;
  document.body.classList.add("signed-out");
  const token = h("input", { id: "signin-token", type: "password", autocomplete: "off", required: true });
  const user = h("input", { id: "signin-user", type: "text", autocomplete: "username" });
  const form = h(
    "form",
    { id: "signin", class: "card signin" },
    h("h2", {}, "Sign in"),
    h("p", {}, "Paste your Corral token (", h("code", {}, "corral token create --user NAME"),
      "). It stays in this tab only."),
    h("label", {}, "Token", token),
    h("label", {}, "Your user name (for \u201cmy jobs\u201d)", user),
    message ? h("p", { class: "notice error" }, message) : null,
    h("button", { id: "signin-button", type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    session.signIn(token.value, user.value);
    start();
  });
  replace(main, form);
  token.focus();
}

setUnauthenticatedHandler((e) => {
  session.signOut();
  showSignIn("Not signed in: " + e.message);
});

// Marks data as changed; the current view refetches what it shows at most every
// `current.every` ms (its own choice: views that read every active job wait longer, see
// docs/benchmarks.md "Dashboard clients").
function touch(kind) {
  dirty.add(kind);
  if (timer) return;
  timer = setTimeout(() => {
    timer = null;
    const d = dirty;
    dirty = new Set();
    if (current && current.refresh) current.refresh(d);
  }, (current && current.every) || 300);
}

function onChange(c) {
  if (c.type === "run_started") starts.set(c.key + "." + c.attempt, c.started_at || c.at);
  touch(c.kind);
  if (c.kind === "job") touch("job:" + c.key);
}

async function start() {
  if (!session.token()) return showSignIn();
  document.body.classList.remove("signed-out");
  caller.user = session.user();
  // Where to follow events from: the revision of a first read.
  let revision;
  try {
    revision = (await getJson("/v1/queues")).revision;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;  // the handler shows sign-in
    return replace(main, notice(e));
  }
  replace(who, caller.user || "(no name)", " ", h("button", { id: "signout", class: "link", onclick: () => { session.signOut(); showSignIn(); } }, "sign out"));
  if (stream) stream.stop();
  stream = followEvents(revision, {
    change: onChange,
    reset: () => touch("all"),
    status: (s) => replace(live, s),
    denied: (e) => replace(live, "no event stream: " + e.message),
  });
  route();
}

const routes = [
  [/^#?\/?$/, () => clusterView],
  [/^#\/queues$/, () => queuesView],
  [/^#\/jobs(\?.*)?$/, () => jobsView],
  [/^#\/jobs\/(\d+)$/, () => jobView],
  [/^#\/nodes$/, () => nodesView],
  [/^#\/sessions$/, () => sessionsView],
  [/^#\/services$/, () => servicesView],
  [/^#\/services\/([^/?]+)$/, () => serviceView],
  [/^#\/datasets$/, () => datasetsView],
];

function route() {
  if (!session.token()) return showSignIn();
  if (current && current.unmount) current.unmount();
  const hash = location.hash || "#/";
  // The nav link whose address is this one, else the one with the longest matching prefix.
  let active = null;
  let longest = -1;
  for (const a of document.querySelectorAll("nav a")) {
    const p = a.dataset.prefix || a.getAttribute("href");
    const len = hash === a.getAttribute("href") ? Infinity : hash.startsWith(p) && a.dataset.prefix ? p.length : -1;
    if (len > longest) [active, longest] = [a, len];
  }
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a === active);
  for (const [re, view] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    const section = h("section", { class: "view" });
    replace(main, section);
    current = view()(section, m, hash);
    return;
  }
  replace(main, h("p", { class: "notice error" }, "No such page: ", hash));
  current = null;
}

window.addEventListener("hashchange", route);
start();
