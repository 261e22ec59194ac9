// One conformance suite for every engine (src/engine/types.ts), as test/targets/conformance.ts is
// for storage: each case drives the engine through the interface only, on a real pi session in a
// sandbox, and checks what the engine interface promises: the snapshot policy (reserved tags, a
// missing agent dir, the loss guard), choosing by time, a byte-identical restore, forget's
// last-snapshot guard, check and status, the session catalog of every agent (a real Claude Code
// session beside pi's), forget with prune, and restore and status of one agent. native.test.ts
// and restic.test.ts run it (restic: the Debian package's binary).
import { readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../src/config/config.js";
import { openEngine } from "../../src/engine/open.js";
import type { Engine, EngineKind } from "../../src/engine/types.js";
import type { SessionRecord } from "../../src/sessions/catalog.js";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { callTool, say } from "../helpers/fake-model/server.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

export const CONFORMANCE_CASES = [
  "init creates the repository once; a second init is refused",
  "backup snapshots the agent dir and lists it; reserved tags are refused and take nothing",
  "findSnapshot chooses by time, id prefix and latest",
  "restore into a folder puts the session back byte-identical",
  "a missing agent dir is an error, and with allowEmpty still one while a snapshot holds it",
  "a snapshot that loses every session is tagged suspect-loss; latest skips it",
  "forget keeps by policy and refuses to empty a group",
  "check finds no errors; status names the last good snapshot",
  "sessions: every agent's sessions, live and only in snapshots, read by its adapter into the same model",
  "forget with prune frees what it forgot; the latest snapshot still restores; prune after a dry run is refused",
  "restore and status with an agent: only that agent's roots, its last good snapshot; an agent the snapshot lacks is not found",
] as const;

const PASSWORD = "conformance password";
const pause = () => new Promise((r) => setTimeout(r, 1100));

async function rejects(p: Promise<unknown>): Promise<Error & { kind?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { kind?: string };
  }
  throw new Error("expected a rejection");
}

