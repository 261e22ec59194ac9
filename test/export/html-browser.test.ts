// The HTML export in real headless Chromium (Debian's, driven by playwright-core): no console
// errors, no network requests, every user message visible, tool calls expand to their output,
// branch switching changes the visible path, search finds a word. Screenshots go to
// test-artifacts/ (git-ignored).

import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { launchChromium, openFile } from "../helpers/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { runOk } from "../sessions/cli.js";
import { makeWorld, type World } from "../sessions/world.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-html");

let w: World;
let browser: Browser;
let htmlFile: string;

beforeAll(async () => {
  w = await makeWorld("html");
  htmlFile = path.join(w.sb.root, "main.html");
  await runOk(w.sb, ["export", w.main.sessionId, "--format", "html", "--output", htmlFile]);
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  w?.sb.cleanup();
});

interface Loaded {
  page: Page;
  errors: string[];
  requests: string[];
}

/** Open a page, recording console errors, page errors and every request other than the file itself. */
async function open(file: string, colorScheme: "light" | "dark" = "light"): Promise<Loaded> {
  const loaded = await openFile(browser, file, { colorScheme });
  await loaded.page.waitForSelector("#messages .entry");
  return loaded;
}

const userTexts = (page: Page) => page.locator("#messages .entry.user .text").allInnerTexts();

describe("HTML export in Chromium", () => {
  it("loads with no console errors and no network requests; every user message is visible", async () => {
    const { page, errors, requests } = await open(htmlFile);
    expect(await page.title()).toContain("Alpha notes");
    const users = await page.locator("#messages .entry.user").all();
    for (const u of users) expect(await u.isVisible()).toBe(true);
    expect(await userTexts(page)).toEqual(["What is in notes.txt?", "Try the other way instead", expect.stringContaining("Here is my key")]);
    expect(await page.locator("#stats").innerText()).toMatch(/tool calls: 2/);
    expect(await page.locator(".turn-usage").first().innerText()).toMatch(/turn: .* tokens · \$/);
    await page.screenshot({ path: path.join(ARTIFACTS, "light.png"), fullPage: true });
    await page.click("#theme-toggle");
    expect(await page.evaluate("document.documentElement.dataset.theme")).toBe("dark");
    await page.screenshot({ path: path.join(ARTIFACTS, "dark.png"), fullPage: true });
    await page.click("#download-jsonl");
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });

  it("tool calls show their output inline; the toggles hide tools and thinking", async () => {
    const { page, errors } = await open(htmlFile);
    const call = page.locator(".tool-call").first();
    const output = call.locator(".tool-output");
    expect(await call.locator(".tool-head").innerText()).toBe("read notes.txt");
    expect(await output.isVisible()).toBe(true);
    expect(await output.innerText()).toContain("zebrafish lives here");
    await page.screenshot({ path: path.join(ARTIFACTS, "tool-inline.png"), fullPage: true });
    // The tools toggle hides them, the thinking toggle hides thinking.
    await page.uncheck("#toggle-tools");
    expect(await call.isVisible()).toBe(false);
    expect(await page.locator(".thinking").first().isVisible()).toBe(true);
    await page.uncheck("#toggle-thinking");
    expect(await page.locator(".thinking").first().isVisible()).toBe(false);
    expect(errors).toEqual([]);
  });

  it("branch switching changes the visible path (branch buttons and the tree sidebar)", async () => {
    const { page, errors } = await open(htmlFile);
    expect(await page.locator(".branch-pos").innerText()).toBe("branch 2 of 2");
    await page.click(".branch-prev");
    expect(await userTexts(page)).toEqual(["What is in notes.txt?", "Count the files please"]);
    expect(await page.locator(".tool-call .tool-head").allInnerTexts()).toEqual(["read notes.txt", "$ ls | wc -l"]);
    expect(await page.locator(".branch-pos").innerText()).toBe("branch 1 of 2");
    await page.screenshot({ path: path.join(ARTIFACTS, "branch-1.png"), fullPage: true });
    // Back through the sidebar: click the other branch's user message.
    await page.locator("#tree .tree-node", { hasText: "Try the other way instead" }).click();
    expect(await userTexts(page)).toContain("Try the other way instead");
    expect(await page.locator("#tree .tree-node.active").count()).toBe(1);
    // Sidebar filters: "user" shows only user messages (4 of them, both branches).
    await page.click('.filters button[data-filter="user"]');
    expect(await page.locator("#tree .tree-node").count()).toBe(4);
    await page.fill("#tree-search", "count");
    expect(await page.locator("#tree .tree-node").allInnerTexts()).toEqual([expect.stringContaining("Count the files please")]);
    await page.click('.filters button[data-filter="labeled"]');
    await page.fill("#tree-search", "");
    expect(await page.locator("#tree .tree-node").allInnerTexts()).toEqual([expect.stringContaining("read-done")]);
    expect(errors).toEqual([]);
  });

  it("in-page search finds a word, even inside a folded tool call", async () => {
    const { page, errors } = await open(htmlFile);
    await page.fill("#search", "zebrafish");
    await page.press("#search", "Enter");
    await page.waitForFunction("document.querySelectorAll('mark.hit').length > 0");
    const hits = page.locator("mark.hit");
    expect(await hits.count()).toBeGreaterThanOrEqual(2); // the assistant's answer and the tool output
    expect(await page.locator("#search-count").innerText()).toMatch(/^1 \/ \d+$/);
    for (const h of await hits.all()) expect(await h.isVisible()).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, "search.png"), fullPage: true });
    await page.fill("#search", "no-such-word-anywhere");
    await page.press("#search", "Enter");
    await page.waitForFunction("document.getElementById('search-count').textContent === 'no matches'");
    expect(errors).toEqual([]);
  });

  it("embeds the session the way pi does, and a snapshot-only session renders too", async () => {
    const html = readFileSync(htmlFile, "utf8");
    const data = JSON.parse(Buffer.from(/<script id="session-data" type="application\/json">([^<]+)<\/script>/.exec(html)![1], "base64").toString("utf8"));
    expect(data.header.id).toBe(w.main.sessionId);
    expect(data.entries.length).toBe(readFileSync(w.main.file, "utf8").trim().split("\n").length - 1);
    expect(data.leafId).toBe(data.entries.at(-1).id);
    const gone = path.join(w.sb.root, "gone.html");
    await runOk(w.sb, ["export", w.gone.sessionId, "-o", gone]);
    const { page, errors, requests } = await open(gone, "dark");
    expect(await userTexts(page)).toEqual(["Deleted session question about pelicans", "Second deleted question"]);
    await page.screenshot({ path: path.join(ARTIFACTS, "snapshot-only-dark.png"), fullPage: true });
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });
});
