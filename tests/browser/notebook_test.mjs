// A notebook in headless Chromium through the head (docs/interactive.md), against a cluster and
// a `corral notebook` that tests/browser_test.cc started: the owner signs in to the dashboard,
// opens the notebook from "My sessions", runs a cell typed into the page that prints
// CUDA_VISIBLE_DEVICES, and reads its output from the page; another user's token is refused.
//
// Environment: CORRAL_ADDR, CORRAL_USER_TOKEN (the owner, "ana"), OTHER_TOKEN (another user),
// NOTEBOOK_ID, WANT_OUTPUT (the cell's expected line), CHROMIUM, SCREENSHOT_DIR.
import { mkdirSync } from "node:fs";
import { env, launchChromium, step } from "./browser_lib.mjs";

const addr = env("CORRAL_ADDR");
const id = env("NOTEBOOK_ID");
const shots = env("SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });
const WAIT = { timeout: 30000 };

const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage();
  step("sign in as the owner and list my sessions");
  await page.goto(addr + "/", { waitUntil: "domcontentloaded" });
  await page.waitForSelector("#signin-token", WAIT);
  await page.type("#signin-token", env("CORRAL_USER_TOKEN"));
  await page.type("#signin-user", "ana");
  await page.click("#signin-button");
  await page.waitForSelector('nav a[href="#/sessions"]', WAIT);
  await page.click('nav a[href="#/sessions"]');
  await page.waitForSelector(`tr[data-session="${id}"] .open-session`, WAIT);
  await page.screenshot({ path: `${shots}/sessions.png` });

  step("open: the notebook's page in a new tab, through the head");
  const opened = new Promise((resolve) => browser.once("targetcreated", (t) => resolve(t)));
  await page.click(`tr[data-session="${id}"] .open-session`);
  const tab = await (await opened).page();
  await tab.waitForFunction((id) => location.pathname === `/s/${id}/tree`, WAIT, id);
  await tab.waitForSelector("#notebook_list", WAIT);
  if (tab.url().includes(env("CORRAL_USER_TOKEN"))) throw new Error("the token is in the URL");
  await tab.screenshot({ path: `${shots}/notebook-tree.png` });

  step("a new notebook; type a cell and run it");
  const made = await tab.evaluate(async (id) => {
    const r = await fetch(`/s/${id}/api/contents/check.ipynb`, {
      method: "PUT",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ type: "notebook", content: { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 } }),
    });
    return r.status;
  }, id);
  if (made !== 201 && made !== 200) throw new Error(`creating the notebook: ${made}`);
  await tab.goto(`${addr}/s/${id}/notebooks/check.ipynb`, { waitUntil: "domcontentloaded" });
  await tab.waitForFunction(() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
    Jupyter.notebook.kernel.is_connected(), WAIT);
  await tab.click(".cell .CodeMirror");
  await tab.keyboard.type("import os; print('CVD=' + os.environ['CUDA_VISIBLE_DEVICES'])");
  await tab.keyboard.down("Shift");
  await tab.keyboard.press("Enter");
  await tab.keyboard.up("Shift");
  await tab.waitForSelector(".output_area pre", WAIT);
  const output = (await tab.$eval(".output_area pre", (e) => e.textContent)).trim();
  await tab.screenshot({ path: `${shots}/notebook-cell.png` });
  if (output !== env("WANT_OUTPUT")) throw new Error(`the cell printed "${output}", want "${env("WANT_OUTPUT")}"`);
  step(`the cell printed ${output}`);

  step("another user's token is refused");
  const other = await browser.createBrowserContext();
  const stranger = await other.newPage();
  const refused = await stranger.goto(`${addr}/s/${id}/tree?token=${env("OTHER_TOKEN")}`);
  if (refused.status() !== 403) throw new Error(`another user's token: ${refused.status()}, want 403`);
  const anonymous = await stranger.goto(`${addr}/s/${id}/tree`);
  if (anonymous.status() !== 401) throw new Error(`no token: ${anonymous.status()}, want 401`);
  await other.close();
  step("ok");
} catch (e) {
  failed = true;
  console.error(e.stack || String(e));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
