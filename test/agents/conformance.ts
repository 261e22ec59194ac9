// One behaviour for every agent adapter (src/agents/types.ts), as test/targets/conformance.ts is
// for storage: each agent's test file calls agentConformance with its adapter and a fixture maker
// that makes real sessions with the agent's own code (pi: test/helpers/pi1.ts and pi-factory.ts;
// the others: their runners in test/helpers/agents/). Real parts throughout: the built CLI, real
// files in a sandbox, the repository read back through the library.

import { appendFileSync, existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveFiles, snapshotFiles } from "../../src/agents/files.js";
import type { AgentAdapter, AgentLocation, AgentSession, FileRef } from "../../src/agents/types.js";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import type { ToolCallContent } from "../../src/pi/types.js";
import { SnapshotReader } from "../../src/restore/snapshot-reader.js";
import { cli, initRepo, ok, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fingerprint, treeState, type Sandbox } from "../helpers/tmp.js";

/** What a fixture's real session holds, for the reader's assertions. */
export interface MadeSession {
  /** The agent's own session id. */
  id: string;
  /** Message entries (user, assistant, tool results) the reader must map it into. */
  messages: number;
  /** The tool the model called in it; its result is in the session too. */
  toolName: string;
  /** Whether the agent records usage, so that an assistant message must carry it. */
  usage: boolean;
  /** A credential of the agent's secret files that the session's prompt also holds. */
  secret: string;
}

export interface AgentFixture {
  /** A pi-guard sandbox; its `env` also points the agent into the sandbox. */
  sb: Sandbox;
  /** The variable that moves the agent's data (PI_CODING_AGENT_DIR, CLAUDE_CONFIG_DIR…). */
  envOverride: string;
  /** Where the agent keeps its data under a HOME without overrides. */
  defaultDir(home: string): string;
  /** A real session, made by the agent's own code, with one tool call, and the secret planted. */
  makeSession(): Promise<MadeSession>;
  /** Plant a setup that doctor must report for this agent; returns the finding's name. */
  plantHazard(): Promise<string>;
  /** The accident: the agent's data wiped as in the pi incident (default: everything in its data dir). */
  wipe?(loc: AgentLocation): void;
  /** A file whose restore unit has companions, and the files that unit must hold (a SQLite db and its side files). */
  unitProbe?: { select: FileRef; expect: FileRef[] };
  /** Called once the suite is done (close a database the fixture holds open). */
  close?(): Promise<void>;
}

export interface AgentConformanceOptions {
  adapter: AgentAdapter;
  make(): Promise<AgentFixture>;
  timeoutMs?: number;
}

/** The cases, in the order they run; the report prints this list. */
export const AGENT_CONFORMANCE_CASES = [
  "locate under a sandbox HOME, honouring env overrides and the config",
  "roots exist and carry the agent tag",
  "secrets are found and masked by export --redact",
  "the reader maps a real session: message count, a tool call and its result, usage",
  "the same session read from a snapshot equals the live one",
  "a consistent copy while a writer appends",
  "hazards are reported",
  "a wipe, then a snapshot, is flagged as a suspect loss, and a restore gives back the same bytes",
  "the restore units come back whole",
] as const;

const messageEntries = (s: AgentSession) => s.entries.filter((e) => e.type === "message");

