// One behaviour for every agent adapter (src/agents/types.ts), as test/targets/conformance.ts is
// for storage: each agent's test file calls agentConformance with its adapter and a fixture maker
// that makes real sessions with the agent's own code (pi: test/helpers/pi1.ts and pi-factory.ts;
// the others: their runners in test/helpers/agents/). Real parts throughout: the built CLI, real
// files in a sandbox, the repository read back through the library.

import { appendFileSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveFiles, snapshotFiles } from "../../src/agents/files.js";
import type { AgentAdapter, AgentLocation, AgentSession, FileRef, RestoreUnit } from "../../src/agents/types.js";
import { loadConfig } from "../../src/config/config.js";
import { openRepository } from "../../src/engine.js";
import type { ToolCallContent } from "../../src/model/session.js";
import { knownMarker } from "../../src/export/redact.js";
import { SnapshotReader } from "../../src/restore/snapshot-reader.js";
import { copyKindOf } from "../../src/snapshot/copy-kind.js";
import { cli, initRepo, ok, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fingerprint, treeState, type Sandbox, tempRoot } from "../helpers/tmp.js";

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
  /** The data dir the agent uses when its variable holds `value` (default: `value` itself; opencode's XDG_DATA_HOME gives `<value>/opencode`). */
  envDir?(value: string): string;
  /** Where the agent keeps its data under a HOME without overrides. */
  defaultDir(home: string): string;
  /** A real session, made by the agent's own code, with one tool call, and the secret planted. */
  makeSession(): Promise<MadeSession>;
  /** Plant a setup that doctor must report for this agent; returns the finding's name. */
  plantHazard(): Promise<string>;
  /** The accident: the agent's data wiped as in the pi incident (default: everything in its data dir). */
  wipe?(loc: AgentLocation): void;
  /**
   * A file whose restore unit has companions, and the files that unit must hold. A SQLite db is
   * stored as one consistent copy (docs/FORMAT.md §10), so its unit is the db alone.
   */
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

const SIDE_FILE = /-(wal|shm|journal)$/;

/** A SQLite db's content: `PRAGMA integrity_check`, and each table's rows (sorted, as JSON), never its bytes. */
export interface DbContent {
  integrity: string;
  tables: Record<string, string[]>;
}

