// "Jobs" (mine or everyone's, filtered) and one job's page with its spec, runs, events and
// followed logs.
import { getJson, getLog, postJson } from "./api.js";
import { ago, duration, h, notice, replace, table, whenAgo } from "./dom.js";
import { usagePlots } from "./plot.js";
import { caller } from "./state.js";

const STATES = ["pending", "scheduled", "running", "succeeded", "failed", "cancelled"];
const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
const PAGE = 200;

function gpus(job) {
  const per = (job.spec.gpu_milli || 0) / 1000;
  return per ? `${job.spec.replicas}\u00d7${per}` : "-";
}

// How often a view that shows a pending job reads it again: estimates change with no event
// (the head refreshes them every 5 s), so waiting for the job's next event could show none.
const ESTIMATE_REFRESH_MS = 5000;

// How far an estimate may be trusted (the job's estimate_confidence): high rests on time limits
// and known instants, medium on predictions from the owner's own ended jobs, low on little
// history or other users' jobs. A low one is a rough guess and reads as one.
function confidence(job) {
  const c = job.estimate_confidence || "high";
  return { about: c === "low" ? "about " : "", text: `${c} confidence` };
}

// When the head expects a pending job to start, and where (its estimate, refreshed every few
// seconds; none behind runs of unknown length), and how sure that is.
function expected(job) {
  if (job.state !== "pending" || !(job.estimated_start > 0)) return "";
  const left = job.estimated_start - Date.now();
  const c = confidence(job);
  const at = left > 0 ? `in ${c.about}${duration(left)}` : "now";
  const nodes = (job.estimated_nodes || []).join(", ");
  return `expected to start ${at}` + (nodes ? ` on ${nodes}` : "") + ` (${c.text})`;
}

function reason(job) {
  if (job.idle_since > 0) return `idle since ${ago(job.idle_since)}`;
  if (job.state === "pending") return [job.pending_reason, expected(job)].filter(Boolean).join(" \u00b7 ");
  const run = job.runs && job.runs[job.runs.length - 1];
  return (run && run.reason) || "";
}

function jobRow(j) {
  const run = j.runs && j.runs[j.runs.length - 1];
  return h("tr", { "data-job": j.id, class: "state-" + j.state + (j.idle_since > 0 ? " idle" : "") },
    h("td", { class: "num" }, h("a", { href: `#/jobs/${j.id}` }, j.id)),
    h("td", {}, j.spec.name || ""),
    h("td", {}, j.owner),
    h("td", {}, j.spec.queue),
    h("td", {}, h("span", { class: "badge " + j.state }, j.state)),
    h("td", { class: "num" }, gpus(j)),
    h("td", {}, ago(j.submitted_at)),
    h("td", {}, run && run.started_at > 0 ? duration((run.ended_at || Date.now()) - run.started_at) : ""),
    h("td", { class: "reason" }, reason(j)));
}

// The newest `n` jobs matching query `q`, newest first, and whether there are older ones. The
// API lists jobs by ascending id from `after`, so the first time this finds the newest
// matching id (doubling, then halving, `after` with limit=1: a few dozen small reads for
// 100,000 jobs) and the `after` below which n matching jobs lie; `cache` keeps that for the
// view's refreshes, which are then one read of what lies above it.
async function newestJobs(q, n, cache) {
  const read = async (after, limit) =>
    (await getJson(`/v1/jobs?${q}${q.toString() ? "&" : ""}after=${after}&limit=${limit}`)).body.jobs;
  if (cache.after === undefined) {
    const exists = async (after) => (await read(after, 1)).length > 0;
    let after = 0;
    if (await exists(n)) {
      let lo = n;
      let hi = 4 * n;
      while (await exists(hi)) [lo, hi] = [hi, hi * 4];
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (await exists(mid)) lo = mid;
        else hi = mid;
      }
      // hi is the newest matching id; widen the window until it holds n jobs.
      for (let span = n; ; span *= 4) {
        after = Math.max(0, hi - span);
        if (after === 0 || (await read(after, n)).length >= n) break;
      }
    }
    cache.after = after;
  }
  const jobs = await read(cache.after, 100000);
  if (jobs.length > 2 * n) cache.after = jobs[jobs.length - n - 1].id;  // keep the window small
  return { jobs: jobs.slice(-n).reverse(), more: cache.after > 0 || jobs.length > n };
}

