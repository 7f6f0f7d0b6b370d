// What the browser tests share: required environment variables, timed step lines, and headless
// Chromium launched the same way for each.
import puppeteer from "puppeteer-core";

export const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`environment variable ${name} is not set`);
  return v;
};

export function step(what) {
  console.log(`[${(performance.now() / 1000).toFixed(1)}s] ${what}`);
}

export function launchChromium() {
  return puppeteer.launch({
    executablePath: env("CHROMIUM"),
    headless: true,
    // Root (CI's containers) cannot use Chromium's sandbox.
    args: [...(process.getuid() === 0 ? ["--no-sandbox"] : []), "--disable-gpu", "--disable-dev-shm-usage"],
    defaultViewport: { width: 1280, height: 760 },
  });
}