/** The content of a db held in `db` (and `wal`), read from a private copy: the original and its folder stay as they are. */
export function sqliteContent(db: Buffer, wal?: Buffer): DbContent {
  const dir = tempRoot("conformance-db");
  try {
    const file = path.join(dir, "copy.db");
    writeFileSync(file, db);
    if (wal) writeFileSync(`${file}-wal`, wal);
    const conn = new Database(file);
    try {
      const integrity = String(conn.pragma("integrity_check", { simple: true }));
      const names = (conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
      const rows = (name: string) => (conn.prepare(`SELECT * FROM "${name.replace(/"/g, '""')}"`).all() as Record<string, unknown>[]).map((r) => JSON.stringify(Object.values(r))).sort();
      return { integrity, tables: Object.fromEntries(names.map((n) => [n, rows(n)])) };
    } finally {
      conn.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A live db's content, from its bytes and its -wal's (while nothing writes it). */
export const liveSqliteContent = (file: string): DbContent => sqliteContent(readFileSync(file), existsSync(`${file}-wal`) ? readFileSync(`${file}-wal`) : undefined);

/**
 * The suite's check of restore units, on its own so that a test can show it catching a broken
 * adapter: every selected file in exactly one unit, a db's unit holds no side file the snapshot
 * lacks (a db is stored as one consistent copy, without -wal/-shm), and the probe's unit is whole.
 */
export function expectUnitsWhole(units: readonly RestoreUnit[], selected: readonly FileRef[], available: readonly FileRef[], probe?: AgentFixture["unitProbe"]): void {
  const same = (a: FileRef) => (b: FileRef) => a.root === b.root && a.path === b.path;
  for (const f of selected) expect(units.filter((u) => u.files.some(same(f))), `${f.root}:${f.path} in one unit`).toHaveLength(1);
  for (const f of units.flatMap((u) => u.files)) if (SIDE_FILE.test(f.path)) expect(available.some(same(f)), `${f.root}:${f.path} is in the snapshot`).toBe(true);
  if (probe) {
    const unit = units.find((u) => u.files.some(same(probe.select)));
    expect(unit?.files.map((f) => f.path).sort()).toEqual(probe.expect.map((f) => f.path).sort());
  }
}

export function agentConformance(opts: AgentConformanceOptions): void {
  const { adapter } = opts;
  const timeout = opts.timeoutMs ?? 120_000;
  const [locateCase, rootsCase, secretsCase, readerCase, snapshotCase, copyCase, hazardsCase, wipeCase, unitsCase] = AGENT_CONFORMANCE_CASES;

  describe(`agent conformance: ${adapter.name}`, () => {
    let fx: AgentFixture;
    let sb: Sandbox;
    let made: MadeSession;
    /** Where the agent's adapter says the planted secret came from (the marker --redact shows). */
    let secretLabel = "";
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
        return await use(await snapshotFiles(reader, { ...record.snapshot, id }));
      } finally {
        await reader.close();
      }
    };
    /** A SQLite db as the adapter's copy rules say (stored as a consistent copy), not one of its side files. */
    const isDb = (ref: FileRef) => !SIDE_FILE.test(ref.path) && copyKindOf(adapter.copyRules(loc))(ref.root, ref.path) === "sqlite-wal";
    const absolute = (ref: FileRef) => path.join(loc.roots.find((r) => r.name === ref.root)!.path, ...ref.path.split("/"));
    /** A root's state: its plain files by bytes, its dbs by content, and which db side files are there. */
    const rootState = (root: { name: string; path: string }) => {
      const tree = treeState(root.path);
      const dbs = [...tree.keys()].filter((rel) => isDb({ root: root.name, path: rel }));
      const ofDb = (rel: string) => dbs.some((d) => rel === d || (rel.startsWith(d) && SIDE_FILE.test(rel.slice(d.length))));
      return {
        plain: fingerprint(tree, (rel) => !ofDb(rel)),
        dbs: Object.fromEntries(dbs.map((d) => [d, liveSqliteContent(path.join(root.path, ...d.split("/")))])),
        sides: [...tree.keys()].filter((rel) => ofDb(rel) && !dbs.includes(rel)),
      };
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
      const movedDir = fx.envDir ? fx.envDir(moved) : moved;
      expect(byEnv).toMatchObject({ dir: movedDir, foundBy: "env", via: fx.envOverride });
      const configured = path.join(sb.root, "moved-by-config");
      expect(adapter.locate({ env: bare, home: sb.home, config: { dir: configured } })).toMatchObject({ dir: configured, foundBy: "config" });
      // The agent's own variable wins over the config, as the agent itself sees it.
      expect(adapter.locate({ env: { ...bare, [fx.envOverride]: moved }, home: sb.home, config: { dir: configured } }).dir).toBe(movedDir);
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
      // … and one with --redact does not: masked as a value learned from the agent's own credential
      // file (the marker names it), not only by the shape of a key.
      const masked = await ok(sb, ["export", made.id, "--format", "markdown", "--redact"]);
      expect(masked.stdout).not.toContain(made.secret);
      secretLabel = values.find((v) => v.value === made.secret)!.label;
      expect(masked.stdout).toContain(knownMarker(secretLabel));
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
      const file = absolute(ref);
      if (isDb(ref)) return sqliteCopy(ref, file);
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

    /**
     * The copy case for a db: a second connection commits numbered rows while three snapshots run.
     * Each snapshot's copy must pass integrity_check and hold rows 1..k with no gap (a committed
     * state), k between the commits before and after that snapshot, and the agent's own tables as
     * they were.
     */
    async function sqliteCopy(ref: FileRef, file: string): Promise<void> {
      const before = liveSqliteContent(file);
      const db = new Database(file);
      db.pragma("busy_timeout = 5000");
      db.exec("CREATE TABLE IF NOT EXISTS conformance_writer (n INTEGER PRIMARY KEY)");
      const insert = db.prepare("INSERT INTO conformance_writer (n) VALUES (?)");
      let n = 0;
      insert.run(++n);
      let stop = false;
      const writer = (async () => {
        while (!stop) {
          insert.run(n + 1);
          n++;
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      const runs: { id: string; lo: number; hi: number }[] = [];
      try {
        for (let i = 0; i < 3; i++) {
          const lo = n;
          const id = (await snapshot(sb)).snapshotId;
          runs.push({ id, lo, hi: n });
        }
      } finally {
        stop = true;
        await writer;
        db.close();
      }
      let most = 0;
      for (const { id, lo, hi } of runs) {
        const copy = sqliteContent(await inSnapshot(id, (files) => files.read(ref, 1 << 30)));
        expect(copy.integrity, `snapshot ${id}'s copy of ${ref.path}`).toBe("ok");
        const rows = (copy.tables.conformance_writer ?? []).map((r) => (JSON.parse(r) as number[])[0]).sort((a, b) => a - b);
        expect(rows, `snapshot ${id} holds a committed state`).toEqual(rows.map((_, i) => i + 1));
        expect(rows.length).toBeGreaterThanOrEqual(lo);
        expect(rows.length).toBeLessThanOrEqual(hi);
        const { conformance_writer: _w, ...agentTables } = copy.tables;
        expect(agentTables, `the agent's tables in snapshot ${id}`).toEqual(before.tables);
        most = Math.max(most, rows.length);
      }
      expect(most, "the snapshots saw the commits").toBeGreaterThan(1);
    }

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
      const before = loc.roots.map(rootState);
      const whole = await snapshot(sb);
      if (fx.wipe) fx.wipe(loc);
      else for (const name of readdirSync(loc.dir)) rmSync(path.join(loc.dir, name), { recursive: true, force: true });
      const after = await cli(sb, ["snapshot", "--json"]);
      expect(after.code, after.stderr).toBe(1);
      expect(after.stderr).toMatch(/SUSPECTED LOSS/);
      const j = after.json<{ tags: string[]; parent: string }>();
      expect(j.tags).toContain("suspect-loss");
      // The session is in snapshots only now, its credential file too: --redact learns the value
      // from the snapshot that holds the session.
      const fromSnapshot = await ok(sb, ["export", made.id, "--format", "markdown", "--redact"]);
      expect(fromSnapshot.stdout).not.toContain(made.secret);
      expect(fromSnapshot.stdout).toContain(knownMarker(secretLabel));
      // "latest" skips the suspect-loss snapshot: the restore takes the whole one.
      const restored = (await ok(sb, ["restore", "latest", "--agent", adapter.name, "--json"])).json<{ snapshotId: string; failed: unknown[] }>();
      expect(restored.snapshotId).toBe(whole.snapshotId);
      expect(restored.failed).toEqual([]);
      // Plain files come back byte for byte; a db with the same content, whole, and without stale
      // side files (it was stored as one consistent copy, its WAL folded in).
      const after_ = loc.roots.map(rootState);
      for (const [i, r] of after_.entries()) {
        expect(r.plain, loc.roots[i].path).toEqual(before[i].plain);
        for (const c of Object.values(r.dbs)) expect(c.integrity).toBe("ok");
        expect(r.dbs).toEqual(before[i].dbs);
        expect(r.sides, "no side files after the restore").toEqual([]);
      }
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
      expectUnitsWhole(units, selected, available, fx.unitProbe);
      // Each unit's files (those the snapshot holds) are back as the snapshot holds them: plain
      // files byte for byte, a db by content, with none of its side files left beside it.
      const wanted = units.flatMap((u) => u.files).filter((f) => available.some((a) => a.root === f.root && a.path === f.path));
      const stored = await inSnapshot(latest.id, async (files) => Promise.all(wanted.map((f) => files.read(f, 1 << 30))));
      for (const [i, f] of wanted.entries()) {
        if (!isDb(f)) {
          expect((await live.read(f, 1 << 30)).equals(stored[i]), `${f.root}:${f.path}`).toBe(true);
          continue;
        }
        expect(liveSqliteContent(absolute(f)), `${f.root}:${f.path}`).toEqual(sqliteContent(stored[i]));
        for (const side of ["-wal", "-shm", "-journal"]) expect(existsSync(absolute(f) + side), `${f.path}${side} after the restore`).toBe(false);
      }
      const checks = await adapter.checkRestored(live, units);
      expect(checks.filter((c) => !c.ok)).toEqual([]);
    });
  });
}
