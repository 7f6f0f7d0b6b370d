// Each GPU of each node with what holds it (from the active jobs' current runs) and its last
// measured use (from the node's sync): what the overview counts and the heat map draws.
import { getJson } from "./api.js";

export const ACTIVE = "pending,scheduled,running";

// The nodes and the active jobs, fetched together. Resolves to {nodes, jobs, revision}.
export async function loadCluster() {
  const [n, j] = await Promise.all([
    getJson("/v1/nodes"),
    getJson(`/v1/jobs?state=${ACTIVE}&limit=100000`),
  ]);
  return { nodes: n.body.nodes, jobs: j.body.jobs, revision: Math.min(n.revision, j.revision) };
}

// The run a job holds GPUs with now: its latest run, if placed and not ended.
export function currentRun(job) {
  const run = job.runs && job.runs[job.runs.length - 1];
  return run && run.placement && run.placement.length && !(run.ended_at > 0) ? run : null;
}

const USABLE = new Set(["ready"]);
const DOWN = new Set(["down", "unreachable"]);

// [{node, state, gpus: [{index, model, util (null: unmeasured), memUsed, memTotal,
//   jobs: [id...], shares: [{job, owner, milli, memory_mb, isolation}], sharedMilli,
//   health: "ok"|"warn"|"critical", healthReason, drain: {source, reason, since} or null,
//   status: "allocated"|"free"|"unavailable"|"down"}]}]
export function gpuMap(nodes, jobs) {
  const holders = new Map();  // "node/index" -> [job ids]
  for (const job of jobs) {
    const run = currentRun(job);
    if (!run) continue;
    for (const p of run.placement) {
      for (const g of p.gpus || []) {
        const key = p.node + "/" + g;
        if (!holders.has(key)) holders.set(key, []);
        holders.get(key).push(job.id);
      }
    }
  }
  return nodes.map((n) => ({
    node: n.name,
    state: n.state,
    gpus: (n.gpus || []).map((g) => {
      const held = holders.get(n.name + "/" + g.index) || [];
      let status = held.length ? "allocated" : USABLE.has(n.state) ? "free" : "unavailable";
      // A drained GPU (by an admin, or by its health checks) takes no new runs.
      if (g.drain && !held.length) status = "unavailable";
      if (DOWN.has(n.state) || g.healthy === false) status = "down";
      return {
        index: g.index,
        model: g.model || "",
        util: typeof g.utilization_percent === "number" ? g.utilization_percent : null,
        memUsed: g.memory_used_bytes,
        memTotal: (g.memory_mb || 0) * 1024 * 1024,
        jobs: held,
        shares: g.shares || [],
        sharedMilli: g.shared_milli || 0,
        health: g.health || "ok",
        healthReason: g.health_reason || "",
        drain: g.drain || null,
        status,
      };
    }),
  }));
}

// Counts by status, plus allocated GPUs measured under `idleBelow` percent.
export function gpuCounts(map, idleBelow) {
  const c = { allocated: 0, free: 0, unavailable: 0, down: 0, allocatedIdle: 0, total: 0 };
  let utilSum = 0;
  let measured = 0;
  for (const n of map) {
    for (const g of n.gpus) {
      c.total++;
      c[g.status]++;
      if (g.util !== null) {
        utilSum += g.util;
        measured++;
      }
      if (g.status === "allocated" && g.util !== null && g.util < idleBelow) c.allocatedIdle++;
    }
  }
  c.meanUtil = measured ? utilSum / measured : null;
  return c;
}
