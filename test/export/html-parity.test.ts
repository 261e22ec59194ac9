// The HTML page against pi's own (`pi --export`), item by item, in real headless Chromium on
// pages exported from real pi sessions: what the agent did is on the first screen (tool calls
// with their output, thinking), the header has pi's token breakdown and message counts, the tree
// has pi's shape (connectors, role words, [session info], (aborted)) and opens at the current
// leaf, times are local, a model switch is an event in the flow, a narrow window folds the tree
// behind a button, data-only entries stay out of the Default filter, and a redacted page names
// no home directory. Screenshots go to test-artifacts/ (git-ignored).

import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "../sessions/cli.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-html-parity");
const FIXTURE_V1 = path.join(PROJECT_ROOT, "test", "fixtures", "pi-mono-v1", "large-session.jsonl");
const FIXTURE_V1_ID = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617";
const APP_LINES = 30;

let sb: Sandbox;
let session: PiSessionResult;
let browser: Browser;
let pageFile: string;
let v1File: string;
let redactedFile: string;

beforeAll(async () => {
  sb = makeSandbox("html-parity");
  writePiConfigFiles(sb.agentDir);
  // The project lives under the (sandbox) home, as most projects do: the page shows it as ~/….
  const cwd = path.join(sb.home, "code", "parity");
  mkdirSync(path.join(cwd, "src"), { recursive: true });
  const app = Array.from({ length: APP_LINES }, (_, i) => `export const value${i} = ${i};`).join("\n") + "\n";
  writeFileSync(path.join(cwd, "src", "app.ts"), app);
  session = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    thinkingLevel: "medium",
    turns: [
      {
        user: "Show me the files, my notes are in /home/alice/work/plan.md",
        assistant: [
          [fauxThinking("Let me list the files first."), fauxToolCall("bash", { command: "ls src && echo /home/alice/work/plan.md" })],
          [fauxToolCall("read", { path: path.join(cwd, "src", "app.ts") })],
          "The app defines thirty values.",
        ],
        label: "files-shown",
      },
      { user: "Thanks", assistant: ["You're welcome."], name: "Parity demo" },
      { user: "Another way", assistant: ["Other answer."], branchFromTurn: 0 },
    ],
  });
  // What extensions and pi's commands add, through pi's own SessionManager (on the sandbox file):
  // a branch with its summary, a model switch, a data-only custom entry, an extension message.
  const sm = SessionManager.open(session.file);
  sm.branchWithSummary(session.turnLeafIds[1], "User tried another approach first.");
  sm.appendModelChange("faux-other", "faux-2");
  sm.appendCustomEntry("my-ext-state", { counter: 1 });
  sm.appendCustomMessageEntry("my-ext", "hello from my extension", true);
  sm.appendMessage({ role: "user", content: "After the summary", timestamp: Date.now() });

  mkdirSync(path.join(sb.sessionsDir, "--fixtures--"), { recursive: true });
  copyFileSync(FIXTURE_V1, path.join(sb.sessionsDir, "--fixtures--", path.basename(FIXTURE_V1)));

  pageFile = path.join(sb.root, "parity.html");
  v1File = path.join(sb.root, "v1.html");
  redactedFile = path.join(sb.root, "redacted.html");
  await runOk(sb, ["export", session.sessionId, "-o", pageFile]);
  await runOk(sb, ["export", FIXTURE_V1_ID, "-o", v1File]);
  await runOk(sb, ["export", session.sessionId, "--redact", "-o", redactedFile]);
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of [pageFile, v1File, redactedFile]) copyFileSync(f, path.join(ARTIFACTS, path.basename(f)));
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

async function open(file: string, size: { width: number; height: number } = { width: 1400, height: 900 }) {
  const loaded = await openFile(browser, file, size);
  await loaded.page.waitForSelector("#messages .entry");
  await loaded.page.waitForFunction("document.readyState === 'complete'");
  return loaded;
}

/** Whether some shown text holding `text` lies inside the first screen (the viewport, unscrolled). */
async function onFirstScreen(page: Page, text: string): Promise<boolean> {
  return page.evaluate((needle) => {
    const walker = document.createTreeWalker(document.getElementById("messages")!, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode as Text;
      const at = node.data.indexOf(needle);
      if (at < 0 || !node.parentElement?.checkVisibility()) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + needle.length);
      const r = range.getBoundingClientRect();
      if (r.width > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth) return true;
    }
    return false;
  }, text);
}

