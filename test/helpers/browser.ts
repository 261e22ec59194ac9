// Real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core; never a
// downloaded browser) for the tests of pi-guard's self-contained HTML pages.

import { chromium, type Browser, type Page } from "playwright-core";
import { pathToFileURL } from "node:url";

/** Flags that keep Chromium off the network here (no background fetches, no updates, no sync). */
export function launchChromium(): Promise<Browser> {
  // launch() (not launchPersistentContext) already runs on a fresh temporary profile.
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

export interface OpenedPage {
  page: Page;
  /** Console errors and uncaught page errors. */
  errors: string[];
  /** Every request other than the page's own file; each is aborted. */
  requests: string[];
}

/** Open a local HTML file, recording errors and blocking (and recording) any other request. */
export async function openFile(
  browser: Browser,
  file: string,
  opts: { colorScheme?: "light" | "dark"; width?: number; height?: number } = {},
): Promise<OpenedPage> {
  const context = await browser.newContext({ colorScheme: opts.colorScheme ?? "light", viewport: { width: opts.width ?? 1400, height: opts.height ?? 900 } });
  const page = await context.newPage();
  const url = pathToFileURL(file).href;
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  await context.route("**/*", (route) => {
    if (route.request().url() !== url) requests.push(route.request().url());
    return route.request().url() === url ? route.continue() : route.abort();
  });
  await page.goto(url);
  return { page, errors, requests };
}
