// A job's usage series (docs/efficiency.md) drawn as a small SVG by hand: GPU utilisation and
// the cgroup's memory over time, one line per replica, on a shared time axis. The API gives
// each point as [seq, at, samples, gpu_util, gpu_util_max, gpu_mem, gpu_mem_max, cpu_milli,
// cpu_milli_max, mem, mem_max].
import { duration, h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 560;
const H = 120;
const PAD = { left: 44, right: 8, top: 8, bottom: 18 };

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined) el.setAttribute(k, String(v));
  }
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function bytesText(bytes) {
  if (bytes >= 1024 ** 3) return (bytes / 1024 ** 3).toFixed(1) + " GiB";
  if (bytes >= 1024 ** 2) return Math.round(bytes / 1024 ** 2) + " MiB";
  return Math.round(bytes / 1024) + " KiB";
}

// Every replica's points of every run, by replica: [{replica, points: [[at, value], ...]}].
function seriesOf(job, field) {
  const byReplica = new Map();
  for (const run of job.runs || []) {
    for (const u of run.usage || []) {
      const list = byReplica.get(u.replica) || [];
      for (const p of u.points) list.push([p[1], p[field]]);
      byReplica.set(u.replica, list);
    }
  }
  return [...byReplica.entries()].map(([replica, points]) => ({ replica, points }));
}

// Time-axis labels: the clock time at each end, or with `relative` how long ago ("now" at
// the right end when it is the latest point).
function timeLabel(t, relative) {
  if (!relative) return new Date(t).toLocaleTimeString();
  const ms = Date.now() - t;
  return ms < 60000 ? "now" : duration(ms) + " ago";
}

// One panel: a line per series (a job's replica, or a named cluster figure), `top` the value
// at the panel's top, labels on the left.
function panel(id, title, series, top, label, t0, t1, relative = false) {
  const x = (t) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v) => PAD.top + (1 - Math.min(v, top) / top) * (H - PAD.top - PAD.bottom);
  const svg = s("svg", { id, class: "plot", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" },
    s("title", {}, title),
    s("line", { class: "axis", x1: PAD.left, y1: y(0), x2: W - PAD.right, y2: y(0) }),
    s("line", { class: "grid", x1: PAD.left, y1: y(top), x2: W - PAD.right, y2: y(top) }),
    s("text", { class: "tick", x: PAD.left - 4, y: y(top) + 4, "text-anchor": "end" }, label(top)),
    s("text", { class: "tick", x: PAD.left - 4, y: y(0), "text-anchor": "end" }, label(0)),
    s("text", { class: "tick", x: W - PAD.right, y: H - 4, "text-anchor": "end" },
      timeLabel(t1, relative)),
    s("text", { class: "tick", x: PAD.left, y: H - 4 }, timeLabel(t0, relative)));
  for (const { replica, name, points } of series) {
    svg.append(s("polyline", {
      class: `series ${name ? "c-" + name : "r" + (replica % 4)}`,
      "data-replica": replica,
      "data-series": name,
      "data-points": points.length,
      points: points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    }));
  }
  return h("figure", { class: "plot-panel" }, h("figcaption", {}, title), svg);
}

// The job's plots, or a hint before its first sample.
export function usagePlots(job) {
  const util = seriesOf(job, 3);
  const mem = seriesOf(job, 9);
  const times = util.flatMap((r) => r.points.map((p) => p[0]));
  if (times.length === 0) return h("p", { class: "hint", id: "usage-none" }, "No usage sample yet.");
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const memTop = Math.max(1, ...mem.flatMap((r) => r.points.map((p) => p[1])));
  return h("div", { id: "usage" },
    panel("plot-gpu", "GPU utilisation (%)", util, 100, (v) => v + "%", t0, t1),
    panel("plot-mem", "Memory (cgroup)", mem, memTop, (v) => (v === 0 ? "0" : bytesText(v)), t0, t1));
}

// The cluster's series (GET /v1/cluster/series, docs/dashboard.md): each point is [at, gpus,
// gpus_used, gpu_util (null: none measured), pending, running]. Two panels over the same time:
// the share of the live GPUs that runs hold and their mean measured use (0-100%), and the jobs
// pending and running.
export function clusterPlots(series) {
  const pts = series.points || [];
  if (pts.length === 0) {
    return h("p", { class: "hint", id: "cluster-plots-none" },
      "No point yet: the head takes one every " + duration(series.step_ms) + ".");
  }
  const t0 = pts[0][0];
  const t1 = pts[pts.length - 1][0];
  const held = pts.map((p) => [p[0], p[1] > 0 ? (100 * p[2]) / p[1] : 0]);
  const util = pts.filter((p) => p[3] !== null).map((p) => [p[0], p[3]]);
  const pending = pts.map((p) => [p[0], p[4]]);
  const running = pts.map((p) => [p[0], p[5]]);
  const jobsTop = Math.max(1, ...pts.map((p) => Math.max(p[4], p[5])));
  const last = pts[pts.length - 1];
  const gpuTitle = `GPUs held (${last[2]} of ${last[1]}) and mean use` +
    (last[3] === null ? "" : ` (${last[3]}%)`);
  const legend = (items) => h("div", { class: "plot-legend" },
    items.map(([name, text]) => h("span", { class: "key c-" + name }, text)));
  return h("div", { id: "cluster-plots" },
    h("div", { class: "plot-group" },
      panel("plot-cluster-gpus", gpuTitle,
        [{ name: "held", points: held }, { name: "util", points: util }], 100, (v) => v + "%", t0, t1, true),
      legend([["held", "held"], ["util", "mean use"]])),
    h("div", { class: "plot-group" },
      panel("plot-cluster-jobs", `Jobs pending (${last[4]}) and running (${last[5]})`,
        [{ name: "pending", points: pending }, { name: "running", points: running }], jobsTop,
        (v) => String(v), t0, t1, true),
      legend([["pending", "pending"], ["running", "running"]])));
}
