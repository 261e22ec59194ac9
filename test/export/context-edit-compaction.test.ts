// Where pi 1.x applies a context edit: its context is the newest compaction on the path, the
// entries from that compaction's firstKeptEntryId on, and those after it (buildContextEntries);
// an edit counts only when both it and its target are there (buildSessionProjection). pi-guard
// marks a message "edited in context" in `sessions show`, Markdown and HTML exactly where pi 1.6.0's
// own projection of the same pi-written session differs from the message (test/helpers/pi1.ts).
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { launchChromium, openFile } from "../helpers/browser.js";
import { makePi1Session, validatePi1, type Pi1SessionResult, type Pi1Validation } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let session: Pi1SessionResult;
let pi: Pi1Validation;
let browser: Browser | undefined;

beforeAll(async () => {
  sb = makeSandbox("ctx-edit-compaction");
  const cwd = path.join(sb.home, "proj");
  mkdirSync(cwd, { recursive: true });
  session = await makePi1Session({
    agentDir: sb.agentDir,
    cwd,
    turns: [
      { user: "First question", assistant: ["First answer."] },
      // Edited before the compaction that then summarizes it: pi ignores this edit.
      { user: "Second question", assistant: ["Second answer."], contextEdits: [{ turn: 0, replacement: { content: "First answer (edited before the compaction)." } }] },
      { user: "Third question", assistant: ["Third answer."], compact: "The user asked three questions." },
      // After the compaction: pi applies an edit of a message still in its context, not of one summarized away.
      { user: "Fourth question", assistant: ["Fourth answer."], contextEdits: [{ turn: 0, replacement: { content: "First answer (edited after the compaction)." } }, { turn: 3 - 1, replacement: null }] },
      { user: "Fifth question", assistant: ["Fifth answer."], contextEdits: [{ turn: 3, replacement: { content: "Fourth answer (edited)." } }] },
    ],
  });
  pi = await validatePi1(readFileSync(session.file, "utf8"), { expectMessages: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

/** What pi applies, by entry id: "omitted" or "replaced". */
const piEdited = (): Record<string, string> => pi.contextEdited;

describe("context edits are marked where pi 1.6.0 applies them (compaction)", () => {
  it("the session holds an edit pi ignores (its target summarized away) and one it applies", () => {
    const edits = pi.entries.filter((e) => e.type === "context_edit");
    expect(edits.length).toBe(4);
    const targets = new Set(edits.map((e) => e.targetId as string));
    // Some edited targets are marked by pi, some are not: the case this test is about.
    const applied = Object.keys(piEdited());
    expect(applied.length).toBeGreaterThan(0);
    expect([...targets].filter((t) => !applied.includes(t)).length).toBeGreaterThan(0);
  });

  it("sessions show marks exactly the entries pi edits", async () => {
    const out = (await ok(sb, ["sessions", "show", session.sessionId])).stdout;
    const marked: Record<string, string> = {};
    for (const m of out.matchAll(/\[([0-9a-f]{8})\][^\n]*\[edited in context by [0-9a-f]+: (omitted|content replaced)\]/g)) marked[m[1]] = m[2] === "omitted" ? "omitted" : "replaced";
    expect(marked).toEqual(piEdited());
  });

  it("Markdown marks exactly the entries pi edits", async () => {
    const md = (await ok(sb, ["export", session.sessionId, "-f", "markdown"])).stdout;
    const marked: Record<string, string> = {};
    for (const m of md.matchAll(/id ([0-9a-f]{8})[^\n]*edited in context by [0-9a-f]+: (omitted|content replaced)/g)) marked[m[1]] = m[2] === "omitted" ? "omitted" : "replaced";
    expect(marked).toEqual(piEdited());
  });

  it("HTML marks exactly the entries pi edits", async () => {
    const file = path.join(sb.root, "page.html");
    await ok(sb, ["export", session.sessionId, "-f", "html", "-o", file]);
    browser = await launchChromium();
    const { page, errors } = await openFile(browser, file);
    const marked = await page.evaluate(() => {
      const out: Record<string, string> = {};
      for (const box of Array.from(document.querySelectorAll<HTMLElement>("#messages .entry"))) {
        const mark = box.querySelector(".edited");
        if (mark && box.dataset.id) out[box.dataset.id] = mark.textContent === "omitted from context" ? "omitted" : "replaced";
      }
      return out;
    });
    expect(marked).toEqual(piEdited());
    expect(errors).toEqual([]);
  }, 60_000);
});