// Filters live in the address (#/jobs?mine=1&state=running&queue=q), so a view can be
// bookmarked and the back button works.
function filtersOf(hash) {
  const q = new URLSearchParams(hash.includes("?") ? hash.slice(hash.indexOf("?") + 1) : "");
  return {
    mine: q.get("mine") === "1",
    state: q.get("state") || "",
    queue: q.get("queue") || "",
    user: q.get("user") || "",
  };
}

function hashOf(f) {
  const q = new URLSearchParams();
  if (f.mine) q.set("mine", "1");
  for (const k of ["state", "queue", "user"]) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return "#/jobs" + (s ? "?" + s : "");
}

export function jobsView(section, _m, hash) {
  const f = filtersOf(hash);
  let alive = true;
  let shown = PAGE;  // jobs asked for; "more" asks for another page
  const form = h("form", { class: "filters", id: "job-filters" },
    h("label", {}, h("input", { type: "checkbox", name: "mine", checked: f.mine }), " my jobs",
      caller.user ? "" : " (sign in with your name)"),
    h("label", {}, "state ", h("select", { name: "state" },
      h("option", { value: "" }, "any"),
      h("option", { value: "pending,scheduled,running", selected: f.state === "pending,scheduled,running" }, "active"),
      STATES.map((s) => h("option", { value: s, selected: f.state === s }, s)))),
    h("label", {}, "queue ", h("input", { name: "queue", value: f.queue, size: 12 })),
    h("label", {}, "user ", h("input", { name: "user", value: f.user, size: 10, disabled: f.mine })));
  form.addEventListener("change", () => {
    const d = new FormData(form);
    location.hash = hashOf({ mine: d.get("mine") === "on", state: d.get("state"),
      queue: d.get("queue").trim(), user: (d.get("user") || "").trim() });
  });
  form.addEventListener("submit", (ev) => ev.preventDefault());
  const body = h("div", {});
  replace(section, h("h2", {}, f.mine ? "My jobs" : "Jobs"), form, body);

  const anchor = {};  // where the newest `shown` matching jobs start (newestJobs)
  let pendingShown = false;
  const load = async () => {
    const q = new URLSearchParams();
    if (f.state) q.set("state", f.state);
    if (f.queue) q.set("queue", f.queue);
    const user = f.mine ? caller.user : f.user;
    if (user) q.set("user", user);
    try {
      const { jobs, more } = await newestJobs(q, shown, anchor);
      if (!alive) return;
      pendingShown = jobs.some((j) => j.state === "pending");
      replace(body,
        jobs.length ? table(["id", "name", "owner", "queue", "state", "GPUs", "submitted", "ran", "reason"],
          jobs.map(jobRow), { class: "jobs", id: "jobs-table" }) : h("p", { class: "hint" }, "No jobs match."),
        more ? h("button", { class: "link", onclick: () => { shown += PAGE; delete anchor.after; load(); } },
          `showing the newest ${shown}; more`) : null);
    } catch (e) {
      if (alive) replace(body, notice(e));
    }
  };
  load();
  const tick = setInterval(() => { if (pendingShown) load(); }, ESTIMATE_REFRESH_MS);
  return {
    every: 1000,
    refresh: (dirty) => { if (dirty.has("job") || dirty.has("all")) load(); },
    unmount: () => { alive = false; clearInterval(tick); },
  };
}

function placementText(p) {
  return p.map((x) => `${x.node}[${(x.gpus || []).join(",")}]`).join(" ");
}

function runsTable(job) {
  return table(["attempt", "state", "placement", "started", "ran", "exit codes", "reason"],
    (job.runs || []).slice().reverse().map((r) => h("tr", {},
      h("td", { class: "num" }, r.attempt),
      h("td", {}, h("span", { class: "badge " + r.state }, r.state)),
      h("td", {}, placementText(r.placement || [])),
      h("td", {}, whenAgo(r.started_at)),
      h("td", {}, r.started_at > 0 ? duration((r.ended_at || Date.now()) - r.started_at) : ""),
      // A replica that has not exited has no code yet (-1000 in the record).
      h("td", {}, (r.exit_codes || []).map((c) => (c <= -1000 ? "-" : c)).join(",")),
      h("td", {}, r.reason || ""))), { class: "runs" });
}

