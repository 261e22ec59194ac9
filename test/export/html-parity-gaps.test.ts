// The HTML page's last gaps against pi's own (`pi --export`), in real headless Chromium on pages
// exported from a real pi session (pi's agent loop, its real edit/bash/read tools): an edit is
// shown as pi's diff, a skill block as a folded skill card (Markdown too), messages pi hides in
// its terminal stay hidden until "Show hidden messages" (H), pi's keys (T, O, H) and search keys
// work, and a filtered tree is laid out anew so no connector dangles. Screenshots go to
// test-artifacts/ (git-ignored).

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

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-html-gaps");
const APP_LINES = 30;
const LONG_LINES = 60;

// The text pi writes for `/skill:release-notes apply it` (agent-session.js _expandSkillCommand):
// the block opens the message, the user's words follow after a blank line.
const SKILL_FILE = "/opt/skills/release-notes/SKILL.md";
const SKILL_MESSAGE = `<skill name="release-notes" location="${SKILL_FILE}">\nReferences are relative to /opt/skills/release-notes.\n\n# Release notes\n\nWrite **short** notes, one line per change.\n</skill>\n\nplease apply the skill`;

let sb: Sandbox;
let session: PiSessionResult;
let browser: Browser;
let pageFile: string;
let treeFile: string;
let markdown: string;

beforeAll(async () => {
  sb = makeSandbox("html-gaps");
  writePiConfigFiles(sb.agentDir);
  const cwd = path.join(sb.home, "code", "gaps");
  mkdirSync(path.join(cwd, "src"), { recursive: true });
  const app = path.join(cwd, "src", "app.ts");
  writeFileSync(app, Array.from({ length: APP_LINES }, (_, i) => `export const value${i} = ${i};`).join("\n") + "\n");
  session = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    thinkingLevel: "medium",
    turns: [
      {
        user: SKILL_MESSAGE,
        assistant: [
          [fauxThinking("I will change value3 and value20."), fauxToolCall("edit", { path: app, edits: [{ oldText: "export const value3 = 3;", newText: "export const value3 = 33;\nexport const value3b = 34;" }, { oldText: "export const value20 = 20;", newText: "export const value20 = 200;" }] })],
          // An edit pi refuses (the text is not in the file): no diff in its result.
          [fauxToolCall("edit", { path: app, edits: [{ oldText: "export const missing = 0;", newText: "export const found = 1;" }] })],
          [fauxToolCall("bash", { command: `seq 1 ${LONG_LINES}` })],
          "Done: value3 and value20 changed.",
        ],
      },
    ],
  });
  // What an extension adds, through pi's own SessionManager (on the sandbox file): a message pi
  // keeps out of its terminal (display: false), one it shows, and a data-only entry.
  const sm = SessionManager.open(session.file);
  sm.appendCustomMessageEntry("my-ext", "a note pi hides in its terminal", false);
  sm.appendCustomMessageEntry("my-ext", "a note pi shows", true);
  sm.appendCustomEntry("my-ext-state", { counter: 7 });
  sm.appendMessage({ role: "user", content: "Thanks", timestamp: Date.now() });

  // A tree to filter: a branch point with three children, the last of which the search hides.
  const tree = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      { user: "fruit one", assistant: ["Reply one."] },
      { user: "fruit kiwi", assistant: ["Reply kiwi."] },
      { user: "fruit plum", assistant: ["Reply plum."], branchFromTurn: 0 },
      { user: "veg carrot", assistant: ["Reply carrot."], branchFromTurn: 0 },
    ],
  });

  pageFile = path.join(sb.root, "gaps.html");
  treeFile = path.join(sb.root, "tree.html");
  await runOk(sb, ["export", session.sessionId, "-o", pageFile]);
  await runOk(sb, ["export", tree.sessionId, "-o", treeFile]);
  markdown = (await runOk(sb, ["export", session.sessionId, "--format", "markdown"])).stdout;
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of [pageFile, treeFile]) copyFileSync(f, path.join(ARTIFACTS, path.basename(f)));
  browser = await launchChromium();
}, 120_000);

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

