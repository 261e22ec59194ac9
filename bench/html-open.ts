// How long an exported HTML page takes to open in real Chromium: from navigation until the first
// messages of the shown branch are visible. Usage: node dist/bench/html-open.js <page.html>...
// Chromium is Debian's /usr/bin/chromium (or $CHROMIUM), driven by playwright-core, offline.

import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

export interface HtmlOpenResult {
  file: string;
  /** goto → the first message entry visible to Playwright (needs an idle main thread). */
  openMs: number;
  /** Navigation start → the first message entry painted (Element Timing renderTime). */
  firstEntryPaintMs: number | null;
  /** Message entries in the DOM once visible. */
  entriesShown: number;
  /** Requests other than the page itself (each aborted); must be 0. */
  requests: number;
  errors: string[];
}

export async function measureHtmlOpen(files: string[]): Promise<HtmlOpenResult[]> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const results: HtmlOpenResult[] = [];
  try {
    for (const file of files) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      const url = pathToFileURL(file).href;
      let requests = 0;
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await context.route("**/*", (route) => (route.request().url() === url ? route.continue() : (requests++, route.abort())));
      const started = performance.now();
      await page.goto(url, { waitUntil: "commit", timeout: 120_000 });
      await page.locator("#messages .entry").first().waitFor({ state: "visible", timeout: 120_000 });
      const openMs = Math.round(performance.now() - started);
      const entriesShown = await page.locator("#messages .entry").count();
      // A string, not a function: this file is compiled without the DOM's types.
      const firstEntryPaintMs = (await page.evaluate(`new Promise((resolve) => {
        new PerformanceObserver((list) => {
          const hit = list.getEntries().find((e) => e.identifier === "first-entry");
          if (hit) resolve(Math.round(hit.renderTime || hit.startTime));
        }).observe({ type: "element", buffered: true });
        setTimeout(() => resolve(null), 2000);
      })`)) as number | null;
      results.push({ file, openMs, firstEntryPaintMs, entriesShown, requests, errors });
      await context.close();
    }
  } finally {
    await browser.close();
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const files = process.argv.slice(2);
  if (!files.length) {
    console.error("usage: html-open <page.html>...");
    process.exit(2);
  }
  for (const r of await measureHtmlOpen(files)) console.log(JSON.stringify(r));
}