function eventsTable(job) {
  return table(["when", "what", "reason"],
    (job.events || []).map((e) => h("tr", {}, h("td", {}, whenAgo(e.at)), h("td", {}, e.what),
      h("td", {}, e.reason || ""))), { class: "events" });
}

// Follows one log stream of a job through GET /v1/jobs/ID/logs: reads from the last offset
// until it gets nothing, then again a second later while the job may still write.
function followLog(id, stream, replica, pre, status) {
  let offset = 0;
  let stopped = false;
  let timer = null;
  const step = async () => {
    if (stopped) return;
    try {
      const r = await getLog(id, offset, stream, replica);
      if (stopped) return;
      if (r.text) {
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(r.text);
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      }
      const moved = r.next !== offset;
      offset = r.next;
      if (moved) return step();
      if (FINISHED.has(r.state)) return replace(status, "ended (" + r.state + ")");
      replace(status, "following");
    } catch (e) {
      replace(status, e.status === 403 ? "not yours to read: " + e.message : "unavailable: " + e.message);
      if (e.status === 403 || e.status === 404) return;
    }
    timer = setTimeout(step, 1000);
  };
  step();
  return () => { stopped = true; clearTimeout(timer); };
}

export function jobView(section, m) {
  const id = Number(m[1]);
  let alive = true;
  const head = h("div", {});
  const runs = h("div", {});
  const usage = h("div", {});
  const events = h("div", {});
  const spec = h("pre", { class: "spec" });
  const pre = h("pre", { class: "log", id: "log" });
  const logStatus = h("span", { class: "hint", id: "log-status" });
  const stream = h("select", { id: "log-stream" }, h("option", {}, "stdout"), h("option", {}, "stderr"));
  const replica = h("input", { id: "log-replica", type: "number", min: 0, value: 0, size: 4 });
  let stopLog = null;
  const restartLog = () => {
    if (stopLog) stopLog();
    pre.replaceChildren();
    stopLog = followLog(id, stream.value, Number(replica.value) || 0, pre, logStatus);
  };
  stream.addEventListener("change", restartLog);
  replica.addEventListener("change", restartLog);
  replace(section, head,
    h("h3", {}, "Runs"), runs,
    h("h3", {}, "Use over time"), usage,
    h("h3", {}, "Log ", stream, " replica ", replica, " ", logStatus), pre,
    h("h3", {}, "Events"), events,
    h("details", {}, h("summary", {}, "Spec"), spec));

  const cancel = async (button) => {
    button.disabled = true;
    try {
      await postJson(`/v1/jobs/${id}/cancel`);
    } catch (e) {
      button.after(notice(e, "cancel this job"));
    }
  };
  let pending = false;
  const load = async () => {
    try {
      const { body } = await getJson(`/v1/jobs/${id}`);
      if (!alive) return;
      const j = body.job;
      pending = j.state === "pending";
      replace(head,
        h("h2", {}, `Job ${j.id}`, j.spec.name ? ` \u00b7 ${j.spec.name}` : "", " ",
          h("span", { class: "badge " + j.state, id: "job-state" }, j.state)),
        h("p", {}, `${j.owner} \u00b7 queue ${j.spec.queue} \u00b7 ${gpus(j)} GPUs \u00b7 submitted `,
          whenAgo(j.submitted_at),
          reason(j) ? h("span", { class: "reason" }, " \u00b7 " + reason(j)) : ""),
        FINISHED.has(j.state) ? null
          : h("button", { id: "cancel", onclick: (ev) => cancel(ev.target) }, "Cancel job"));
      replace(runs, (j.runs || []).length ? runsTable(j) : h("p", { class: "hint" }, "Not run yet."));
      replace(usage, usagePlots(j));
      replace(events, eventsTable(j));
      spec.textContent = JSON.stringify(j.spec, null, 2);
      if (!stopLog && (j.runs || []).length) restartLog();
    } catch (e) {
      if (alive) replace(head, h("h2", {}, `Job ${id}`), notice(e));
    }
  };
  load();
  const tick = setInterval(() => { if (pending) load(); }, ESTIMATE_REFRESH_MS);
  return {
    refresh: (dirty) => { if (dirty.has("job:" + id) || dirty.has("all")) load(); },
    unmount: () => { alive = false; clearInterval(tick); if (stopLog) stopLog(); },
  };
}
