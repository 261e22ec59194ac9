// Large sessions in the HTML viewer (real Chromium): long tool output is folded behind a click,
// a long branch is drawn a chunk at a time (the rest as the reader scrolls), search still covers
// every entry and every folded line, and the index the viewer starts from carries no tool output.
// The session comes from pi's own agent loop (faux model, real bash tool).

import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { fauxToolCall, makePiSession, type PiTurn } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "../sessions/cli.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-large");
const TURNS = 160;

let sb: Sandbox;
let browser: Browser;
let htmlFile: string;

beforeAll(async () => {
  sb = makeSandbox("html-large");
  const turns: PiTurn[] = [{ user: "Print a long sequence", assistant: [[fauxToolCall("bash", { command: "seq -f 'line-%g' 1 1500" })], "Printed 1500 lines."] }];
  for (let i = 1; i < TURNS - 1; i++) turns.push({ user: `Question number ${i}`, assistant: [`Answer number ${i}.`] });
  // The last turn runs a tool too, far below the first chunk.
  turns.push({ user: `Question number ${TURNS - 1}`, assistant: [[fauxToolCall("bash", { command: "echo last-call" })], `Answer number ${TURNS - 1} with the word capybara.`] });
  const session = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "work", "big"), turns, captureEvents: false });
  htmlFile = path.join(sb.root, "large.html");
  await runOk(sb, ["export", session.sessionId, "--format", "html", "--output", htmlFile]);
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

describe("HTML export of a large session (Chromium)", () => {
  it("shows a long tool output's first lines inline, and all of it on request", async () => {
    const { page, errors, requests } = await openFile(browser, htmlFile);
    const call = page.locator(".tool-call").first();
    const output = call.locator(".tool-output");
    expect(await output.isVisible()).toBe(true);
    const shown = await output.innerText();
    expect(shown.startsWith("line-1\nline-2\nline-3\n")).toBe(true);
    expect(shown.split("\n").length).toBeLessThanOrEqual(61);
    expect(shown).not.toContain("line-1500");
    const more = call.locator("button.show-all");
    expect(await more.innerText()).toMatch(/^… \(\d+ more lines\)$/);
    await page.screenshot({ path: path.join(ARTIFACTS, "folded.png") });
    await more.click();
    expect((await output.innerText()).trimEnd().endsWith("line-1499\nline-1500")).toBe(true);
    expect(await more.count()).toBe(0);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });

  it("draws a long branch a chunk at a time; scrolling draws the rest (expanded, if outputs were expanded)", async () => {
    const { page, errors } = await openFile(browser, htmlFile);
    await page.waitForSelector("#messages .entry.user");
    await page.click("#expand-tools");
    const firstDraw = await page.locator("#messages .entry.user").count();
    expect(firstDraw).toBeGreaterThan(0);
    expect(firstDraw).toBeLessThan(TURNS);
    expect(await page.locator("#messages .more").innerText()).toMatch(/\d+ more entries below/);
    for (let i = 0; i < 40 && (await page.locator("#messages .entry.user").count()) < TURNS; i++) {
      await page.locator("#messages .more").scrollIntoViewIfNeeded();
      await page.waitForTimeout(50);
    }
    expect(await page.locator("#messages .entry.user").count()).toBe(TURNS);
    expect(await page.locator("#messages .entry.user").last().innerText()).toContain(`Question number ${TURNS - 1}`);
    const calls = page.locator(".tool-call");
    expect(await calls.count()).toBe(2);
    expect(await calls.locator("button.show-all").count()).toBe(0);
    expect((await calls.first().locator(".tool-output").innerText()).trimEnd().endsWith("line-1500")).toBe(true);
    expect((await calls.last().locator(".tool-output").innerText()).trim()).toBe("last-call");
    expect(errors).toEqual([]);
  });

  it("search covers entries not drawn yet and lines still folded", async () => {
    const { page, errors } = await openFile(browser, htmlFile);
    await page.waitForSelector("#messages .entry.user");
    await page.fill("#search", "capybara");
    await page.press("#search", "Enter");
    await page.waitForFunction("document.querySelectorAll('mark.hit').length > 0");
    expect(await page.locator("mark.hit").first().isVisible()).toBe(true);
    await page.fill("#search", "line-1498");
    await page.press("#search", "Enter");
    await page.waitForFunction("document.getElementById('search-count').textContent === '1 / 1'");
    expect(await page.locator("mark.hit").first().isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });

  it("the viewer's index holds no tool output; session-data still holds all of it", () => {
    const html = readFileSync(htmlFile, "utf8");
    const index = /<script id="entry-index" type="application\/json">([^<]*)<\/script>/.exec(html)![1];
    expect(index).not.toContain("line-1498");
    const data = JSON.parse(Buffer.from(/<script id="session-data" type="application\/json">([^<]+)<\/script>/.exec(html)![1], "base64").toString("utf8"));
    expect(JSON.stringify(data.entries)).toContain("line-1498\\nline-1499\\nline-1500");
    // Every light entry's byte range points at exactly that entry's JSON inside session-data.
    const bytes = Buffer.from(JSON.stringify(data), "utf8");
    const light = JSON.parse(index).entries as { id: string; _o: [number, number] }[];
    expect(light.length).toBe(data.entries.length);
    light.forEach((e, i) => expect(JSON.parse(bytes.subarray(e._o[0], e._o[1]).toString("utf8"))).toEqual(data.entries[i]));
  });
});
