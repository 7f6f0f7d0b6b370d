// Drives the dashboard in headless Chromium against a real cluster that tests/browser_test.cc
// started: sign in with a token, see a submitted job appear without a reload, open its page
// and see its log line, see a node's GPUs, and see a user's 403 handled. Writes a screenshot
// of each view to $SCREENSHOT_DIR.
//
// Environment: CORRAL_ADDR (http://host:port), CORRAL_TOKEN (admin), CORRAL_USER_TOKEN (a user
// "ana"), CORRAL_BIN, CHROMIUM, SCREENSHOT_DIR, NODES, GPUS_PER_NODE.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const shots = env("SCREENSHOT_DIR");
const nodes = Number(env("NODES"));
const gpusPerNode = Number(env("GPUS_PER_NODE"));
mkdirSync(shots, { recursive: true });

const LOG_LINE = "hello from the dashboard test";
const WAIT = { timeout: 10000 };

function corral(...args) {
  return execFileSync(env("CORRAL_BIN"), args, {
    env: { ...process.env, CORRAL_ADDR: addr, CORRAL_TOKEN: env("CORRAL_TOKEN") },
    encoding: "utf8",
  }).trim();
}

async function signIn(page, token, user, shot) {
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", token);
  await page.type("#signin-user", user);
  if (shot) await page.screenshot({ path: shot });
  await page.click("#signin-button");
}

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  // Chromium logs every refused request ("Failed to load resource: ... 403"); the 403 step
  // wants those. Anything else the page logs as an error is a failure.
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push("console: " + m.text());
  });

  step("sign in");
  await signIn(page, env("CORRAL_TOKEN"), "admin", `${shots}/dashboard-signin.png`);
  await page.waitForSelector("#gpus-idle", WAIT);
  await page.waitForFunction(() => document.getElementById("live").textContent === "live", WAIT);
  const total = await page.$eval("#gpus-idle .value", (e) => Number(e.textContent));
  if (total !== nodes * gpusPerNode) throw new Error(`overview: ${total} GPUs free, want ${nodes * gpusPerNode}`);
  // The token is in sessionStorage, not in the address.
  if (page.url().includes(env("CORRAL_TOKEN"))) throw new Error("the token is in the URL");

  step("all jobs, then a job submitted from the CLI appears without a reload");
  await page.click('nav a[href="#/jobs"]');
  await page.waitForSelector("#job-filters", WAIT);
  await page.evaluate(() => { window.notReloaded = true; });
  const id = corral("submit", "--parsable", "--name", "hello", "--gpus", "1", "--",
    "sh", "-c", `echo '${LOG_LINE}'; sleep 60`);
  await page.waitForSelector(`tr[data-job="${id}"]`, WAIT);
  await page.waitForFunction((id) => document.querySelector(`tr[data-job="${id}"] .badge`).textContent === "running",
    WAIT, id);
  if (!(await page.evaluate(() => window.notReloaded === true))) throw new Error("the page was reloaded");
  await page.screenshot({ path: `${shots}/dashboard-jobs.png` });

  step("the job's page shows its log line");
  await page.click(`tr[data-job="${id}"] a`);
  await page.waitForFunction((line) => (document.getElementById("log") || {}).textContent?.includes(line),
    WAIT, LOG_LINE);
  await page.screenshot({ path: `${shots}/dashboard-job.png`, fullPage: true });

  step("the overview counts the allocated GPU");
  await page.click('nav a[href="#/"]');
  await page.waitForFunction(() => document.querySelector("#gpus-busy .value")?.textContent === "1", WAIT);
  await page.screenshot({ path: `${shots}/dashboard-cluster.png` });

  step("a job waiting behind a run predicted from one ended job is told a rough time, and that it is");
  // One ended "probe" job is all the history there is: the 4-GPU run without a limit ends when
  // that predicts, at low confidence, and the job behind it (no 4 GPUs free elsewhere) says so.
  await page.click('nav a[href="#/jobs"]');
  const probe = corral("submit", "--parsable", "--name", "probe", "--gpus", "1", "--", "sleep", "2");
  await page.waitForFunction((id) => document.querySelector(`tr[data-job="${id}"] .badge`)?.textContent === "succeeded",
    { timeout: 20000 }, probe);
  const blocker = corral("submit", "--parsable", "--name", "probe", "--gpus", "4", "--", "sleep", "300");
  await page.waitForFunction((id) => document.querySelector(`tr[data-job="${id}"] .badge`)?.textContent === "running",
    WAIT, blocker);
  const behind = corral("submit", "--parsable", "--name", "probe", "--gpus", "4", "--", "sleep", "300");
  await page.waitForFunction((id) => {
    const cell = document.querySelector(`tr[data-job="${id}"] .reason`);
    return cell && /expected to start in about [0-9ms]+ on node\d \(low confidence\)/.test(cell.textContent);
  }, { timeout: 20000 }, behind);
  await page.screenshot({ path: `${shots}/dashboard-low-confidence.png` });
  corral("cancel", behind);
  corral("cancel", blocker);
  for (const id of [behind, blocker]) {
    await page.waitForFunction((id) => document.querySelector(`tr[data-job="${id}"] .badge`)?.textContent === "cancelled",
      WAIT, id);
  }

  step("queue train (quota 2) borrows 2 GPUs and has a job pending, with when it should start");
  // Runs with a time limit end by then at the latest: the pending job gets an estimate, as sure
  // as the limits it rests on.
  const train = ["--queue", "train", "--time-limit", "10m", "--", "sleep", "60"];
  corral("submit", "--gpus", "2", ...train);
  corral("submit", "--gpus", "2", ...train);
  const waiting = corral("submit", "--parsable", "--gpus", "4", ...train);
  await page.click('nav a[href="#/jobs"]');
  await page.waitForFunction((id) => {
    const cell = document.querySelector(`tr[data-job="${id}"] .reason`);
    return cell && /expected to start in (9m|10m)\d\ds on node\d \(high confidence\)/.test(cell.textContent);
  }, { timeout: 20000 }, waiting);

  step("the nodes' GPUs, five held");
  await page.click('nav a[href="#/nodes"]');
  await page.waitForSelector("#heatmap .gpu", WAIT);
  const cells = await page.$$eval("#heatmap .gpu", (cs) => cs.map((c) => ({ node: c.dataset.node, cls: c.className })));
  if (cells.length !== nodes * gpusPerNode) throw new Error(`heat map: ${cells.length} GPUs, want ${nodes * gpusPerNode}`);
  await page.waitForFunction(() => document.querySelectorAll("#heatmap .gpu.allocated").length === 5, WAIT);
  await page.screenshot({ path: `${shots}/dashboard-nodes.png` });

  step("a GPU an admin drains is marked on the map, with why, until undrained");
  corral("nodes", "drain", "node2", "--gpu", "3", "--reason", "fan noise");
  await page.waitForFunction(() => {
    const c = document.querySelector('#heatmap .gpu[data-node="node2"][data-gpu="3"]');
    return c && c.classList.contains("drained") && c.title.includes("drained (admin)") && c.title.includes("fan noise");
  }, WAIT);
  corral("nodes", "undrain", "node2", "--gpu", "3");
  await page.waitForFunction(() => !document.querySelector("#heatmap .gpu.drained"), WAIT);

  step("a node in a maintenance window says so, until the window is deleted");
  corral("reservations", "create", "fix-node2", "--nodes", "node2", "--start", "now",
    "--duration", "1h", "--maintenance");
  await page.waitForFunction(() => {
    const b = document.querySelector('.node-row[data-node="node2"] .badge.node-maint');
    return b && b.textContent === "maint" && b.title === "maintenance window fix-node2" &&
      !document.querySelector('.node-row[data-node="node1"] .badge.node-maint');
  }, WAIT);
  corral("reservations", "delete", "fix-node2");
  await page.waitForFunction(() => !document.querySelector(".badge.node-maint"), WAIT);

  step("queues");
  await page.click('nav a[href="#/queues"]');
  await page.waitForSelector('tr[data-queue="default"]', WAIT);
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('tr[data-queue="train"] td')].map((c) => c.textContent);
    // queue, quota, limit, weight, used, borrowing, running, pending, why
    return cells[5] === "2" && cells[7] === "1" && cells[8].startsWith("1 \u00d7 waiting for");
  }, WAIT);
  await page.screenshot({ path: `${shots}/dashboard-queues.png` });

  step("another user sees the job but is refused its log and its cancel, and the page says so");
  await page.click("#signout");
  await signIn(page, env("CORRAL_USER_TOKEN"), "ana");
  await page.waitForSelector("#gpus-idle", WAIT);
  await page.evaluate((id) => { location.hash = `#/jobs/${id}`; }, id);
  await page.waitForFunction(() => document.getElementById("log-status")?.textContent.startsWith("not yours to read"),
    WAIT);
  await page.click("#cancel");
  await page.waitForFunction(() => document.querySelector(".notice.denied")?.textContent.includes("may not cancel this job"),
    WAIT);
  await page.screenshot({ path: `${shots}/dashboard-denied.png` });

  if (problems.length) throw new Error("the page reported errors:\n" + problems.join("\n"));
  step("ok");
} catch (e) {
  failed = true;
  console.error("FAILED: " + (e.stack || e));
  try {
    const [page] = (await browser.pages()).slice(-1);
    await page.screenshot({ path: `${shots}/failure.png`, fullPage: true });
    console.error("page at failure: " + shots + "/failure.png\n" +
      (await page.evaluate(() => document.getElementById("main").innerText)).slice(0, 2000));
  } catch (_) {
    // no page to show
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
