// pi-guard's page next to pi 1.6.0's own (`pi --export`) of the same file, written by pi 1.6.0's
// real agent loop (test/helpers/pi1.ts): an edit shows the very diff lines pi's page shows, and a
// skill block is the same "[skill] name" card, in real headless Chromium.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { exportPi1Html, makePi1Session, pi1ToolCall, type Pi1SessionResult } from "../helpers/pi1.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "../sessions/cli.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-html-pi1-gaps");
// What pi 1.6.0 writes for `/skill:changelog tidy it` (agent-session.js _expandSkillCommand).
const SKILL = `<skill name="changelog" location="/opt/skills/changelog/SKILL.md">\nReferences are relative to /opt/skills/changelog.\n\nKeep a changelog.\n</skill>\n\ntidy it`;

let sb: Sandbox;
let session: Pi1SessionResult;
let browser: Browser;
let ours: string;
let theirs: string;

beforeAll(async () => {
  sb = makeSandbox("html-pi1-gaps");
  writePiConfigFiles(sb.agentDir);
  const cwd = path.join(sb.home, "code", "pi1-gaps");
  mkdirSync(cwd, { recursive: true });
  const file = path.join(cwd, "CHANGELOG.md");
  writeFileSync(file, ["# Changelog", "", "## 1.0", "- first", "- second", "- third", "", "## 0.9", "- older"].join("\n") + "\n");
  session = await makePi1Session({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      {
        user: SKILL,
        assistant: [[pi1ToolCall("edit", { path: file, edits: [{ oldText: "- second\n", newText: "- second, fixed\n- inserted\n" }, { oldText: "- older", newText: "- oldest" }] })], "Tidied."],
      },
    ],
  });
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

async function pisPage() {
  const pi = await browser.newPage();
  await pi.goto(`file://${theirs}`);
  await pi.waitForSelector(".tool-diff");
  return pi;
}

describe("pi 1.6.0 session: the page shows an edit and a skill as pi's own page does", () => {
  it("the edit's diff lines are the lines pi's page shows, each removed/added/context alike", async () => {
    const { page, errors } = await openFile(browser, ours);
    await page.waitForSelector(".tool-diff");
    await page.waitForFunction("document.readyState === 'complete'");
    await page.locator(".tool-diff").scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, "edit.png") });
    // Each line as "class|text", e.g. "diff-removed|-5 - second".
    const classed = (lines: Element[]) => lines.map((l) => `${l.className}|${(l as HTMLElement).innerText}`);
    const ourLines = await page.locator(".tool-diff > div").evaluateAll(classed);
    const pi = await pisPage();
    const piLines = await pi.locator(".tool-diff > div").evaluateAll(classed);
    await pi.close();
    expect(piLines.length).toBeGreaterThan(4);
    expect(piLines.some((l) => l.startsWith("diff-removed|"))).toBe(true);
    expect(ourLines).toEqual(piLines);
    expect(errors).toEqual([]);
  });

  it("the skill is a folded '[skill] changelog' card as on pi's page, the user's words below it", async () => {
    const { page, errors } = await openFile(browser, ours);
    await page.waitForSelector("#messages .entry.user");
    const pi = await pisPage();
    const piLabel = await pi.locator(".skill-invocation-label").innerText();
    await pi.close();
    expect(await page.locator(".entry.user details.skill > summary").innerText()).toBe(piLabel);
    expect(await page.locator(".entry.user > .text").innerText()).toBe("tidy it");
    expect(errors).toEqual([]);
  });
});
