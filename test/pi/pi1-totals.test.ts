// Issue 18 item 1: a pi 1.x session's totals are its assistant usage plus its `usage` entries
// (any kind), the usage of compactions and branch summaries, and tool results that carry usage
// (pi 1.6.0's AgentSession.getSessionStats). Every place pi-guard shows totals must agree with
// pi: `sessions list`, `stats`, the dashboard, and the JSON, Markdown and HTML export headers.

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatCost, formatTokens } from "../../src/sessions/describe.js";
import { launchChromium, openFile } from "../helpers/browser.js";
import { initRepo, ok, snapshot } from "../helpers/cli.js";
import { makePi1RichSession, makePi1Session, type Pi1Validation, validatePi1 } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox, sessionFiles } from "../helpers/tmp.js";

type Entry = Pi1Validation["entries"][number];
interface Totals {
  tokens: number;
  cost: number;
}

/** The test's own sum by pi's definition, checked below against pi's getSessionStats. */
function piDefinition(entries: readonly Entry[]): Totals {
  const t = { tokens: 0, cost: 0 };
  for (const e of entries) {
    type Usage = { input: number; output: number; cacheRead: number; cacheWrite: number; cost: { total: number } };
    const m = e.type === "message" ? (e.message as { role: string; usage?: Usage }) : undefined;
    const u = e.type === "usage" || e.type === "compaction" || e.type === "branch_summary" ? (e.usage as Usage | undefined) : m && (m.role === "assistant" || m.role === "toolResult") ? m.usage : undefined;
    if (!u) continue;
    t.tokens += u.input + u.output + u.cacheRead + u.cacheWrite;
    t.cost += u.cost.total;
  }
  return t;
}

function pathTo(entries: readonly Entry[], leafId: string | null): Entry[] {
  const byId = new Map(entries.map((e) => [e.id, e]));
  const out: Entry[] = [];
  for (let e = leafId ? byId.get(leafId) : undefined; e; e = e.parentId ? byId.get(e.parentId) : undefined) out.unshift(e);
  return out;
}

interface Made {
  id: string;
  file: string;
  pi: Pi1Validation;
  /** By pi's definition over the whole file (what pi shows for it). */
  file_: Totals;
  /** Over the entries not copied from its parent (what `stats` counts in its row). */
  own: Totals;
}

