// Nodes and their GPUs as a heat map: each cell is one GPU, its colour the measured use and
// its frame whether a run holds it, so "allocated but idle" (a framed dark cell) stands out.
import { ago, h, notice, replace } from "./dom.js";
import { gpuMap, loadCluster } from "./gpus.js";

// Measured use is an observation the agents send with each sync, not a change, so the event
// stream does not report it: the map reads it again this often while it is shown.
const UTIL_REFRESH_MS = 5000;

function heat(util) {
  if (util === null) return "";
  // Dark blue-grey (0%) to orange-red (100%).
  const t = Math.max(0, Math.min(100, util)) / 100;
  return `hsl(${220 - 205 * t}, ${25 + 60 * t}%, ${22 + 30 * t}%)`;
}

function gib(bytes) {
  return bytes > 0 ? (bytes / 2 ** 30).toFixed(1) + " GiB" : "0";
}

// "shared 750/1000 milli: job 7 (ana) 500 memory, job 8 (bob) 250 memory"
function sharesText(g) {
  if (!g.shares.length) return "";
  return `\nshared ${g.sharedMilli}/1000 milli-GPUs: ` + g.shares.map((s) =>
    `job ${s.job} (${s.owner}) ${s.milli} ${s.isolation || "memory"}`).join(", ");
}

// "health warn: 2 retired pages" / "drained (health): Xid 79 ..."
function healthText(g) {
  let t = g.health !== "ok" ? `\nhealth ${g.health}` + (g.healthReason ? `: ${g.healthReason}` : "") : "";
  if (g.drain) t += `\ndrained (${g.drain.source})` + (g.drain.reason ? `: ${g.drain.reason}` : "");
  return t;
}

function cell(node, g) {
  const c = h("a", {
    class: `gpu ${g.status}` + (g.util === null ? " unmeasured" : "") +
      (g.shares.length ? " shared" : "") + ` health-${g.health}` + (g.drain ? " drained" : ""),
    "data-node": node, "data-gpu": g.index,
    href: g.jobs.length ? `#/jobs/${g.jobs[0]}` : undefined,
    title: `${node} GPU ${g.index} ${g.model}\n${g.status}` +
      (g.jobs.length ? ` to job ${g.jobs.join(", ")}` : "") +
      `\nuse ${g.util === null ? "not measured" : g.util + "%"}` +
      (g.memUsed !== undefined ? `, memory ${gib(g.memUsed)} of ${gib(g.memTotal)}` : "") +
      sharesText(g) + healthText(g),
  }, h("span", { class: "idx" }, g.index), h("span", { class: "pct" }, g.util === null ? "?" : g.util + "%"),
  g.shares.length ? h("span", { class: "share" }, `${g.sharedMilli / 10}%\u00d7${g.shares.length}`) : false);
  c.style.background = heat(g.util);
  return c;
}

// An admin reservation the node is in now: "maint" for a maintenance window (no job runs), else
// "reserved" (only its users' and queues' jobs); the name in the tooltip, as `corral nodes`.
function reservationBadge(node) {
  if (!node.reservation) return false;
  const maint = node.maintenance === true;
  return h("span", {
    class: "badge " + (maint ? "node-maint" : "node-reserved"),
    title: `${maint ? "maintenance window" : "reservation"} ${node.reservation}`,
  }, maint ? "maint" : "reserved");
}

export function nodesView(section) {
  let alive = true;
  const load = async () => {
    try {
      const { nodes, jobs } = await loadCluster();
      if (!alive) return;
      const byName = new Map(nodes.map((n) => [n.name, n]));
      const rows = gpuMap(nodes, jobs).map((n) => {
        const node = byName.get(n.node);
        return h("div", { class: "node-row", "data-node": n.node },
          h("div", { class: "node-name" }, h("strong", {}, n.node),
            h("span", { class: "badge node-" + n.state }, n.state),
            reservationBadge(node),
            h("span", { class: "hint" }, ` heard ${ago(node.last_heartbeat)}`)),
          h("div", { class: "gpus" }, n.gpus.length ? n.gpus.map((g) => cell(n.node, g))
            : h("span", { class: "hint" }, "no GPUs")));
      });
      replace(section,
        h("h2", {}, "Nodes"),
        h("div", { class: "legend" },
          h("span", { class: "gpu allocated sample" }, " "), " allocated ",
          h("span", { class: "gpu free sample" }, " "), " free ",
          h("span", { class: "gpu down sample" }, " "), " down or drained; colour: measured use, ",
          h("span", { class: "scale" }), " 0 \u2192 100%"),
        rows.length ? h("div", { class: "heatmap", id: "heatmap" }, rows)
          : h("p", { class: "hint" }, "No nodes have joined."));
      for (const s of section.querySelectorAll(".scale")) {
        s.style.background = `linear-gradient(to right, ${heat(0)}, ${heat(50)}, ${heat(100)})`;
      }
    } catch (e) {
      if (alive) replace(section, h("h2", {}, "Nodes"), notice(e));
    }
  };
  load();
  const tick = setInterval(load, UTIL_REFRESH_MS);
  return { every: 2000, refresh: load, unmount: () => { alive = false; clearInterval(tick); } };
}