export function agentConformance(opts: AgentConformanceOptions): void {
  const { adapter } = opts;
  const timeout = opts.timeoutMs ?? 120_000;
  const [locateCase, rootsCase, secretsCase, readerCase, snapshotCase, copyCase, hazardsCase, wipeCase, unitsCase] = AGENT_CONFORMANCE_CASES;

  describe(`agent conformance: ${adapter.name}`, () => {
    let fx: AgentFixture;
    let sb: Sandbox;
    let made: MadeSession;
    let loc: AgentLocation;
    let first: SnapshotJson;

    const locateHere = () => adapter.locate({ env: sb.env, home: sb.home });
    /** The snapshot's files of the agent, read through the library. */
    const inSnapshot = async <T>(id: string, use: (files: Awaited<ReturnType<typeof snapshotFiles>>) => Promise<T>): Promise<T> => {
      const repo = await openRepository(loadConfig({}, sb.env));
      const reader = await SnapshotReader.open(repo);
      try {
        const record = (await reader.snapshots()).find((r) => r.id === id);
        if (!record) throw new Error(`snapshot ${id} is not listed`);
        return await use(await snapshotFiles(reader, { id, tree: record.snapshot.tree }));
      } finally {
        await reader.close();
      }
    };
    const findMeta = async (files: ReturnType<typeof liveFiles>) => {
      for await (const m of adapter.sessions.list(files)) if (m.id === made.id) return m;
      throw new Error(`session ${made.id} is not listed in ${files.where}`);
    };

    beforeAll(async () => {
      fx = await opts.make();
      sb = fx.sb;
      made = await fx.makeSession();
      loc = locateHere();
      await initRepo(sb);
      first = await snapshot(sb);
    }, timeout);
    afterAll(async () => {
      await fx?.close?.();
      sb?.cleanup();
    });

    it(locateCase, () => {
      const bare = { HOME: sb.home };
      const plain = adapter.locate({ env: bare, home: sb.home });
      expect(plain.dir).toBe(fx.defaultDir(sb.home));
      expect(plain.foundBy).toBe("default");
      const moved = path.join(sb.root, "moved-by-env");
      const byEnv = adapter.locate({ env: { ...bare, [fx.envOverride]: moved }, home: sb.home });
      expect(byEnv).toMatchObject({ dir: moved, foundBy: "env", via: fx.envOverride });
      const configured = path.join(sb.root, "moved-by-config");
      expect(adapter.locate({ env: bare, home: sb.home, config: { dir: configured } })).toMatchObject({ dir: configured, foundBy: "config" });
      // The agent's own variable wins over the config, as the agent itself sees it.
      expect(adapter.locate({ env: { ...bare, [fx.envOverride]: moved }, home: sb.home, config: { dir: configured } }).dir).toBe(moved);
    });

    it(rootsCase, async () => {
      expect(loc.roots.length).toBeGreaterThan(0);
      expect(loc.roots[0].path).toBe(loc.dir);
      expect(existsSync(loc.dir)).toBe(true);
      for (const r of loc.roots) expect(r.agent).toBe(adapter.name);
      const config = loadConfig({}, sb.env);
      for (const r of loc.roots.filter((x) => existsSync(x.path))) expect(config.rootAgents[r.name]).toBe(adapter.name);
      const listed = (await ok(sb, ["agents", "--json"])).json<{ name: string; detected: boolean; guarded: boolean; sessions: number; dir: string }[]>();
      expect(listed.find((a) => a.name === adapter.name)).toMatchObject({ detected: true, guarded: true, dir: loc.dir });
      expect(listed.find((a) => a.name === adapter.name)!.sessions).toBeGreaterThanOrEqual(1);
      // The snapshot recorded which agent each root belongs to.
      const agents = await inSnapshot(first.snapshotId, async () => {
        const repo = await openRepository(loadConfig({}, sb.env));
        return (await repo.loadSnapshot(first.snapshotId)).agents;
      });
      for (const r of loc.roots.filter((x) => existsSync(x.path))) expect(agents?.[r.name]).toBe(adapter.name);
    });

    it(secretsCase, async () => {
      expect(adapter.secretFiles(loc).length).toBeGreaterThan(0);
      const values = await adapter.secretValues(liveFiles(loc.roots), loc);
      expect(values.map((v) => v.value)).toContain(made.secret);
      // The secret is in the session, so an export without --redact shows it …
      const plain = await ok(sb, ["export", made.id, "--format", "markdown"]);
      expect(plain.stdout).toContain(made.secret);
      // … and one with --redact does not.
      const masked = await ok(sb, ["export", made.id, "--format", "markdown", "--redact"]);
      expect(masked.stdout).not.toContain(made.secret);
    });

    it(readerCase, async () => {
      const files = liveFiles(loc.roots);
      const meta = await findMeta(files);
      expect(meta.agent).toBe(adapter.name);
      expect(meta.bytes).toBeGreaterThan(0);
      const s = await adapter.sessions.read(files, meta);
      expect(s.header.id).toBe(made.id);
      const messages = messageEntries(s);
      expect(messages).toHaveLength(made.messages);
      const calls = messages.flatMap((e) => {
        const m = e.message as { role: string; content?: unknown };
        return m.role === "assistant" && Array.isArray(m.content) ? (m.content as ToolCallContent[]).filter((b) => b.type === "toolCall") : [];
      });
      const call = calls.find((c) => c.name === made.toolName);
      expect(call, `a ${made.toolName} tool call`).toBeDefined();
      const result = messages.find((e) => (e.message as { role: string; toolCallId?: string }).role === "toolResult" && (e.message as { toolCallId?: string }).toolCallId === call!.id);
      expect(result, "the tool call's result").toBeDefined();
      if (made.usage) {
        const used = messages.some((e) => {
          const u = (e.message as { role: string; usage?: { input?: number; output?: number } }).usage;
          return (e.message as { role: string }).role === "assistant" && !!u && (u.input ?? 0) + (u.output ?? 0) > 0;
        });
        expect(used, "an assistant message with usage").toBe(true);
      }
      expect(s.leafId).not.toBeNull();
    });

    it(snapshotCase, async () => {
      const live = liveFiles(loc.roots);
      const liveSession = await adapter.sessions.read(live, await findMeta(live));
      const fromSnapshot = await inSnapshot(first.snapshotId, async (files) => adapter.sessions.read(files, await findMeta(files)));
      expect(fromSnapshot.header).toEqual(liveSession.header);
      expect(fromSnapshot.entries).toEqual(liveSession.entries);
      expect(fromSnapshot.leafId).toBe(liveSession.leafId);
      expect(fromSnapshot.meta.id).toBe(liveSession.meta.id);
    });

    it(copyCase, async () => {
      const live = liveFiles(loc.roots);
      const ref = (await findMeta(live)).files[0];
      const file = path.join(loc.roots.find((r) => r.name === ref.root)!.path, ...ref.path.split("/"));
      const lines = readFileSync(file, "utf8").trimEnd().split("\n");
      const line = lines[lines.length - 1];
      // The writer appends whole copies of the last line, each in two writes, so that a snapshot
      // may see a torn line; whatever it sees must be a prefix of the final file, byte for byte.
      let stop = false;
      const writer = (async () => {
        while (!stop) {
          appendFileSync(file, line.slice(0, line.length >> 1));
          await new Promise((r) => setImmediate(r));
          appendFileSync(file, `${line.slice(line.length >> 1)}\n`);
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      const ids: string[] = [];
      try {
        for (let i = 0; i < 3; i++) ids.push((await snapshot(sb)).snapshotId);
      } finally {
        stop = true;
        await writer;
      }
      const final = readFileSync(file);
      let grew = 0;
      for (const id of ids) {
        const copy = await inSnapshot(id, (files) => files.read(ref, 1 << 30));
        expect(final.subarray(0, copy.length).equals(copy), `snapshot ${id}'s copy is a prefix of the file`).toBe(true);
        if (copy.length > lines.join("\n").length + 1) grew++;
      }
      expect(grew, "the snapshots saw the appends").toBeGreaterThan(0);
    });

    it(hazardsCase, async () => {
      const name = await fx.plantHazard();
      const config = loadConfig({}, sb.env);
      const found = await adapter.hazards(locateHere(), { env: sb.env, repo: config.repo, keyFile: config.keyFile });
      const hit = found.find((c) => c.name === name);
      expect(hit, `a "${name}" finding among ${found.map((c) => c.name).join(", ")}`).toBeDefined();
      expect(hit!.status).toBe("warn");
      expect(hit!.fix).toBeTruthy();
      const r = await cli(sb, ["doctor", "--json", "--agent", adapter.name]);
      const checks = r.json<{ checks: { name: string; status: string }[] }>().checks;
      expect(checks.find((c) => c.name === name)?.status, r.stderr).toBe("warn");
    });

    it(wipeCase, async () => {
      const before = loc.roots.map((r) => fingerprint(treeState(r.path)));
      const whole = await snapshot(sb);
      if (fx.wipe) fx.wipe(loc);
      else for (const name of readdirSync(loc.dir)) rmSync(path.join(loc.dir, name), { recursive: true, force: true });
      const after = await cli(sb, ["snapshot", "--json"]);
      expect(after.code, after.stderr).toBe(1);
      expect(after.stderr).toMatch(/SUSPECTED LOSS/);
      const j = after.json<{ tags: string[]; parent: string }>();
      expect(j.tags).toContain("suspect-loss");
      // "latest" skips the suspect-loss snapshot: the restore takes the whole one.
      const restored = (await ok(sb, ["restore", "latest", "--agent", adapter.name, "--json"])).json<{ snapshotId: string; failed: unknown[] }>();
      expect(restored.snapshotId).toBe(whole.snapshotId);
      expect(restored.failed).toEqual([]);
      expect(loc.roots.map((r) => fingerprint(treeState(r.path)))).toEqual(before);
    });

    it(unitsCase, async () => {
      const latest = (await ok(sb, ["snapshots", "--json"])).json<{ id: string; tags: string[] }[]>().filter((s) => !s.tags.includes("suspect-loss") && !s.tags.includes("pre-restore")).at(-1)!;
      const available: FileRef[] = await inSnapshot(latest.id, async (files) => {
        const out: FileRef[] = [];
        for (const root of loc.roots) for await (const f of files.list(root.name)) out.push({ root: f.root, path: f.path });
        return out;
      });
      const live = liveFiles(loc.roots);
      const sessionFiles = (await findMeta(live)).files;
      const selected = fx.unitProbe ? [...sessionFiles, fx.unitProbe.select] : sessionFiles;
      const units = adapter.restoreUnits(selected, available);
      // Every selected file is in exactly one unit.
      for (const f of selected) expect(units.filter((u) => u.files.some((x) => x.root === f.root && x.path === f.path))).toHaveLength(1);
      if (fx.unitProbe) {
        const unit = units.find((u) => u.files.some((x) => x.path === fx.unitProbe!.select.path))!;
        expect(unit.files.map((f) => f.path).sort()).toEqual(fx.unitProbe.expect.map((f) => f.path).sort());
      }
      // Each unit's files are back, byte for byte as the snapshot holds them.
      const wanted = units.flatMap((u) => u.files);
      const bytes = await inSnapshot(latest.id, async (files) => Promise.all(wanted.map((f) => files.read(f, 1 << 30))));
      for (const [i, f] of wanted.entries()) expect((await live.read(f, 1 << 30)).equals(bytes[i]), `${f.root}:${f.path}`).toBe(true);
      const checks = await adapter.checkRestored(live, units);
      expect(checks.filter((c) => !c.ok)).toEqual([]);
    });
  });
}
