// "Sessions": the signed-in user's interactive sessions (corral run, srun --pty, salloc,
// corral notebook) that hold an allocation now, each notebook with an "open" link.
import { getJson, session } from "./api.js";
import { ago, h, notice, replace, table } from "./dom.js";
import { caller } from "./state.js";

// Opens a notebook: the head swaps the token (sent as a header, never in a URL) for a cookie
// scoped to /s/JOB/, then the notebook's page opens in a new tab with that cookie.
async function openNotebook(id, status) {
  const tab = window.open("about:blank", "_blank");
  try {
    const r = await fetch(`/s/${id}/`, {
      method: "POST",
      headers: { Authorization: "Bearer " + session.token() },
      credentials: "same-origin",
    });
    if (r.status !== 204) throw new Error(`${r.status}: ${(await r.text()).slice(0, 200)}`);
    if (tab) tab.location = `/s/${id}/tree`;
    else location.href = `/s/${id}/tree`;
  } catch (e) {
    if (tab) tab.close();
    replace(status, "cannot open: " + e.message);
  }
}

function kindOf(j) {
  return j.spec.notebook ? "notebook" : "terminal";
}

function sessionRow(j) {
  const status = h("span", { class: "hint" });
  const ready = (j.events || []).some((e) => e.what === "notebook ready");
  const run = j.runs && j.runs[j.runs.length - 1];
  return h("tr", { "data-session": j.id },
    h("td", { class: "num" }, h("a", { href: `#/jobs/${j.id}` }, j.id)),
    h("td", {}, j.spec.name || ""),
    h("td", {}, kindOf(j)),
    h("td", {}, (run && run.placement || []).map((p) => `${p.node}[${(p.gpus || []).join(",")}]`).join(" ")),
    h("td", {}, run && run.started_at > 0 ? ago(run.started_at) : ""),
    h("td", {}, j.spec.notebook
      ? (ready ? h("button", { class: "link open-session", onclick: () => openNotebook(j.id, status) }, "open")
        : "starting")
      : h("code", {}, `corral exec ${j.id} --pty -- bash`), " ", status));
}

export function sessionsView(section) {
  let alive = true;
  const body = h("div", {});
  replace(section, h("h2", {}, "My sessions"), body);
  const load = async () => {
    if (!caller.user) {
      replace(body, h("p", { class: "hint" }, "Sign in with your name to see your sessions."));
      return;
    }
    try {
      const q = new URLSearchParams({ user: caller.user, state: "running" });
      const { body: b } = await getJson(`/v1/jobs?${q}`);
      if (!alive) return;
      const mine = (b.jobs || []).filter((j) => j.spec.kind === "interactive");
      replace(body, mine.length
        ? table(["job", "name", "kind", "where", "started", ""], mine.map(sessionRow),
          { class: "sessions", id: "sessions-table" })
        : h("p", { class: "hint" }, "No sessions. Start one with corral notebook or corral run --pty."));
    } catch (e) {
      if (alive) replace(body, notice(e));
    }
  };
  load();
  return {
    every: 2000,
    refresh: (dirty) => { if (dirty.has("job") || dirty.has("all")) load(); },
    unmount: () => { alive = false; },
  };
}
