// "Datasets" (docs/datasets.md): each registered dataset version with its size, files, state,
// users and the nodes whose cache holds it; each node's cache as the datasets it holds add up;
// and each source's measured stage-in rate. Nodes report what their caches hold at each sync,
// which no event announces: the view reads on a timer, and after dataset and job changes.
import { getJson } from "./api.js";
import { h, notice, replace, table, whenAgo } from "./dom.js";

const REFRESH_MS = 3000;

export function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u + 1 < units.length) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

// Each node's cache as the registered datasets it holds add up (whole copies only: a node
// reports a dataset once its copy is complete), by node name.
export function cacheByNode(datasets) {
  const nodes = new Map();
  for (const d of datasets) {
    for (const n of d.nodes) {
      const c = nodes.get(n) || { node: n, bytes: 0, datasets: [] };
      c.bytes += d.bytes;
      c.datasets.push(`${d.name}@${d.version}`);
      nodes.set(n, c);
    }
  }
  return [...nodes.values()].sort((a, b) => a.node.localeCompare(b.node));
}

function datasetRow(d) {
  return h("tr", { "data-dataset": `${d.name}@${d.version}` },
    h("td", {}, d.name),
    h("td", {}, d.version),
    h("td", { class: "num size" }, bytes(d.bytes)),
    h("td", { class: "num files" }, d.files),
    h("td", {}, h("span", { class: "badge " + (d.state === "in use" ? "running" : "pending") }, d.state)),
    h("td", { class: "num users" }, d.users.length),
    h("td", { class: "holders" }, d.nodes.length ? d.nodes.map((n) => `${n} (${bytes(d.bytes)})`).join(", ") : "-"),
    h("td", { class: "source" }, d.source));
}

function cacheRow(c) {
  return h("tr", { "data-node": c.node },
    h("td", {}, c.node),
    h("td", { class: "num cached" }, bytes(c.bytes)),
    h("td", { class: "held" }, c.datasets.join(", ")));
}

function sourceRow(s) {
  return h("tr", { "data-source": s.source },
    h("td", {}, s.source),
    h("td", { class: "num rate" }, `${bytes(s.bytes_per_second)}/s`),
    h("td", {}, s.measured_at ? whenAgo(s.measured_at) : "-"),
    h("td", { class: "num from" }, `${bytes(s.bytes)} in ${s.ms} ms`));
}

function render(section, body) {
  const caches = cacheByNode(body.datasets);
  replace(section,
    h("h2", {}, "Datasets"),
    h("p", { class: "hint" }, "Registered with ", h("code", {}, "corral datasets add"),
      "; jobs declare them with ", h("code", {}, "--dataset"), " and read them from their node's cache."),
    body.datasets.length
      ? table(["name", "version", "size", "files", "state", "jobs", "nodes holding it", "source"],
        body.datasets.map(datasetRow), { class: "datasets", id: "datasets-table" })
      : h("p", { class: "hint" }, "No datasets."),
    h("h3", {}, "Node caches"),
    caches.length
      ? table(["node", "cached", "datasets"], caches.map(cacheRow), { class: "caches", id: "caches-table" })
      : h("p", { class: "hint" }, "No node holds a dataset."),
    h("h3", {}, "Sources"),
    body.sources && body.sources.length
      ? table(["source", "measured rate", "when", "from"], body.sources.map(sourceRow), { class: "sources", id: "sources-table" })
      : h("p", { class: "hint" }, "No stage-in measured yet."));
}

export function datasetsView(section) {
  const load = async () => {
    try {
      const { body } = await getJson("/v1/datasets");
      if (load.alive !== false) render(section, body);
    } catch (e) {
      if (load.alive !== false) replace(section, h("h2", {}, "Datasets"), notice(e));
    }
  };
  load();
  const tick = setInterval(load, REFRESH_MS);
  return {
    every: 1000,
    refresh: (dirty) => { if (dirty.has("dataset") || dirty.has("job") || dirty.has("all")) load(); },
    unmount: () => { clearInterval(tick); load.alive = false; },
  };
}