describe("pi 1.x session totals, by pi's definition, everywhere pi-guard shows them", () => {
  let sb: Sandbox;
  const made: Made[] = [];

  beforeAll(async () => {
    sb = makeSandbox("pi1-totals");
    const rich = await makePi1RichSession(sb.agentDir, sb.dir("ledger"));
    const other = await makePi1Session({
      agentDir: sb.agentDir,
      cwd: sb.dir("other"),
      turns: [
        { user: "hello", assistant: ["hi"], usage: { kind: "cache_warm" } },
        { user: "again", assistant: ["hi again"], usage: { kind: "prompt_probe", note: "a kind pi-guard does not know" } },
      ],
    });
    for (const s of [rich, rich.fork!, other]) {
      const pi = await validatePi1(readFileSync(s.file, "utf8"));
      made.push({ id: s.sessionId, file: s.file, pi, file_: piDefinition(pi.entries), own: piDefinition(pi.entries) });
    }
    const parentIds = new Set(made[0].pi.entries.map((e) => e.id));
    made[1].own = piDefinition(made[1].pi.entries.filter((e) => !parentIds.has(e.id)));
    await initRepo(sb);
    await snapshot(sb);
  }, 180_000);

  afterAll(() => sb?.cleanup());

  it("the sessions hold usage that is not an assistant message, and the test's sum is pi's own", () => {
    expect(sessionFiles(sb.sessionsDir)).toEqual(made.map((m) => m.file).sort());
    for (const m of made) {
      expect(m.pi.stats.tokens.total, m.id).toBe(m.file_.tokens);
      expect(m.pi.stats.cost, m.id).toBeCloseTo(m.file_.cost, 12);
      const assistantOnly = piDefinition(m.pi.entries.filter((e) => e.type === "message"));
      expect(m.file_.tokens, m.id).toBeGreaterThan(assistantOnly.tokens);
    }
  });

  it("sessions list --json: each session's tokens and cost are pi's", async () => {
    const list = JSON.parse((await ok(sb, ["sessions", "list", "--json"])).stdout) as Array<{ id: string; tokens: number; cost: number }>;
    // The evidence table of the report: pi's own totals against pi-guard's, per session file.
    const lines = ["session | pi getSessionStats tokens / cost | sessions list tokens / cost | assistant messages only"];
    for (const m of made) {
      const row = list.find((r) => r.id === m.id)!;
      const assistant = piDefinition(m.pi.entries.filter((e) => e.type === "message" && (e.message as { role: string }).role === "assistant"));
      lines.push(`${m.id} | ${m.pi.stats.tokens.total} / ${m.pi.stats.cost.toFixed(6)} | ${row.tokens} / ${row.cost.toFixed(6)} | ${assistant.tokens} / ${assistant.cost.toFixed(6)}`);
    }
    console.log(lines.join("\n"));
    for (const m of made) {
      const row = list.find((r) => r.id === m.id)!;
      expect({ id: m.id, tokens: row.tokens }).toEqual({ id: m.id, tokens: m.file_.tokens });
      expect(row.cost, m.id).toBeCloseTo(m.file_.cost, 12);
    }
  });

  it("stats --json and the dashboard: rows and totals are pi's, each entry counted once", async () => {
    const stats = JSON.parse((await ok(sb, ["stats", "--json"])).stdout) as {
      totals: { tokens: number; cost: number; input: number };
      sessions: Array<{ id: string; tokens: number; cost: number }>;
    };
    for (const m of made) {
      const row = stats.sessions.find((r) => r.id === m.id)!;
      expect({ id: m.id, tokens: row.tokens }).toEqual({ id: m.id, tokens: m.own.tokens });
      expect(row.cost, m.id).toBeCloseTo(m.own.cost, 12);
    }
    const all = made.reduce((t, m) => ({ tokens: t.tokens + m.own.tokens, cost: t.cost + m.own.cost }), { tokens: 0, cost: 0 });
    expect(stats.totals.tokens).toBe(all.tokens);
    expect(stats.totals.cost).toBeCloseTo(all.cost, 12);

    const page = path.join(sb.root, "dashboard.html");
    await ok(sb, ["dashboard", "--output", page]);
    const html = readFileSync(page, "utf8");
    const value = (key: string) => Number(new RegExp(`data-stat="${key}" data-value="([^"]+)"`).exec(html)![1]);
    expect(value("tokens")).toBe(all.tokens);
    expect(value("cost")).toBeCloseTo(all.cost, 12);
  });

  it("export headers: JSON (whole session), Markdown (the exported path) and HTML (whole session) show pi's totals", async () => {
    const browser = await launchChromium();
    try {
      for (const m of made) {
        const json = JSON.parse((await ok(sb, ["export", m.id, "--format", "json"])).stdout) as { stats: { tokens: number; cost: number } };
        expect({ id: m.id, tokens: json.stats.tokens }).toEqual({ id: m.id, tokens: m.file_.tokens });
        expect(json.stats.cost, m.id).toBeCloseTo(m.file_.cost, 12);

        const onPath = piDefinition(pathTo(m.pi.entries, m.pi.leafId));
        const md = (await ok(sb, ["export", m.id, "--format", "markdown"])).stdout;
        expect(md, m.id).toContain(`${formatTokens(onPath.tokens)} / ${formatCost(onPath.cost)}`);

        const out = path.join(sb.root, `${m.id}.html`);
        await ok(sb, ["export", m.id, "--format", "html", "--output", out]);
        const { page, errors } = await openFile(browser, out);
        const shown = await page.locator("#stats").innerText();
        expect(shown, m.id).toContain(`tokens: ${formatTokens(m.file_.tokens)}`);
        expect(shown, m.id).toContain(`cost: ${formatCost(m.file_.cost)}`);
        expect(errors).toEqual([]);
        await page.context().close();
      }
    } finally {
      await browser.close();
    }
  }, 120_000);
});

describe("a provider whose totalTokens is not the sum of the four counts", () => {
  it("is counted as pi counts it: input + output + cache read + cache write", async () => {
    const sb = makeSandbox("pi1-total-tokens");
    try {
      const made = await makePi1Session({ agentDir: sb.agentDir, cwd: sb.dir("p"), turns: [{ user: "hello", assistant: ["hi"] }, { user: "more", assistant: ["sure"] }] });
      // pi stores what the provider reported; some report reasoning or other tokens in totalTokens
      // on top of the four counts. Here the provider's figure is 500 higher on every answer.
      const lines = readFileSync(made.file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, { role?: string; usage?: { totalTokens: number } }>);
      let changed = 0;
      for (const e of lines) if (e.message?.role === "assistant" && e.message.usage) (e.message.usage.totalTokens += 500), changed++;
      expect(changed).toBe(2);
      writeFileSync(made.file, lines.map((e) => JSON.stringify(e)).join("\n") + "\n");
      const pi = await validatePi1(readFileSync(made.file, "utf8"));
      const list = JSON.parse((await ok(sb, ["sessions", "list", "--json", "--live"])).stdout) as Array<{ id: string; tokens: number }>;
      expect(list.find((r) => r.id === made.sessionId)?.tokens).toBe(pi.stats.tokens.total);
      expect(pi.stats.tokens.total).toBe(piDefinition(pi.entries).tokens);
    } finally {
      sb.cleanup();
    }
  }, 60_000);
});