/** `repo(sb)`: the repository location the engine under test is selected by. */
export function engineConformance(kind: EngineKind, repo: (sb: Sandbox) => string): void {
  describe(`engine conformance: ${kind}`, () => {
    let sb: Sandbox;
    let config: Config;
    let engine: Engine;
    let sessionFile: string;
    let first: { id: string; time: string };
    let second: { id: string; time: string };
    /** The engine whose config guards Claude Code too, and its first snapshot (case 8). */
    let both: Engine;
    let withClaude: { id: string; time: string };
    /** Case 9's snapshot, taken with Claude Code guarded, and the transcript it holds. */
    let third: { id: string };
    let transcript: string;
    const fresh = (over: Record<string, string> = {}) => openEngine(loadConfig({}, { ...sb.env, PI_GUARD_REPO: repo(sb), PI_GUARD_PASSWORD: PASSWORD, ...over }));

    beforeAll(async () => {
      sb = makeSandbox(`engine-${kind}`);
      writePiConfigFiles(sb.agentDir);
      const made = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project"), turns: [{ user: "remember this", assistant: [fauxText("remembered")] }] });
      sessionFile = made.file;
      engine = await fresh();
      config = loadConfig({}, { ...sb.env, PI_GUARD_REPO: repo(sb), PI_GUARD_PASSWORD: PASSWORD });
      expect(engine.kind).toBe(kind);
    }, 120_000);

    afterAll(() => sb?.cleanup());

    it(CONFORMANCE_CASES[0], { timeout: 60_000 }, async () => {
      const made = await engine.init();
      expect(made.id).toMatch(/^[0-9a-f]{8,64}$/);
      expect(made.credential).toBe("password");
      const again = await rejects((await fresh()).init());
      expect(again.message).toMatch(/already exists/);
    });

    it(CONFORMANCE_CASES[1], { timeout: 60_000 }, async () => {
      const r = await engine.backup({ tags: ["mine"] });
      expect(r.engine).toBe(kind);
      expect(r.snapshot).not.toBeNull();
      const s = r.snapshot!;
      expect(s.tags).toEqual(["mine"]);
      expect(s.skipped).toEqual([]);
      expect(s.loss).toBeUndefined();
      expect(s.summary.files).toBeGreaterThanOrEqual(4);
      first = { id: s.id, time: s.time };
      const listed = await engine.listSnapshots();
      expect(listed.map((x) => x.id)).toEqual([s.id]);
      expect(listed[0]).toMatchObject({ time: s.time, tags: ["mine"] });
      expect(listed[0].roots.find((x) => x.name === "agent")?.path).toBe(sb.agentDir);
      for (const tag of ["suspect-loss", "pre-restore", "incomplete"]) {
        const err = await rejects(engine.backup({ tags: [tag] }));
        expect(err.kind).toBe("usage");
        expect(err.message).toMatch(/is reserved/);
      }
      expect((await engine.listSnapshots()).length).toBe(1);
    });

    it(CONFORMANCE_CASES[2], { timeout: 60_000 }, async () => {
      await pause();
      const between = new Date().toISOString();
      await pause();
      writePiConfigFiles(sb.agentDir);
      const r = await engine.backup();
      second = { id: r.snapshot!.id, time: r.snapshot!.time };
      expect((await engine.findSnapshot("latest")).snapshot.id).toBe(second.id);
      const then = await engine.findSnapshot(between);
      expect(then.snapshot.id).toBe(first.id);
      expect(then.resolved?.utc).toBeDefined();
      expect((await engine.findSnapshot(first.id.slice(0, 8))).snapshot.id).toBe(first.id);
      expect((await rejects(engine.findSnapshot("1999-01-01T00:00:00Z"))).kind).toBe("not-found");
    });

    it(CONFORMANCE_CASES[3], { timeout: 60_000 }, async () => {
      const target = sb.dir("restored");
      const r = await engine.restore(first.id, { targetDir: target });
      expect(r.engine).toBe(kind);
      expect(r.snapshot.id).toBe(first.id);
      expect(r.report.failed).toEqual([]);
      const rel = path.relative(sb.agentDir, sessionFile);
      expect(readFileSync(path.join(target, rel))).toEqual(readFileSync(sessionFile));
      expect(readFileSync(path.join(target, "auth.json"))).toEqual(readFileSync(path.join(sb.agentDir, "auth.json")));
    });

    it(CONFORMANCE_CASES[4], { timeout: 60_000 }, async () => {
      const away = path.join(sb.root, "agent-away");
      renameSync(sb.agentDir, away);
      try {
        const plain = await rejects(engine.backup());
        expect(plain.kind).toBe("not-found");
        expect(plain.message).toMatch(/does not exist/);
        const allowed = await rejects(engine.backup({ allowEmpty: true }));
        expect(allowed.message).toMatch(/holds it/);
        // A machine where pi never wrote: allowEmpty takes nothing and is no error.
        const other = await fresh({ PI_CODING_AGENT_DIR: path.join(sb.root, "never") });
        expect((await other.backup({ allowEmpty: true })).snapshot).toBeNull();
      } finally {
        renameSync(away, sb.agentDir);
      }
      expect((await engine.listSnapshots()).length).toBe(2);
    });

    it(CONFORMANCE_CASES[5], { timeout: 60_000 }, async () => {
      const sessions = path.join(sb.agentDir, "sessions");
      const kept = path.join(sb.root, "sessions-kept");
      renameSync(sessions, kept);
      try {
        await pause();
        const r = await engine.backup();
        expect(r.snapshot!.loss).toBeDefined();
        expect(r.snapshot!.tags).toContain("suspect-loss");
        expect(r.lossAccepted).toBe(false);
        const latest = await engine.findSnapshot("latest");
        expect(latest.snapshot.id).toBe(second.id);
      } finally {
        rmSync(sessions, { recursive: true, force: true });
        renameSync(kept, sessions);
      }
    });

    it(CONFORMANCE_CASES[6], { timeout: 60_000 }, async () => {
      const before = (await engine.listSnapshots()).map((s) => s.id);
      expect(before).toHaveLength(3);
      const refused = await engine.forget({ policy: { keepTags: ["no-such-tag"] } });
      expect(refused.refused).toBe(true);
      expect(refused.removed).toBe(0);
      expect(refused.emptiedGroups.length).toBeGreaterThan(0);
      expect((await engine.listSnapshots()).map((s) => s.id)).toEqual(before);
      const dry = await engine.forget({ policy: { keepLast: 1 }, dryRun: true });
      expect(dry.removed).toBe(0);
      const r = await engine.forget({ policy: { keepLast: 1 } });
      expect(r.refused).toBe(false);
      expect(r.removed).toBe(r.remove.length);
      expect(r.remove.map((x) => x.id)).toContain(first.id);
      const after = (await engine.listSnapshots()).map((s) => s.id);
      expect(after).not.toContain(first.id);
      expect(after).toContain(second.id);
      expect(dry.remove.map((x) => x.id).sort()).toEqual(r.remove.map((x) => x.id).sort());
    });

    it(CONFORMANCE_CASES[7], { timeout: 120_000 }, async () => {
      const c = await engine.check({ readData: true });
      expect(c).toMatchObject({ ok: true, readData: true, problems: [] });
      const st = await engine.status();
      expect(st.engine).toBe(kind === "native" ? "pi-guard" : "restic");
      expect(st.lastGoodSnapshot?.id).toBe(second.id);
      expect(st.newestSnapshot?.suspectLoss).toBe(true);
      expect(config.repo).toBe(engine.location);
    });

    it(CONFORMANCE_CASES[8], { timeout: 240_000 }, async () => {
      const server = await startClaudeModel([callTool("Bash", { command: "echo conformance-tool-ran", description: "echo" }), say("The echo printed conformance-tool-ran.")]);
      const run = await runClaude(sb, server, "run the echo please").finally(() => server.close());
      transcript = run.transcript;
      // A config made now detects Claude Code and guards it beside pi.
      both = await fresh({ CLAUDE_CONFIG_DIR: claudeConfigDir(sb) });
      const summaryOf = ({ agent, id, name, project, turns, userMessages, assistantMessages, toolCalls, tokens, cost, started, lastActivity }: SessionRecord) => ({ agent, id, name, project, turns, userMessages, assistantMessages, toolCalls, tokens, cost, started, lastActivity });
      const live = await both.sessions({ liveOnly: true });
      let liveClaude: { record: SessionRecord; bytes: Buffer };
      try {
        const record = live.catalog.sessions.find((x) => x.agent === "claude")!;
        expect(record?.id).toBe(run.sessionId);
        expect(live.catalog.sessions.map((x) => x.agent).sort()).toEqual(["claude", "pi"]);
        liveClaude = { record, bytes: await live.catalog.readBytes(record.id) };
      } finally {
        await live.finish(true);
      }
      const taken = (await both.backup()).snapshot!;
      withClaude = { id: taken.id, time: taken.time };
      expect(taken.tags).toEqual([]);
      expect((await both.listSnapshots()).find((x) => x.id === taken.id)?.agents).toMatchObject({ agent: "pi", claude: "claude" });
      // Both sessions vanish from disk: only the snapshots hold them now.
      const piAway = path.join(sb.root, "pi-session-away");
      const claudeAway = path.join(sb.root, "claude-transcript-away");
      renameSync(sessionFile, piAway);
      renameSync(run.transcript, claudeAway);
      const opened = await both.sessions();
      try {
        const c = opened.catalog;
        const pi = c.sessions.find((x) => x.agent === "pi")!;
        expect(pi).toMatchObject({ deleted: true, live: null, lastSnapshot: { snapshotId: taken.id } });
        expect(pi.versions.length).toBeGreaterThanOrEqual(1);
        expect(await c.readBytes(pi.id)).toEqual(readFileSync(piAway));
        expect(c.describeSource(pi.id)).toMatch(new RegExp(`^${kind === "restic" ? "restic " : ""}snapshot ${taken.id.slice(0, 8)} `));
        const claude = c.sessions.find((x) => x.agent === "claude")!;
        expect(claude).toMatchObject({ id: run.sessionId, deleted: true, live: null, snapshotCount: 1, lastSnapshot: { snapshotId: taken.id } });
        // The same model from the snapshot as from the live files: the adapter read both.
        expect(summaryOf(claude)).toEqual(summaryOf(liveClaude!.record));
        const bytes = await c.readBytes(claude.id);
        expect(bytes).toEqual(liveClaude!.bytes);
        expect(bytes.toString("utf8")).toContain("conformance-tool-ran");
        const streamed: Buffer[] = [];
        const src = await c.byteSource(claude.id);
        for await (const chunk of src.read()) streamed.push(Buffer.from(chunk));
        await src.close();
        expect(Buffer.concat(streamed)).toEqual(bytes);
        expect(c.snapshots.map((m) => m.id)).toContain(taken.id);
        // A second catalog over the same inputs is the cached view: it still reads the snapshot.
        const again = await both.sessions();
        try {
          expect(await again.catalog.readBytes(claude.id)).toEqual(bytes);
          expect(await again.catalog.readBytes(pi.id)).toEqual(readFileSync(piAway));
        } finally {
          await again.finish(true);
        }
      } finally {
        await opened.finish(true);
        renameSync(piAway, sessionFile);
        renameSync(claudeAway, run.transcript);
      }
    });

    it(CONFORMANCE_CASES[9], { timeout: 120_000 }, async () => {
      const refused = await rejects(engine.forget({ policy: { keepLast: 1 }, dryRun: true, prune: {} }));
      expect(refused.kind).toBe("usage");
      await pause();
      // Taken with Claude Code guarded too: the same roots as case 8's snapshot, which it replaces.
      const taken = (await both.backup()).snapshot!;
      expect(taken.loss).toBeUndefined();
      third = taken;
      const before = (await engine.listSnapshots()).map((x) => x.id);
      const r = await engine.forget({ policy: { keepLast: 1 }, prune: { maxUnusedFraction: 0 } });
      expect(r.refused).toBe(false);
      expect(r.remove.map((x) => x.id), JSON.stringify(r.keep)).toEqual([withClaude.id]);
      expect(r.removed).toBe(1);
      expect(r.prune?.engine).toBe(kind);
      const after = (await engine.listSnapshots()).map((x) => x.id);
      expect(after).toEqual(before.filter((id) => id !== withClaude.id));
      expect((await engine.check({ readData: true })).ok).toBe(true);
      const target = sb.dir("restored-after-prune");
      const restored = await engine.restore(third.id, { targetDir: target });
      expect(restored.report.failed).toEqual([]);
      expect(readFileSync(path.join(target, path.relative(sb.agentDir, sessionFile)))).toEqual(readFileSync(sessionFile));
    });

    it(CONFORMANCE_CASES[10], { timeout: 120_000 }, async () => {
      // Opened now: case 9 pruned through another engine, and a native engine keeps the index it read.
      const both = await fresh({ CLAUDE_CONFIG_DIR: claudeConfigDir(sb) });
      const target = sb.dir("restored-claude");
      const r = await both.restore(third.id, { agent: "claude", targetDir: target });
      expect(r.report.failed).toEqual([]);
      expect(new Set(r.report.files.map((f) => f.root))).toEqual(new Set(["claude"]));
      expect(readFileSync(path.join(target, ".claude", path.relative(claudeConfigDir(sb), transcript)))).toEqual(readFileSync(transcript));
      const lacking = await rejects(both.restore(third.id, { agent: "gemini", targetDir: target }));
      expect(lacking.kind).toBe("not-found");
      expect(lacking.message).toBe(`snapshot ${third.id.slice(0, 8)} holds nothing of agent gemini`);
      const st = await both.status({ agent: "claude" });
      expect(st.agent).toMatchObject({ name: "claude", guarded: true, lastGoodSnapshot: { id: third.id, roots: ["claude"] }, problems: [] });
    });
  });
}