function sessionEntries(): Record<string, any>[] {
  return readFileSync(session.file, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
}

/** The diff pi itself recorded for the first (successful) edit. */
function piDiff(): string {
  const result = sessionEntries().find((e) => e.message?.role === "toolResult" && e.message.toolName === "edit" && !e.message.isError);
  expect(typeof result?.message.details?.diff).toBe("string");
  return result!.message.details.diff;
}

const background = (page: Page, selector: string) => page.locator(selector).first().evaluate((n) => getComputedStyle(n).backgroundColor);

describe("an edit call is shown as pi shows it: a diff, not its arguments", () => {
  it("the diff pi recorded, line by line with its line numbers, removed and added lines coloured; no oldText/newText JSON", async () => {
    const { page, errors } = await open(pageFile);
    const edit = page.locator(".tool-call", { has: page.locator(".tool-name", { hasText: "edit" }) }).first();
    await edit.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, "edit-diff.png") });
    const diff = piDiff();
    expect(await edit.locator(".tool-diff > div").allInnerTexts()).toEqual(diff.split("\n"));
    expect(await edit.locator(".diff-removed").first().innerText()).toMatch(/^- ?4 export const value3 = 3;$/);
    expect(await edit.locator(".diff-added").allInnerTexts()).toEqual(expect.arrayContaining([expect.stringMatching(/^\+ ?4 export const value3 = 33;$/), expect.stringMatching(/^\+ ?5 export const value3b = 34;$/)]));
    const [added, removed, context] = [await background(page, ".diff-added"), await background(page, ".diff-removed"), await background(page, ".diff-context")];
    expect(new Set([added, removed, context]).size).toBe(3);
    expect(await edit.innerText()).not.toContain("oldText");
    expect(await edit.innerText()).not.toContain("Successfully replaced");
    expect(errors).toEqual([]);
  });

  it("an edit pi refused shows what it asked for as - and + lines, with pi's error", async () => {
    const { page, errors } = await open(pageFile);
    const failed = page.locator(".tool-call.error", { has: page.locator(".tool-name", { hasText: "edit" }) });
    expect(await failed.locator(".diff-removed").allInnerTexts()).toEqual(["-export const missing = 0;"]);
    expect(await failed.locator(".diff-added").allInnerTexts()).toEqual(["+export const found = 1;"]);
    expect(await failed.locator(".tool-output").innerText()).toMatch(/Could not find/i);
    expect(errors).toEqual([]);
  });

  it("Markdown shows the edit as a diff fence holding pi's diff", () => {
    expect(markdown).toContain("```diff\n" + piDiff() + "\n```");
    expect(markdown).not.toContain('"oldText": "export const value3 = 3;"');
  });
});

