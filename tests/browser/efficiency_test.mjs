// Drives the dashboard in headless Chromium against a real cluster that tests/browser_test.cc
// started with a job whose simulated GPUs run at a known utilisation: the job's page draws its
// usage series as an SVG plot that follows new samples, the GPU line at that height, and the
// rendered plot holds the line's colour. Writes a screenshot to $SCREENSHOT_DIR.
//
// Environment: CORRAL_ADDR, CORRAL_TOKEN (admin), JOB_ID, WANT_UTIL (percent), CHROMIUM,
// SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const shots = env("SCREENSHOT_DIR");
const id = env("JOB_ID");
const wantUtil = Number(env("WANT_UTIL"));
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 15000 };

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  step("sign in and open the job");
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", env("CORRAL_TOKEN"));
  await page.type("#signin-user", "admin");
  await page.click("#signin-button");
  await page.waitForSelector("#gpus-idle", WAIT);
  await page.evaluate((id) => { location.hash = `#/jobs/${id}`; }, id);

  step("the GPU plot has a line of the job's samples, and it grows as samples arrive");
  await page.waitForSelector("#plot-gpu polyline.series", WAIT);
  const first = await page.$eval("#plot-gpu polyline.series", (p) => Number(p.dataset.points));
  await page.waitForFunction((n) => Number(document.querySelector("#plot-gpu polyline.series")?.dataset.points) > n,
    WAIT, first);

  step("the line is drawn at the utilisation the GPUs ran at");
  const ys = await page.$eval("#plot-gpu polyline.series", (p) =>
    p.getAttribute("points").trim().split(/\s+/).map((xy) => Number(xy.split(",")[1])));
  // The panel's zero and 100% lines (the axis and the dashed grid line).
  const [zero, full] = await page.$$eval("#plot-gpu line", (ls) => ls.map((l) => Number(l.getAttribute("y1"))));
  const want = zero - (wantUtil / 100) * (zero - full);
  if (!ys.every((y) => Math.abs(y - want) < 0.6)) {
    throw new Error(`GPU line at y=${ys.join(",")}, want ${want.toFixed(1)} (${wantUtil}%)`);
  }
  if (!(await page.$("#plot-mem polyline.series"))) throw new Error("no memory line");

  step("the rendered plot holds the line's colour");
  const plot = await page.$("#plot-gpu");
  await plot.screenshot({ path: `${shots}/efficiency-plot.png` });
  await page.screenshot({ path: `${shots}/efficiency-job.png`, fullPage: true });
  // Rasterise the SVG as the page styles it and count the line's pixels (#1f77b4).
  const blue = await page.evaluate(async () => {
    const svg = document.getElementById("plot-gpu").cloneNode(true);
    for (const p of svg.querySelectorAll("polyline")) {
      p.setAttribute("stroke", getComputedStyle(document.querySelector("#plot-gpu polyline")).stroke);
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
  if (blue < 50) throw new Error(`the rendered plot has ${blue} pixels of the line's colour`);
  console.log(`line pixels: ${blue}`);

  if (problems.length) throw new Error("the page reported errors:\n" + problems.join("\n"));
  step("ok");
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e));
  try {
    const [page] = (await browser.pages()).slice(-1);
    await page.screenshot({ path: `${shots}/efficiency-failure.png`, fullPage: true });
  } catch (_) {
    // no page to show
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
