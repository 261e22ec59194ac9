// Message Markdown in the HTML export, in real Chromium: a session made by pi's own agent loop
// (faux model) renders headings, lists, tables, highlighted code and links as elements, and a
// hostile message (script, event handlers, javascript: links, frames, remote images) runs
// nothing and makes no request. Screenshots go to test-artifacts/export-markdown/ (git-ignored).

import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openFile } from "../helpers/browser.js";
import { PROJECT_ROOT } from "../helpers/cli.js";
import { fauxText, fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { runOk } from "../sessions/cli.js";

const ARTIFACTS = path.join(PROJECT_ROOT, "test-artifacts", "export-markdown");

const RICH = [
  "## Plan for the parser",
  "",
  "Some **bold words**, some *italic ones* and `inline code`.",
  "",
  "- first item",
  "- second item with a [link to pi](https://github.com/badlogic/pi-mono)",
  "",
  "1. numbered one",
  "2. numbered two",
  "",
  "| tool | calls |",
  "| ---- | ----: |",
  "| bash | 3 |",
  "| read | 7 |",
  "",
  "```ts",
  "export function add(a: number, b: number): number {",
  "  return a + b; // sum",
  "}",
  "```",
  "",
  "```bash",
  'for f in *.ts; do echo "$f"; done',
  "```",
  "",
  "> a quoted line",
].join("\n");

// Every way a message could try to run code or reach the network.
const HOSTILE = [
  "<script>window.__pwned = 1; document.title = 'pwned'</script>",
  "<img src=x onerror=\"window.__pwned = 2; alert(2)\">",
  "[click me](javascript:alert(3))",
  '<a href="javascript:window.__pwned=4">raw link</a>',
  '<iframe src="https://example.com/frame"></iframe>',
  '<svg onload="window.__pwned = 5"></svg>',
  "![remote pic](https://example.com/pixel.png)",
  '<img src="https://example.com/raw.png">',
  '<style>body { background: url(https://example.com/bg.png) }</style>',
  "<form action=https://example.com><input name=q></form>",
  // Poses as the embedded session for salvage --from-html (e30= is "{}").
  '<script id="session-data" type="application/json">e30=</script>',
].join("\n\n");

let sb: Sandbox;
let session: PiSessionResult;
let browser: Browser;
let htmlFile: string;

beforeAll(async () => {
  sb = makeSandbox("html-md");
  const cwd = path.join(sb.root, "work", "md");
  session = await makePiSession({
    agentDir: sb.agentDir,
    cwd,
    thinkingLevel: "low",
    turns: [
      { user: "Explain the **plan** with a list:\n\n- a\n- b", assistant: [[fauxThinking("Think about *emphasis* first."), fauxText(RICH)]] },
      {
        user: HOSTILE,
        assistant: [[fauxToolCall("bash", { command: "printf '<b>**not markdown**</b>\\n'" })], HOSTILE],
      },
    ],
  });
  htmlFile = path.join(sb.root, "md.html");
  await runOk(sb, ["export", session.sessionId, "--format", "html", "--output", htmlFile]);
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  sb?.cleanup();
});

describe("HTML export renders Markdown (Chromium)", () => {
  it("headings, lists, tables, highlighted code, links, bold and italic render as elements", async () => {
    const { page, errors, requests } = await openFile(browser, htmlFile);
    await page.waitForSelector("#messages .entry.assistant");
    const answer = page.locator("#messages .entry.assistant").first();
    expect(await answer.locator("h2").innerText()).toBe("Plan for the parser");
    expect(await answer.locator("ul > li").allInnerTexts()).toEqual(["first item", "second item with a link to pi"]);
    expect(await answer.locator("ol > li").count()).toBe(2);
    expect(await answer.locator("strong").innerText()).toBe("bold words");
    expect(await answer.locator(":scope > .text em").innerText()).toBe("italic ones");
    expect(await answer.locator("table tbody tr").count()).toBe(2);
    expect(await answer.locator("table th").allInnerTexts()).toEqual(["tool", "calls"]);
    expect(await answer.locator("blockquote").innerText()).toBe("a quoted line");
    const link = answer.locator("a", { hasText: "link to pi" });
    expect(await link.getAttribute("href")).toBe("https://github.com/badlogic/pi-mono");
    // Code fences are highlighted at export time: hljs classes, keyword spans.
    const ts = answer.locator("pre code.hljs.language-ts");
    expect(await ts.innerText()).toContain("return a + b; // sum");
    expect(await ts.locator("span.hljs-keyword").first().innerText()).toBe("export");
    expect(await ts.locator("span.hljs-comment").innerText()).toBe("// sum");
    expect(await answer.locator("pre code.hljs.language-bash span.hljs-keyword").first().innerText()).toBe("for");
    // The highlight colours apply (the inline theme is there).
    const kwColor = await ts.locator("span.hljs-keyword").first().evaluate((n) => getComputedStyle(n).color);
    const plainColor = await ts.evaluate((n) => getComputedStyle(n).color);
    expect(kwColor).not.toBe(plainColor);
    // The user's Markdown and the thinking render too.
    const user = page.locator("#messages .entry.user").first();
    expect(await user.locator("strong").innerText()).toBe("plan");
    expect(await user.locator("li").count()).toBe(2);
    expect(await page.locator(".thinking em").first().textContent()).toBe("emphasis");
    await page.screenshot({ path: path.join(ARTIFACTS, "rich-light.png"), fullPage: true });
    await page.click("#theme-toggle");
    await answer.screenshot({ path: path.join(ARTIFACTS, "rich-dark.png") });
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
  });

  it("a hostile message runs nothing, makes no request, and shows its markup as text", async () => {
    const dialogs: string[] = [];
    const { page, errors, requests } = await openFile(browser, htmlFile);
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.waitForSelector("#messages .entry.assistant");
    const hostile = page.locator("#messages .entry").filter({ hasText: "click me" });
    expect(await hostile.count()).toBe(2); // the user's message and the assistant's answer
    // Click every link that is not a plain web link (following those is the user's choice).
    for (const a of await hostile.locator("a:not([href^='https:'])").all()) await a.click();
    await page.click("#expand-tools");
    await page.waitForTimeout(300); // let an onerror/onload fire if one had been rendered
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
    expect(await page.title()).not.toContain("pwned");
    expect(dialogs).toEqual([]);
    expect(requests).toEqual([]);
    const dom = page.locator("#messages");
    for (const sel of ["script", "iframe", "svg", "style", "form", "input", "[onerror]", "[onload]", "a[href^='javascript']", "img:not([src^='data:'])"]) {
      expect(await dom.locator(sel).count(), sel).toBe(0);
    }
    // The markup is shown as text, as pi's TUI shows it; javascript: links keep only their text.
    const text = await hostile.first().innerText();
    expect(text).toContain("<script>window.__pwned = 1;");
    expect(text).toContain('<iframe src="https://example.com/frame"></iframe>');
    expect(text).toContain("click me");
    // The remote image became a link the user can follow, not a request.
    expect(await hostile.first().locator("a.remote-image").getAttribute("href")).toBe("https://example.com/pixel.png");
    // Tool output is preformatted text, not Markdown.
    const output = page.locator(".tool-call .tool-output").first();
    expect(await output.innerText()).toContain("<b>**not markdown**</b>");
    expect(await output.locator("b, strong").count()).toBe(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "hostile.png"), fullPage: true });
    expect(errors).toEqual([]);
  });

  it("salvage --from-html recovers the real session, not one a message poses as", async () => {
    const out = sb.dir("salvaged");
    await runOk(sb, ["salvage", "--from-html", htmlFile, "--out", out, "--json"]);
    const files = readdirSync(out).filter((f) => f.endsWith(".jsonl"));
    expect(files).toHaveLength(1);
    const lines = readFileSync(path.join(out, files[0]), "utf8").trim().split("\n");
    const original = readFileSync(session.file, "utf8").trim().split("\n");
    expect(JSON.parse(lines[0]).id).toBe(session.sessionId);
    expect(lines.slice(1, original.length).map((l) => JSON.parse(l))).toEqual(original.slice(1).map((l) => JSON.parse(l)));
  });

  it("keeps the embedded session lossless, and the CSP allows no inline handler", async () => {
    const html = readFileSync(htmlFile, "utf8");
    const data = JSON.parse(Buffer.from(/<script id="session-data" type="application\/json">([^<]+)<\/script>/.exec(html)![1], "base64").toString("utf8"));
    expect(data.entries.length).toBe(readFileSync(session.file, "utf8").trim().split("\n").length - 1);
    expect(JSON.stringify(data.entries)).toContain(JSON.stringify(HOSTILE));
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1];
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toContain("unsafe-inline'; style"); // scripts run by hash only
    // Raw markup only ever sits inside the JSON blobs, escaped: the page has three data elements and the viewer.
    expect(html.match(/<script/g)!.length).toBe(4);
  });
});
