// Drives the dashboard's Datasets view in headless Chromium against a real cluster that
// tests/browser_test.cc started with two datasets registered, one of them (cifar) staged on a
// node by a job that ran there (which measured its source). Checks that the view shows what the
// API gives: each dataset's size, files, state, job count and the nodes holding it; each node's
// cache (the datasets it holds, added up); each source's measured rate. Writes a screenshot to
// $SCREENSHOT_DIR.
//
// Environment: CORRAL_ADDR, CORRAL_TOKEN (admin), WANT_NODE (the node holding cifar), CHROMIUM,
// SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const token = env("CORRAL_TOKEN");
const shots = env("SCREENSHOT_DIR");
const node = env("WANT_NODE");
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 20000 };

async function api(path) {
  const r = await fetch(addr + path, { headers: { Authorization: "Bearer " + token } });
  if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

// The view's formatting (web/view_datasets.js), applied to the API's figures.
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u + 1 < units.length) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

async function rows(page, selector) {
  return page.$$eval(selector, (trs) => trs.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent)));
}

function same(what, got, want) {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${what}: the page shows ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  step("sign in, open Datasets");
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", token);
  await page.type("#signin-user", "admin");
  await page.click("#signin-button");
  await page.waitForSelector("nav a[href='#/datasets']", WAIT);
  await page.click("nav a[href='#/datasets']");
  await page.waitForSelector("#datasets-table tbody tr", WAIT);
  await page.waitForSelector("#sources-table tbody tr", WAIT);

  step("each dataset: size, files, state, jobs, the nodes holding it, its source");
  const body = await api("/v1/datasets");
  const cifar = body.datasets.find((d) => d.name === "cifar");
  if (!cifar || JSON.stringify(cifar.nodes) !== JSON.stringify([node])) {
    throw new Error("the API's cifar: " + JSON.stringify(cifar));
  }
  same("datasets", await rows(page, "#datasets-table tbody tr"), body.datasets.map((d) => [
    d.name, d.version, bytes(d.bytes), String(d.files), d.state, String(d.users.length),
    d.nodes.length ? d.nodes.map((n) => `${n} (${bytes(d.bytes)})`).join(", ") : "-", d.source]));

  step("each node's cache: the datasets it holds, added up");
  same("caches", await rows(page, "#caches-table tbody tr"),
    [[node, bytes(cifar.bytes), `cifar@${cifar.version}`]]);

  step("each source's measured rate");
  const got = await rows(page, "#sources-table tbody tr");
  same("sources", got.map((r) => [r[0], r[1], r[3]]), body.sources.map((s) =>
    [s.source, `${bytes(s.bytes_per_second)}/s`, `${bytes(s.bytes)} in ${s.ms} ms`]));
  if (body.sources.length !== 1 || body.sources[0].bytes !== cifar.bytes) {
    throw new Error("the API's sources: " + JSON.stringify(body.sources));
  }
  console.log(`datasets: ${JSON.stringify(await rows(page, "#datasets-table tbody tr"))}`);
  console.log(`sources: ${JSON.stringify(got)}`);
  await page.screenshot({ path: `${shots}/dashboard-datasets.png`, fullPage: true });

  if (problems.length) throw new Error("the page reported errors:\n" + problems.join("\n"));
  step("ok");
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e));
  try {
    const [page] = (await browser.pages()).slice(-1);
    await page.screenshot({ path: `${shots}/datasets-failure.png`, fullPage: true });
  } catch (_) {
    // no page to show
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
