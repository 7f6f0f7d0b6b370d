// "Cluster at a glance" and "Queues".
import { getJson } from "./api.js";
import { h, notice, replace, table } from "./dom.js";
import { gpuCounts, gpuMap, loadCluster } from "./gpus.js";
import { clusterPlots } from "./plot.js";
import { startsPerMinute } from "./state.js";

// A GPU allocated to a run but used less than this (percent) is counted as wasted.
const IDLE_BELOW = 5;

function stat(id, label, value, cls) {
  return h("div", { class: "stat " + (cls || ""), id }, h("div", { class: "value" }, value),
    h("div", { class: "label" }, label));
}

function pendingReasons(jobs) {
  const byQueue = new Map();  // queue -> Map(reason -> count)
  for (const j of jobs) {
    if (j.state !== "pending") continue;
    const q = j.spec.queue;
    if (!byQueue.has(q)) byQueue.set(q, new Map());
    const reasons = byQueue.get(q);
    const why = j.pending_reason || "waiting for the scheduler";
    reasons.set(why, (reasons.get(why) || 0) + 1);
  }
  return byQueue;
}

function reasonList(reasons) {
  if (!reasons || !reasons.size) return "";
  const sorted = [...reasons.entries()].sort((a, b) => b[1] - a[1]);
  return h("ul", { class: "reasons" }, sorted.map(([why, n]) => h("li", {}, `${n} \u00d7 ${why}`)));
}

function queueTable(queues, jobs) {
  const reasons = pendingReasons(jobs);
  const rows = queues.map((q) => {
    const borrowing = Math.max(0, q.used_gpus - q.quota_gpus);
    return h("tr", { "data-queue": q.name },
      h("td", {}, q.name),
      h("td", { class: "num" }, q.quota_gpus),
      h("td", { class: "num" }, q.limit_gpus < 0 ? "none" : q.limit_gpus),
      h("td", { class: "num" }, q.weight),
      h("td", { class: "used" }, h("div", { class: "bar" }, usageBar(q.used_gpus, q.quota_gpus)), ` ${q.used_gpus}`),
      h("td", { class: "num " + (borrowing ? "warn" : "") }, borrowing || ""),
      h("td", { class: "num" }, h("a", { href: `#/jobs?queue=${encodeURIComponent(q.name)}&state=running` }, q.running)),
      h("td", { class: "num" }, h("a", { href: `#/jobs?queue=${encodeURIComponent(q.name)}&state=pending` }, q.pending)),
      h("td", {}, reasonList(reasons.get(q.name))));
  });
  return table(["queue", "quota", "limit", "weight", "GPUs used", "borrowing", "running", "pending",
    "why pending"], rows, { class: "queues" });
}

// Use against quota: the part within quota, and what is borrowed beyond it.
function usageBar(used, quota) {
  const scale = Math.max(used, quota, 1);
  const within = h("span", { class: "within" });
  within.style.width = (100 * Math.min(used, quota)) / scale + "%";
  const over = h("span", { class: "over" });
  over.style.width = (100 * Math.max(0, used - quota)) / scale + "%";
  const mark = h("span", { class: "quota" });
  mark.style.left = (100 * quota) / scale + "%";
  return [within, over, mark];
}

// The cluster's series; a head that keeps none (or refuses it) leaves the plots out.
async function loadSeries() {
  try {
    return (await getJson("/v1/cluster/series")).body;
  } catch (_) {
    return null;
  }
}

export function clusterView(section) {
  let alive = true;
  let tick = null;
  let every = 0;
  const load = async () => {
    try {
      const [{ nodes, jobs }, q, series] =
        await Promise.all([loadCluster(), getJson("/v1/queues"), loadSeries()]);
      if (!alive) return;
      // Re-read as often as the head adds a point (at most every second), at least every 30 s
      // (the start rate falls as time passes even when nothing happens).
      const want = Math.min(30000, Math.max(1000, (series && series.step_ms) || 30000));
      if (want !== every) {
        clearInterval(tick);
        every = want;
        tick = setInterval(load, every);
      }
      const map = gpuMap(nodes, jobs);
      const c = gpuCounts(map, IDLE_BELOW);
      const pending = jobs.filter((j) => j.state === "pending").length;
      const running = jobs.filter((j) => j.state === "running").length;
      const ready = nodes.filter((n) => n.state === "ready").length;
      replace(section,
        h("h2", {}, "Cluster"),
        h("div", { class: "stats" },
          stat("gpus-busy", "GPUs allocated", c.allocated, "busy"),
          stat("gpus-idle", "GPUs free", c.free, "free"),
          stat("gpus-down", "GPUs down or drained", c.down + c.unavailable, c.down ? "bad" : ""),
          stat("gpus-wasted", `allocated, under ${IDLE_BELOW}% use`, c.allocatedIdle, c.allocatedIdle ? "warn" : ""),
          stat("gpu-util", "mean GPU use", c.meanUtil === null ? "-" : Math.round(c.meanUtil) + "%"),
          stat("queue-depth", "jobs pending", pending),
          stat("jobs-running", "jobs running", running),
          stat("start-rate", "jobs started / min (5 min)", startsPerMinute(jobs, 5).toFixed(1)),
          stat("nodes-ready", "nodes ready", `${ready} / ${nodes.length}`)),
        series ? [h("h3", {}, "Over the last hours"), clusterPlots(series)] : null,
        h("h3", {}, "Queues"),
        queueTable(q.body.queues, jobs));
    } catch (e) {
      if (alive) replace(section, h("h2", {}, "Cluster"), notice(e));
    }
  };
  load();
  // It reads every active job and node: at most every 2 s however fast jobs flow.
  return { every: 2000, refresh: load, unmount: () => { alive = false; clearInterval(tick); } };
}

export function queuesView(section) {
  let alive = true;
  const load = async () => {
    try {
      const [q, j] = await Promise.all([getJson("/v1/queues"), getJson("/v1/jobs?state=pending&limit=100000")]);
      if (!alive) return;
      replace(section,
        h("h2", {}, "Queues"),
        h("p", { class: "hint" }, "Quota: GPUs a queue is guaranteed; beyond it a queue borrows idle GPUs, " +
          "up to its limit, and borrowed GPUs may be reclaimed by preemption."),
        queueTable(q.body.queues, j.body.jobs));
    } catch (e) {
      if (alive) replace(section, h("h2", {}, "Queues"), notice(e));
    }
  };
  load();
  return { every: 2000, refresh: load, unmount: () => { alive = false; } };
}
