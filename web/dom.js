// Small DOM helpers. Every piece of data goes in as text (textContent), never as markup, so
// a job name or a log line cannot inject anything into the page.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
}

export function table(headers, rows, attrs) {
  return h(
    "table",
    attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows),
  );
}

// "3s", "4m12s", "2h05m", "3d4h".
export function duration(ms) {
  if (!(ms >= 0)) return "-";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
  return Math.floor(s / 86400) + "d" + Math.floor((s % 86400) / 3600) + "h";
}

export function ago(at) {
  return at > 0 ? duration(Date.now() - at) + " ago" : "-";
}

export function when(at) {
  return at > 0 ? new Date(at).toLocaleString() : "-";
}

// How long ago, with the clock time in the tooltip: "4m12s ago" (hover: "29/11/2026, 14:03:22").
export function whenAgo(at) {
  return at > 0 ? h("time", { datetime: new Date(at).toISOString(), title: when(at) }, ago(at)) : "-";
}

// A notice in place of a view: what was refused or failed, in the API's own words.
export function notice(e, what = "see this") {
  if (e && e.status === 403) {
    return h("p", { class: "notice denied" }, `Your token may not ${what}: `, e.message);
  }
  return h("p", { class: "notice error" }, "Could not load: ", (e && e.message) || String(e));
}
