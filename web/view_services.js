// "Services" (docs/services.md): each service the caller may call, with its replicas ready
// against desired, its traffic through the head over the last minute (rate, 5xx share, p50 and
// p99 latency), the autoscaler's latest decision and any note; and one service's page with
// its replicas and recent events.
import { getJson } from "./api.js";
import { h, notice, replace, table, whenAgo } from "./dom.js";

// The traffic is measured by the head's proxy and announced by no event: read on a timer.
const TRAFFIC_REFRESH_MS = 2000;

export function rate(t) {
  return t.requests_per_s.toFixed(1);
}

export function share(t) {
  return t.requests ? (100 * t.error_share).toFixed(1) + "%" : "-";
}

export function ms(v) {
  if (v === null || v === undefined) return "-";
  return v < 10 ? v.toFixed(1) + " ms" : Math.round(v) + " ms";
}

function serving(r) {
  return r.running && r.ready && !r.draining;
}

export function replicas(s) {
  const ready = s.replicas.filter(serving).length;
  const range = s.min_replicas === s.max_replicas ? "" : ` [${s.min_replicas}\u2013${s.max_replicas}]`;
  return `${ready}/${s.desired}${range}`;
}

// An update in progress, a crash loop's backoff or why replicas are missing: what needs a look.
function note(s) {
  const parts = [];
  if (s.rollout) parts.push(`updating to version ${s.version}`);
  if (s.removing) parts.push("being removed");
  if (s.note) parts.push(s.note);
  return parts.join(" \u00b7 ");
}

function lastScale(s) {
  const e = s.last_scale;
  if (!e) return "";
  return [whenAgo(e.at), ` (${e.cause}) `, e.text];
}

function serviceRow(s) {
  const t = s.traffic;
  return h("tr", { "data-service": s.name },
    h("td", {}, h("a", { href: `#/services/${encodeURIComponent(s.name)}` }, s.name)),
    h("td", {}, s.owner),
    h("td", { class: "num" }, s.version),
    h("td", { class: "num replicas" }, replicas(s)),
    h("td", { class: "num rate" }, rate(t)),
    h("td", { class: "num errors" + (t.errors_5xx ? " warn" : "") }, share(t)),
    h("td", { class: "num p50" }, ms(t.p50_ms)),
    h("td", { class: "num p99" }, ms(t.p99_ms)),
    h("td", { class: "scale" }, lastScale(s)),
    h("td", { class: "note reason" }, note(s)));
}

// A view that reads on a timer (the traffic) and after changes of services or jobs.
function polled(load) {
  load();
  const tick = setInterval(load, TRAFFIC_REFRESH_MS);
  return {
    every: 1000,
    refresh: (dirty) => { if (dirty.has("service") || dirty.has("job") || dirty.has("all")) load(); },
    unmount: () => { clearInterval(tick); load.alive = false; },
  };
}

export function servicesView(section) {
  const load = async () => {
    try {
      const { body } = await getJson("/v1/services");
      if (load.alive === false) return;
      replace(section,
        h("h2", {}, "Services"),
        h("p", { class: "hint" }, "Traffic through the head's proxy over the last minute (",
          h("code", {}, "/v/NAME/"), "); replicas ready / desired [min\u2013max]."),
        body.services.length
          ? table(["service", "owner", "version", "replicas", "req/s", "5xx", "p50", "p99",
            "last scale", "note"], body.services.map(serviceRow), { class: "services", id: "services-table" })
          : h("p", { class: "hint" }, "No services. Start one with corral serve."));
    } catch (e) {
      if (load.alive !== false) replace(section, h("h2", {}, "Services"), notice(e));
    }
  };
  return polled(load);
}

function stat(id, label, value) {
  return h("div", { class: "stat", id }, h("div", { class: "value" }, value), h("div", { class: "label" }, label));
}

function replicaRow(r) {
  const state = !r.running ? r.state : r.draining ? "draining" : r.ready ? "ready" : "starting";
  return h("tr", { "data-replica": r.job },
    h("td", { class: "num" }, h("a", { href: `#/jobs/${r.job}` }, r.job)),
    h("td", {}, r.node || ""),
    h("td", {}, r.address || ""),
    h("td", { class: "num" }, r.version),
    h("td", {}, h("span", { class: "badge " + (state === "ready" ? "running" : state === "draining" ? "cancelled" : "pending") }, state)));
}

function eventRow(e) {
  return h("tr", { "data-rev": e.rev },
    h("td", {}, whenAgo(e.at)),
    h("td", {}, e.type),
    h("td", {}, e.text));
}

export function serviceView(section, match) {
  const name = decodeURIComponent(match[1]);
  const load = async () => {
    try {
      const { body } = await getJson(`/v1/services/${encodeURIComponent(name)}`);
      if (load.alive === false) return;
      const s = body.service;
      const t = s.traffic;
      replace(section,
        h("h2", {}, "Service ", s.name, " ", h("span", { class: "hint" }, `${s.owner} \u00b7 version ${s.version} \u00b7 ${s.path}`)),
        h("div", { class: "stats" },
          stat("svc-replicas", "replicas ready / desired", replicas(s)),
          stat("svc-rate", "requests / s (last minute)", rate(t)),
          stat("svc-errors", "answered 5xx", share(t)),
          stat("svc-p50", "p50 latency", ms(t.p50_ms)),
          stat("svc-p99", "p99 latency", ms(t.p99_ms)),
          stat("svc-inflight", "in flight now", t.in_flight)),
        note(s) ? h("p", { class: "notice denied", id: "svc-note" }, note(s)) : null,
        s.last_rollout ? h("p", { class: "hint" }, "Last update: ", s.last_rollout) : null,
        h("h3", {}, "Replicas"),
        table(["job", "node", "address", "version", "state"], s.replicas.map(replicaRow), { class: "replicas", id: "replicas-table" }),
        h("h3", {}, "Recent events"),
        s.events.length
          ? table(["when", "change", "what"], [...s.events].reverse().map(eventRow), { class: "events", id: "service-events" })
          : h("p", { class: "hint" }, "None kept."));
    } catch (e) {
      if (load.alive !== false) replace(section, h("h2", {}, "Service ", name), notice(e));
    }
  };
  return polled(load);
}