function sessionEntries(): Record<string, any>[] {
  return readFileSync(session.file, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
}

describe("HTML page on a par with pi --export", () => {
  it("the first screen shows what the agent did: the bash call with its output, the read with highlighted lines and '… (N more lines)', the thinking", async () => {
    const { page, errors, requests } = await open(pageFile);
    // Take the first branch, where the tool calls are.
    await page.locator("#tree .tree-node", { hasText: "Show me the files" }).click();
    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: path.join(ARTIFACTS, "first-screen.png") });
    expect(await onFirstScreen(page, "$ ls src")).toBe(true);
    expect(await onFirstScreen(page, "app.ts\n")).toBe(true); // the output of ls
    expect(await onFirstScreen(page, "Let me list the files first.")).toBe(true);
    const read = page.locator(".tool-call", { hasText: "read" }).filter({ has: page.locator(".tool-output") }).last();
    expect(await read.locator(".tool-head").innerText()).toBe("read ~/code/parity/src/app.ts");
    const output = read.locator(".tool-output");
    expect(await output.isVisible()).toBe(true);
    expect((await output.innerText()).split("\n")).toEqual(Array.from({ length: 10 }, (_, i) => `export const value${i} = ${i};`));
    expect(await output.locator(".hljs-keyword").count()).toBeGreaterThan(0);
    const more = read.locator(".show-all");
    expect(await more.innerText()).toBe(`… (${APP_LINES + 1 - 10} more lines)`);
    await more.click();
    expect((await output.innerText()).trimEnd().split("\n")).toHaveLength(APP_LINES);
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });

  it("the header has pi's token breakdown: ↑input ↓output R cache-read W cache-write", async () => {
    const { page, errors } = await open(pageFile);
    const sum = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
    for (const e of sessionEntries()) if (e.message?.role === "assistant") for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += e.message.usage?.[k] ?? 0;
    const fmt = (t: number) => (t >= 1e6 ? (t / 1e6).toFixed(1) + "M" : t >= 1e3 ? (t / 1e3).toFixed(1) + "k" : String(t));
    const expected = [["↑", sum.input], ["↓", sum.output], ["R", sum.cacheRead], ["W", sum.cacheWrite]].filter(([, n]) => n).map(([s, n]) => `${s}${fmt(n as number)}`).join(" ");
    expect(sum.input).toBeGreaterThan(0);
    expect(await page.locator("#stats").innerText()).toContain(`tokens: ${fmt(sum.totalTokens)} · ${expected}\n`);
    expect(errors).toEqual([]);
  });

  it("the header counts messages by role, as pi's does", async () => {
    const { page, errors } = await open(pageFile);
    const entries = sessionEntries();
    const count = (role: string) => entries.filter((e) => e.message?.role === role).length;
    expect(await page.locator("#stats").innerText()).toContain(
      `messages: ${count("user")} user, ${count("assistant")} assistant, ${count("toolResult")} tool results, 1 custom, 1 branch summaries\n`,
    );
    expect(errors).toEqual([]);
  });

  it("the home dir is shortened to ~ (the project in the header, a read path in the tree)", async () => {
    const { page, errors } = await open(pageFile);
    expect(await page.locator("#stats").innerText()).toContain("project: ~/code/parity\n");
    expect(await page.locator("#tree .tree-node").allInnerTexts()).toContainEqual(expect.stringContaining("read ~/code/parity/src/app.ts"));
    expect(errors).toEqual([]);
  });

  it("the tree has pi's shape: connectors and the active path, [session info], tool calls by their command", async () => {
    const { page, errors } = await open(pageFile);
    await page.screenshot({ path: path.join(ARTIFACTS, "tree.png") });
    const texts = await page.locator("#tree .tree-node").allInnerTexts();
    expect(texts.some((t) => t.includes("├─"))).toBe(true);
    expect(texts.some((t) => t.includes("└─"))).toBe(true);
    expect(texts).toContainEqual(expect.stringContaining("[session info]: Parity demo"));
    expect(texts).toContainEqual(expect.stringContaining("$ ls src"));
    // The active path is marked; the leaf is the active node.
    expect(await page.locator("#tree .tree-node.on-path .tree-marker").count()).toBeGreaterThan(0);
    expect(await page.locator("#tree .tree-node.active").innerText()).toContain("After the summary");
    expect(errors).toEqual([]);
  });

  it("the Default filter hides data-only custom entries and settings, as pi's does; All shows them", async () => {
    const { page, errors } = await open(pageFile);
    const nodes = page.locator("#tree .tree-node");
    const texts = await nodes.allInnerTexts();
    expect(texts.filter((t) => t.includes("my-ext-state"))).toEqual([]);
    expect(texts.filter((t) => t.includes("faux-2"))).toEqual([]);
    await page.click('.filters button[data-filter="all"]');
    expect(await nodes.allInnerTexts()).toContainEqual(expect.stringContaining("my-ext-state"));
    expect(errors).toEqual([]);
  });

  it("the role column never runs into the text: '[branch summary]: User tried…', not 'branch_summaryUser tried…'", async () => {
    const { page, errors } = await open(pageFile);
    const nodes = page.locator("#tree .tree-node");
    await page.click('.filters button[data-filter="all"]');
    const glued = await nodes.evaluateAll((lis) =>
      lis.flatMap((li) => {
        const kind = li.querySelector(".kind") as HTMLElement | null;
        if (!kind) return [`no role: ${li.textContent}`];
        const text = li.textContent ?? "";
        const after = text.slice(text.indexOf(kind.textContent ?? "") + (kind.textContent ?? "").length);
        const next = kind.nextElementSibling as HTMLElement | null;
        const overlaps = next && next.getBoundingClientRect().left < kind.getBoundingClientRect().right + 2;
        return after && !/^\s/.test(after) ? [`glued: ${text}`] : overlaps ? [`overlaps: ${text}`] : [];
      }),
    );
    expect(glued).toEqual([]);
    const texts = await nodes.allInnerTexts();
    expect(texts).toContainEqual(expect.stringMatching(/\[branch summary\]: User tried another approach first\./));
    expect(texts).toContainEqual(expect.stringMatching(/\[my-ext\]: hello from my extension/));
    expect(errors).toEqual([]);
  });

  it("a model switch is an event in the flow: 'Switched to model: provider/model'", async () => {
    const { page, errors } = await open(pageFile);
    expect(await page.locator("#messages .entry.note").allInnerTexts()).toContainEqual(expect.stringContaining("Switched to model: faux-other/faux-2"));
    expect(errors).toEqual([]);
  });

  it("times are shown in the reader's local time (the ISO time on hover)", async () => {
    const { page, errors } = await open(pageFile);
    const time = page.locator("#messages .entry-head .time").first();
    const first = sessionEntries().find((e) => e.type === "message")!;
    expect(await time.innerText()).toBe(await page.evaluate((t) => new Date(t).toLocaleString(), first.timestamp as string));
    expect(await time.getAttribute("title")).toBe(first.timestamp);
    expect(errors).toEqual([]);
  });

  it("on a narrow window the tree folds behind a button", async () => {
    const { page, errors } = await open(pageFile, { width: 600, height: 900 });
    await page.screenshot({ path: path.join(ARTIFACTS, "narrow.png") });
    expect(await page.locator("#sidebar").isVisible()).toBe(false);
    expect(await page.locator("#tree-toggle").isVisible()).toBe(true);
    // The conversation starts at the top of the first screen, not below a tree.
    expect(await onFirstScreen(page, "Show me the files")).toBe(true);
    await page.click("#tree-toggle");
    expect(await page.locator("#sidebar").isVisible()).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, "narrow-tree-open.png") });
    await page.locator("#tree .tree-node", { hasText: "Another way" }).click();
    expect(await page.locator("#sidebar").isVisible()).toBe(false);
    expect(await page.locator("#messages .entry.user").allInnerTexts()).toContainEqual(expect.stringContaining("Another way"));
    expect(errors).toEqual([]);
  });

  it("a v1 session has no blank tree row: an aborted empty answer reads 'assistant: (aborted)'", async () => {
    const { page, errors } = await open(v1File);
    await page.screenshot({ path: path.join(ARTIFACTS, "v1.png") });
    // A row that says nothing but its role ("assistant", "assistant:") is blank.
    const blank = (await page.locator("#tree .tree-node").allInnerTexts()).filter((t) => /^(\w+:?)?$/.test(t.replace(/[│├└─•\s]/g, "")));
    expect(blank).toEqual([]);
    expect(await page.locator("#tree .tree-node").allInnerTexts()).toContainEqual(expect.stringContaining("assistant: (aborted)"));
    expect(errors).toEqual([]);
  });

  it("the sidebar opens scrolled to the current leaf (the last of ~1,000 entries)", async () => {
    const { page, errors } = await open(v1File);
    await page.waitForSelector("#tree .tree-node.active");
    const inView = await page.evaluate(() => {
      const side = document.getElementById("sidebar")!.getBoundingClientRect();
      const leaf = document.querySelector("#tree .tree-node.active")!.getBoundingClientRect();
      return leaf.top >= side.top && leaf.bottom <= side.bottom;
    });
    expect(inView).toBe(true);
    expect(errors).toEqual([]);
  });

  it("a redacted page names no home directory: /home/…, /root and this user's home are ~", async () => {
    const html = readFileSync(redactedFile, "utf8");
    const data = Buffer.from(/<script id="session-data" type="application\/json">([^<]+)<\/script>/.exec(html)![1], "base64").toString("utf8");
    const homePath = /(?<![A-Za-z0-9._~-])(?:\/home\/[A-Za-z0-9._-]+|\/root)(?=[/\s"'<>\\]|$)/;
    expect(readFileSync(pageFile, "utf8")).toMatch(homePath); // the plain page keeps them
    expect(html).not.toMatch(homePath);
    expect(data).not.toMatch(homePath);
    expect(html).not.toContain(sb.home);
    expect(data).not.toContain(sb.home);
    expect(data).toContain("~/work/plan.md");
    expect(data).toContain("~/code/parity");
    const { page, errors } = await open(redactedFile);
    expect(await page.locator("#stats").innerText()).toContain("project: ~/code/parity\n");
    expect(await page.locator("#messages .entry.user .text").first().innerText()).toContain("~/work/plan.md");
    expect(errors).toEqual([]);
  });
});
