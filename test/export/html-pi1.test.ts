// The HTML page of a session written by pi 1.6.0's real agent loop (test/helpers/pi1.ts), next
// to pi 1.6.0's own page of the same file (`pi --export`), in real headless Chromium: the system
// prompt and the tool list with parameters (the same tools pi's page lists), system updates in
// the tree, usage and context-edit entries in the flow (the edited message not marked where pi
// ignores the edit), and the
// header's token breakdown equal to pi's own session stats.

import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { exportPi1Html, makePi1RichSession, type Pi1SessionResult } from "../helpers/pi1.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "../sessions/cli.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-html-pi1");

let sb: Sandbox;
let session: Pi1SessionResult;
let browser: Browser;
let ours: string;
let theirs: string;

beforeAll(async () => {
  sb = makeSandbox("html-pi1");
  writePiConfigFiles(sb.agentDir);
  const cwd = path.join(sb.home, "code", "ledger");
  session = await makePi1RichSession(sb.agentDir, cwd);
  mkdirSync(ARTIFACTS, { recursive: true });
  ours = path.join(ARTIFACTS, "pi-guard.html");
  theirs = path.join(ARTIFACTS, "pi-export.html");
  await runOk(sb, ["export", session.sessionId, "--force", "-o", ours]);
  await exportPi1Html({ home: sb.home, agentDir: sb.agentDir, cwd, sessionFile: session.file, out: theirs });
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

async function open(file: string) {
  const loaded = await openFile(browser, file);
  await loaded.page.waitForSelector("#messages .entry");
  await loaded.page.waitForFunction("document.readyState === 'complete'");
  return loaded;
}

describe("HTML page of a pi 1.6.0 session", () => {
  it("shows the system prompt (its sections) and the tool list with parameters, the same tools pi's own page lists", async () => {
    const { page, errors, requests } = await open(ours);
    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: path.join(ARTIFACTS, "system-prompt.png") });
    const system = page.locator("#messages .entry", { hasText: "You are a coding assistant running inside pi" }).first();
    expect(await system.isVisible()).toBe(true);
    expect(await system.locator(".entry-head .role").innerText()).toMatch(/^system prompt$/i);
    // The prompt's first lines, then the rest (the "plan" section is last) on request, as pi's page does.
    await system.locator(".show-all").click();
    expect(await system.innerText()).toContain("Read first, then answer.");
    const ourTools = await system.locator(".tools-list .tool-item > .tool-name").allInnerTexts();
    // pi's own page of the same file lists the tools it offered the model.
    const pi = await browser.newPage();
    await pi.goto(`file://${theirs}`);
    await pi.waitForSelector(".tools-list .tool-item-name");
    const piTools = await pi.locator(".tools-list").first().locator(".tool-item-name").allInnerTexts();
    await pi.close();
    expect(piTools.length).toBeGreaterThan(0);
    expect(ourTools).toEqual(piTools);
    // Each tool with its parameters: read's path is a required string.
    const read = system.locator(".tool-item", { has: page.locator("> .tool-name", { hasText: /^read$/ }) });
    expect(await read.locator(".tool-params li", { hasText: /^path string required/ }).count()).toBe(1);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });

  it("the tree names the system prompt and each system update, as pi's does", async () => {
    const { page, errors } = await open(ours);
    await page.click('.filters button[data-filter="all"]');
    const texts = await page.locator("#tree .tree-node").allInnerTexts();
    expect(texts).toContainEqual(expect.stringContaining("[system prompt]"));
    expect(texts).toContainEqual(expect.stringMatching(/\[system update: .*-plan/));
    expect(errors).toEqual([]);
  });

  it("usage and context-edit entries are events in the flow; the edited message is not marked where pi ignores the edit", async () => {
    const { page, errors } = await open(ours);
    // The path through the compaction: it summarized the edit and its target, so pi ignores the
    // edit and the message is not marked (test/export/context-edit-compaction.test.ts).
    await page.locator("#tree .tree-node", { hasText: "Count the files" }).first().click();
    const notes = await page.locator("#messages .entry.note").allInnerTexts();
    expect(notes).toContainEqual(expect.stringMatching(/^Usage \(cache_warm\): [↑↓RW]\S+/));
    expect(notes).toContainEqual(expect.stringMatching(/^Context edit: replaced \S+/));
    // (Every leaf past this edit is past that compaction; the marks pi does apply are checked there.)
    expect(await page.locator("#messages .entry", { hasText: "It has two lines." }).locator(".edited").count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it("the header's tokens are pi's own session stats, with the ↑↓RW breakdown", async () => {
    const { page, errors } = await open(ours);
    const t = session.stats.tokens;
    const fmt = (n: number) => (n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n));
    const parts = [["↑", t.input], ["↓", t.output], ["R", t.cacheRead], ["W", t.cacheWrite]].filter(([, n]) => n).map(([s, n]) => `${s}${fmt(n as number)}`);
    expect(await page.locator("#stats").innerText()).toContain(`tokens: ${fmt(t.total)} · ${parts.join(" ")}\n`);
    expect(errors).toEqual([]);
  });
});
