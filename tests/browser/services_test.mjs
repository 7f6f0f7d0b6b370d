// Drives the dashboard's services views in headless Chromium against a real cluster that
// tests/browser_test.cc started with a service "echo" of two ready replicas (a small Python
// server: /work answers after 20 ms, /fail answers 500), scaled from 1 to 2 by hand. Sends a
// known load through the head (/v/echo/), then checks that the API's service JSON counts it
// (requests, 5xx) and that the Services page and the service's own page show what the API
// gives: replicas ready/desired with the range, requests/s, 5xx share, p50 and p99, the last
// scale, the replicas (node, version, state) and the recent events. Writes screenshots to
// $SCREENSHOT_DIR.
//
// Environment: CORRAL_ADDR, CORRAL_TOKEN (admin), WANT_NODE (the replicas' node), CHROMIUM,
// SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const token = env("CORRAL_TOKEN");
const shots = env("SCREENSHOT_DIR");
const node = env("WANT_NODE");
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 20000 };
const REQUESTS = 200;  // every 10th to /fail
const WANT_5XX = REQUESTS / 10;

async function api(path) {
  const r = await fetch(addr + path, { headers: { Authorization: "Bearer " + token } });
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// `REQUESTS` calls through the head, 4 at a time; the codes answered.
async function load() {
  const codes = new Map();
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const i = next++;
      const r = await fetch(`${addr}/v/echo/${i % 10 === 9 ? "fail" : "work"}?i=${i}`,
        { headers: { Authorization: "Bearer " + token } });
      await r.arrayBuffer();
      codes.set(r.status, (codes.get(r.status) || 0) + 1);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return codes;
}

// The page's formatting (web/view_services.js), applied to the API's figures.
const ms = (v) => (v === null ? "-" : v < 10 ? v.toFixed(1) + " ms" : Math.round(v) + " ms");
const share = (t) => (t.requests ? (100 * t.error_share).toFixed(1) + "%" : "-");
const serving = (r) => r.running && r.ready && !r.draining;

async function cells(page, selector) {
  return page.$$eval(selector, (tds) => tds.map((td) => td.textContent));
}

// The page's rate lies between what the API gives now and what it gave when the page last read
// it (every 2 s): with no new request the count stays and the rate falls as the window grows.
async function checkRate(page, selector, path) {
  const before = (await api(path)).service.traffic;
  const shown = Number(await page.$eval(selector, (el) => el.textContent));
  const after = (await api(path)).service.traffic;
  const low = after.requests / after.window_s;
  const high = before.requests / Math.max(1, before.window_s - 3);
  if (shown < low - 0.051 || shown > high + 0.051) {
    throw new Error(`the page shows ${shown} requests/s, the API ${JSON.stringify(before)} then ${JSON.stringify(after)}`);
  }
  return shown;
}

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  step(`${REQUESTS} requests through the head, every 10th answered 500`);
  const codes = await load();
  if (codes.get(200) !== REQUESTS - WANT_5XX || codes.get(500) !== WANT_5XX) {
    throw new Error("the load got " + JSON.stringify([...codes]));
  }

  step("the API counts them: requests, 5xx, latency quantiles");
  let s = (await api("/v1/services/echo")).service;
  const t = s.traffic;
  console.log("traffic: " + JSON.stringify(t));
  if (t.requests !== REQUESTS || t.errors_5xx !== WANT_5XX) throw new Error("traffic: " + JSON.stringify(t));
  if (Math.abs(t.error_share - 0.1) > 1e-9) throw new Error("error share " + t.error_share);
  if (!(t.p50_ms >= 20 && t.p99_ms >= t.p50_ms)) throw new Error(`p50 ${t.p50_ms}, p99 ${t.p99_ms}: /work takes 20 ms`);
  if (!(t.requests_per_s > 0)) throw new Error("rate " + t.requests_per_s);
  if (!s.last_scale || s.last_scale.cause !== "hand" || !s.last_scale.text.startsWith("scaled 1 \u2192 2")) {
    throw new Error("last_scale: " + JSON.stringify(s.last_scale));
  }

  step("sign in, open Services: the row shows what the API gives");
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", token);
  await page.type("#signin-user", "admin");
  await page.click("#signin-button");
  await page.waitForSelector("nav a[href='#/services']", WAIT);
  await page.click("nav a[href='#/services']");
  await page.waitForSelector("tr[data-service=echo]", WAIT);
  const list = (await api("/v1/services")).services.find((x) => x.name === "echo");
  const row = await cells(page, "tr[data-service=echo] td");
  const want = {
    1: list.owner,
    2: String(list.version),
    3: `${list.replicas.filter(serving).length}/${list.desired} [${list.min_replicas}\u2013${list.max_replicas}]`,
    5: share(list.traffic),
    6: ms(list.traffic.p50_ms),
    7: ms(list.traffic.p99_ms),
  };
  for (const [i, text] of Object.entries(want)) {
    if (row[i] !== text) throw new Error(`column ${i} reads ${JSON.stringify(row[i])}, want ${JSON.stringify(text)}: ${JSON.stringify(row)}`);
  }
  if (want[3] !== "2/2 [1\u20133]") throw new Error("replicas " + want[3]);
  if (want[5] !== "10.0%") throw new Error("5xx " + want[5]);
  if (!row[8].includes("(hand)") || !row[8].includes(list.last_scale.text)) throw new Error("last scale: " + row[8]);
  const rate = await checkRate(page, "tr[data-service=echo] td.rate", "/v1/services/echo");
  console.log(`services row: ${JSON.stringify(row)} (rate ${rate})`);
  await page.screenshot({ path: `${shots}/dashboard-services.png` });

  step("the service's page: figures, replicas with node, version and state, the events");
  await page.click("tr[data-service=echo] a");
  await page.waitForSelector("#replicas-table tbody tr", WAIT);
  await page.waitForSelector("#service-events tbody tr", WAIT);
  s = (await api("/v1/services/echo")).service;
  const stats = await page.$$eval(".stat .value", (v) => Object.fromEntries(v.map((x) => [x.parentElement.id, x.textContent])));
  for (const [id, text] of [["svc-replicas", "2/2 [1\u20133]"], ["svc-errors", share(s.traffic)],
    ["svc-p50", ms(s.traffic.p50_ms)], ["svc-p99", ms(s.traffic.p99_ms)]]) {
    if (stats[id] !== text) throw new Error(`${id} reads ${stats[id]}, want ${text}`);
  }
  await checkRate(page, "#svc-rate .value", "/v1/services/echo");
  const replicas = await page.$$eval("#replicas-table tbody tr", (rows) =>
    rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent)));
  const wantReplicas = s.replicas.map((r) => [String(r.job), r.node, r.address, String(r.version), "ready"]);
  if (JSON.stringify(replicas) !== JSON.stringify(wantReplicas)) {
    throw new Error(`replicas ${JSON.stringify(replicas)}, want ${JSON.stringify(wantReplicas)}`);
  }
  if (!replicas.every((r) => r[1] === node)) throw new Error("replicas' node: " + JSON.stringify(replicas));
  const events = await page.$$eval("#service-events tbody tr", (rows) =>
    rows.map((r) => [...r.querySelectorAll("td")].slice(1).map((td) => td.textContent)));
  const wantEvents = [...s.events].reverse().map((e) => [e.type, e.text]);
  if (JSON.stringify(events) !== JSON.stringify(wantEvents)) {
    throw new Error(`events ${JSON.stringify(events)}, want ${JSON.stringify(wantEvents)}`);
  }
  for (const need of ["service_created", "service_scaled", "job_submitted", "service_replica_marked"]) {
    if (!events.some((e) => e[0] === need)) throw new Error(`no ${need} event: ${JSON.stringify(events)}`);
  }
  console.log(`events: ${events.length}, newest ${JSON.stringify(events[0])}`);
  await page.screenshot({ path: `${shots}/dashboard-service.png`, fullPage: true });

  if (problems.length) throw new Error("the page reported errors:\n" + problems.join("\n"));
  step("ok");
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e));
  try {
    const [page] = (await browser.pages()).slice(-1);
    await page.screenshot({ path: `${shots}/services-failure.png`, fullPage: true });
  } catch (_) {
    // no page to show
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