describe("a skill block is a folded skill card, never raw tags", () => {
  it("the page shows '[skill] release-notes', folded, with its rendered text on click, and the user's words below", async () => {
    const { page, errors } = await open(pageFile);
    const entry = page.locator(".entry.user").first();
    const card = entry.locator("details.skill");
    expect(await card.locator("summary").innerText()).toBe("[skill] release-notes");
    expect(await card.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
    expect(await entry.locator(":scope > .text").innerText()).toBe("please apply the skill");
    await card.locator("summary").click();
    expect(await card.locator(".skill-location").innerText()).toBe(SKILL_FILE);
    expect(await card.locator("strong").innerText()).toBe("short");
    await page.screenshot({ path: path.join(ARTIFACTS, "skill.png") });
    expect(await page.locator("body").innerText()).not.toContain("<skill");
    expect(await page.locator("#tree .tree-node").allInnerTexts()).toContainEqual(expect.stringContaining("skill: release-notes · user: please apply the skill"));
    expect(errors).toEqual([]);
  });

  it("Markdown folds the skill under its name and keeps the user's words", () => {
    expect(markdown).toContain("<summary>Skill: <code>release-notes</code></summary>");
    expect(markdown).toContain("Write **short** notes, one line per change.");
    expect(markdown).toContain("\n\nplease apply the skill");
    expect(markdown).not.toContain("&lt;skill");
    expect(markdown).not.toContain("&lt;/skill>");
  });
});

describe("hidden messages and pi's keys", () => {
  it("a message pi hides in its terminal is hidden until 'Show hidden messages' or H, data-only entries with it", async () => {
    const { page, errors } = await open(pageFile);
    const hidden = page.locator(".entry", { hasText: "a note pi hides in its terminal" });
    const data = page.locator(".entry", { hasText: "my-ext-state" });
    expect(await page.locator(".entry", { hasText: "a note pi shows" }).isVisible()).toBe(true);
    expect(await hidden.isVisible()).toBe(false);
    expect(await data.isVisible()).toBe(false);
    await page.click("#toggle-hidden");
    expect(await hidden.isVisible()).toBe(true);
    expect(await hidden.locator(".hidden-note").innerText()).toBe("hidden in terminal");
    expect(await data.locator("pre").innerText()).toContain('"counter": 7');
    expect(await page.locator("#toggle-hidden").innerText()).toBe("Hide hidden messages");
    await page.locator("#title").click();
    await page.keyboard.press("h");
    expect(await hidden.isVisible()).toBe(false);
    await page.keyboard.press("H");
    expect(await hidden.isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });

  it("Markdown marks the message pi hides in its terminal", () => {
    const section = markdown.split("\n## ").find((s) => s.includes("a note pi hides in its terminal"));
    expect(section).toMatch(/<sub>hidden in pi's terminal · /);
    expect(markdown.split("\n## ").find((s) => s.includes("a note pi shows"))).not.toContain("hidden in pi's terminal");
  });

  it("T toggles thinking, O expands outputs, / focuses search, N and Shift+N step through matches, Esc clears; typing in the search types", async () => {
    const { page, errors } = await open(pageFile);
    expect(await page.locator("#help-keys").innerText()).toContain("T thinking · O outputs · H hidden messages · / search · N next match, Shift+N previous · Esc clear search");
    const thinking = page.locator(".thinking").first();
    expect(await thinking.isVisible()).toBe(true);
    await page.keyboard.press("t");
    expect(await thinking.isVisible()).toBe(false);
    await page.keyboard.press("t");
    expect(await thinking.isVisible()).toBe(true);

    const seq = page.locator(".tool-call", { hasText: `seq 1 ${LONG_LINES}` }).locator(".tool-output");
    expect(await seq.innerText()).not.toContain(String(LONG_LINES));
    await page.keyboard.press("o");
    expect((await seq.innerText()).trim().split("\n")).toHaveLength(LONG_LINES);
    expect(await page.locator("#expand-tools").innerText()).toBe("Shorten outputs");

    await page.keyboard.press("/");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("search");
    await page.keyboard.type("value3");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => /^1 \/ \d+$/.test(document.getElementById("search-count")!.textContent!));
    const total = Number((await page.locator("#search-count").innerText()).split("/ ")[1]);
    expect(total).toBeGreaterThan(1);
    expect(await thinking.isVisible()).toBe(true); // the "t" of the query did not toggle thinking
    await page.locator("#title").click();
    await page.keyboard.press("n");
    expect(await page.locator("#search-count").innerText()).toBe(`2 / ${total}`);
    await page.keyboard.press("Shift+N");
    expect(await page.locator("#search-count").innerText()).toBe(`1 / ${total}`);
    await page.keyboard.press("Escape");
    expect(await page.locator("#search").inputValue()).toBe("");
    expect(await page.locator("mark.hit").count()).toBe(0);
    expect(errors).toEqual([]);
  });
});

describe("a filtered tree keeps its connectors", () => {
  /** Each shown tree node as its prefix and role text, e.g. "├─ user: fruit kiwi". */
  async function treeLines(page: Page): Promise<string[]> {
    return page.locator("#tree .tree-node").evaluateAll((lis) => lis.map((li) => `${li.querySelector(".tree-prefix")?.textContent ?? ""}${li.querySelector(".kind")?.textContent ?? ""} ${li.querySelector(".tree-text")?.textContent ?? ""}`.trimEnd()));
  }

  it("the tree search hides the last branch: the one before it closes with └─, no ├─ or │ is left hanging", async () => {
    const { page, errors } = await open(treeFile);
    expect(await treeLines(page)).toEqual([
      "user: fruit one",
      "assistant: Reply one.",
      "├─ user: fruit kiwi",
      "│  assistant: Reply kiwi.",
      "├─ user: fruit plum",
      "│  assistant: Reply plum.",
      "└─ user: veg carrot",
      "   assistant: Reply carrot.",
    ]);
    await page.fill("#tree-search", "fruit");
    await page.screenshot({ path: path.join(ARTIFACTS, "tree-filtered.png") });
    expect(await treeLines(page)).toEqual(["user: fruit one", "├─ user: fruit kiwi", "└─ user: fruit plum"]);
    // One branch shown: no branch point is drawn at all.
    await page.fill("#tree-search", "kiwi");
    expect(await treeLines(page)).toEqual(["user: fruit kiwi", "assistant: Reply kiwi."]);
    expect(errors).toEqual([]);
  });

  it("the User filter draws the branches between the shown user messages", async () => {
    const { page, errors } = await open(treeFile);
    await page.click('.filters button[data-filter="user"]');
    expect(await treeLines(page)).toEqual(["user: fruit one", "├─ user: fruit kiwi", "├─ user: fruit plum", "└─ user: veg carrot"]);
    expect(errors).toEqual([]);
  });
});
