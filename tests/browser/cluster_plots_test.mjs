// Drives the dashboard in headless Chromium against a real cluster that tests/browser_test.cc
// started with a head taking a point of the cluster every second and a known load (GPUs held,
// jobs pending and running): the overview draws the cluster's series as SVG plots that follow
// new points, each line's latest point at the height the head's own series gives, and the
// rendered plot holds the line's colour. Writes screenshots to $SCREENSHOT_DIR.
//
// Then a job's page shows its events' and runs' times as how long ago, the clock time on hover.
//
// Environment: CORRAL_ADDR, CORRAL_TOKEN (admin), WANT_GPUS, WANT_HELD, WANT_PENDING,
// WANT_RUNNING (the load the test set up), JOB_ID (a running job), CHROMIUM, SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const token = env("CORRAL_TOKEN");
const shots = env("SCREENSHOT_DIR");
const want = {
  gpus: Number(env("WANT_GPUS")),
  held: Number(env("WANT_HELD")),
  pending: Number(env("WANT_PENDING")),
  running: Number(env("WANT_RUNNING")),
};
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 20000 };

// The head's series, read as the page reads it.
async function series() {
  const r = await fetch(addr + "/v1/cluster/series", { headers: { Authorization: "Bearer " + token } });
  if (!r.ok) throw new Error(`GET /v1/cluster/series: ${r.status} ${await r.text()}`);
  return r.json();
}

// The y of a value in a panel, from its axis (value 0) and grid line (its top value).
async function yOf(page, plot, value) {
  return page.$eval(`#${plot}`, (svg, value) => {
    const [axis, grid] = [...svg.querySelectorAll("line")].map((l) => Number(l.getAttribute("y1")));
    const top = Number(svg.querySelector("text.tick").textContent.replace("%", ""));
    return axis - (Math.min(value, top) / top) * (axis - grid);
  }, value);
}

async function lastY(page, plot, name) {
  return page.$eval(`#${plot} polyline[data-series=${name}]`, (p) => {
    const xy = p.getAttribute("points").trim().split(/\s+/);
    return Number(xy[xy.length - 1].split(",")[1]);
  });
}

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  step("the head's series reaches the load the test set up");
  let s;
  const deadline = Date.now() + 20000;
  for (;;) {
    s = await series();
    const p = s.points[s.points.length - 1];
    if (p && p[1] === want.gpus && p[2] === want.held && p[4] === want.pending && p[5] === want.running) break;
    if (Date.now() > deadline) throw new Error("the series never showed the load: " + JSON.stringify(s));
    await new Promise((r) => setTimeout(r, 250));
  }
  if (s.step_ms !== 1000) throw new Error(`step_ms ${s.step_ms}, want 1000 (--cluster-series-step 1s)`);

  step("sign in: the overview plots the cluster over time");
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", token);
  await page.type("#signin-user", "admin");
  await page.click("#signin-button");
  await page.waitForSelector("#plot-cluster-gpus polyline[data-series=held]", WAIT);
  await page.waitForSelector("#plot-cluster-jobs polyline[data-series=pending]", WAIT);

  step("the lines grow as the head adds points");
  const count = () => page.$eval("#plot-cluster-gpus polyline[data-series=held]", (p) => Number(p.dataset.points));
  const first = await count();
  await page.waitForFunction((n) =>
    Number(document.querySelector("#plot-cluster-gpus polyline[data-series=held]")?.dataset.points) > n + 1,
  WAIT, first);

  step("each line ends where the head's latest point puts it");
  // Wait for a quiet moment: the page's last point is the head's last one.
  const checks = async () => {
    const pts = (await series()).points;
    const n = await count();
    if (n !== pts.length) return null;
    const p = pts[pts.length - 1];
    const lines = [
      ["plot-cluster-gpus", "held", (100 * p[2]) / p[1]],
      ["plot-cluster-jobs", "pending", p[4]],
      ["plot-cluster-jobs", "running", p[5]],
    ];
    if (p[3] !== null) lines.push(["plot-cluster-gpus", "util", p[3]]);
    const out = [];
    for (const [plot, name, value] of lines) {
      out.push({ name, value, y: await lastY(page, plot, name), want: await yOf(page, plot, value) });
    }
    return { p, out };
  };
  let got = null;
  for (let i = 0; i < 100 && !got; i++) {
    got = await checks();
    if (!got) await new Promise((r) => setTimeout(r, 100));
  }
  if (!got) throw new Error("the page never caught up with the head's series");
  for (const { name, value, y, want: wy } of got.out) {
    if (Math.abs(y - wy) > 0.6) throw new Error(`line ${name} ends at y=${y}, want ${wy.toFixed(1)} (${value})`);
  }
  if (got.p[3] === null) throw new Error("no GPU measured: " + JSON.stringify(got.p));
  console.log("latest point: " + JSON.stringify(got.p));
  const caption = await page.$eval("#cluster-plots figcaption", (c) => c.textContent);
  if (!caption.includes(`${want.held} of ${want.gpus}`)) throw new Error(`caption: ${caption}`);

  step("the rendered plot holds the held line's colour");
  await page.$eval("#cluster-plots", (el) => el.scrollIntoView());
  const plots = await page.$("#cluster-plots");
  await plots.screenshot({ path: `${shots}/dashboard-cluster-plots.png` });
  await page.screenshot({ path: `${shots}/dashboard-cluster-over-time.png`, fullPage: true });
  const blue = await page.evaluate(async () => {
    const svg = document.getElementById("plot-cluster-gpus").cloneNode(true);
    for (const p of svg.querySelectorAll("polyline")) {
      const live = document.querySelector(`#plot-cluster-gpus polyline[data-series=${p.dataset.series}]`);
      p.setAttribute("stroke", getComputedStyle(live).stroke);
      p.setAttribute("fill", "none");
      p.setAttribute("stroke-width", "2");
    }
    svg.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    const img = new Image();
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg.outerHTML);
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.abs(d[i] - 31) < 40 && Math.abs(d[i + 1] - 119) < 40 && Math.abs(d[i + 2] - 180) < 40 && d[i + 3] > 100) n++;
    }
    return n;
  });
  if (blue < 50) throw new Error(`the rendered plot has ${blue} pixels of the held line's colour`);
  console.log(`held line pixels: ${blue}`);

  step("a job's page says how long ago things happened, the clock time on hover");
  await page.evaluate((id) => { location.hash = `#/jobs/${id}`; }, env("JOB_ID"));
  await page.waitForSelector("table.events time", WAIT);
  const stamps = await page.$$eval("table.events time, table.runs time",
    (ts) => ts.map((t) => [t.textContent, t.getAttribute("title"), t.getAttribute("datetime")]));
  for (const [text, title, iso] of stamps) {
    if (!/^\d+(s|m\d\ds|h\d\dm|d\d+h) ago$/.test(text) || !title || Number.isNaN(Date.parse(iso))) {
      throw new Error(`a stamp reads ${JSON.stringify([text, title, iso])}`);
    }
  }
  console.log(`stamps: ${stamps.length}, e.g. ${JSON.stringify(stamps[0])}`);

  if (problems.length) throw new Error("the page reported errors:\n" + problems.join("\n"));
  step("ok");
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e));
  try {
    const [page] = (await browser.pages()).slice(-1);
    await page.screenshot({ path: `${shots}/cluster-plots-failure.png`, fullPage: true });
  } catch (_) {
    // no page to show
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
