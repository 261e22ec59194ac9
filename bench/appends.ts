// What a repository pays per appended byte when snapshots follow every append, as `watch` takes
// them: one process, one Repository kept open, one snapshot per change.
//   npm run bench:appends -- [--snapshots 400] [--files 20] [--before ../other-checkout] [--tree 2048,8192,32768] [--out bench/out]
// --before runs the same scenarios against another checkout's compiled engine (its dist/src), for a
// before/after table; build it there first (`npx tsc -p tsconfig.build.json`). --tree adds rows for
// this checkout with other tree chunker parameters (written into the new repository's config).
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fixturesDir } from "./fixtures.js";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { EntryStream, loadFixtureEntries } from "./pi-entries.js";
import { Prng } from "./prng.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/** This file runs as dist/bench/appends.js. */
const PROJECT_ROOT = resolve(HERE, "../..");
const FIXTURES = fixturesDir();
const LARGE_SESSION = join(FIXTURES, "pi-mono-v1", "large-session.jsonl");

const log = (msg: string): void => void process.stderr.write(`[bench:appends] ${msg}\n`);

/** The engine of one checkout, loaded from its compiled output so two versions can run side by side. */
interface Engine {
  label: string;
  /** Tree chunker parameters to put in the new repository's config instead of the default. */
  tree?: { min: number; avg: number; max: number };
  Repository: any;
  LocalTarget: any;
  createSnapshot: (repo: any, opts: any) => Promise<{ id: string; snapshot: any }>;
}

async function loadEngine(root: string, label: string): Promise<Engine> {
  const mod = (rel: string) => import(pathToFileURL(join(root, "dist", "src", rel)).href);
  const [{ Repository }, { LocalTarget }, { createSnapshot }] = await Promise.all([mod("repo/repository.js"), mod("targets/local.js"), mod("snapshot/snapshotter.js")]);
  return { label, Repository, LocalTarget, createSnapshot };
}

interface Scenario {
  name: string;
  describe: string;
  /** Make the agent dir; returns one append function per snapshot step (returns the bytes appended). */
  setup(agentDir: string): (step: number) => number;
  snapshots: number;
}

function piScenario(files: number, snapshots: number): Scenario {
  return {
    name: `pi-entries`,
    describe: `${files} sessions (20 KB–1 MB), ${snapshots} snapshots, each after one real pi entry appended to one session`,
    snapshots,
    setup(agentDir) {
      const samples = loadFixtureEntries(LARGE_SESSION);
      const prng = new Prng("appends");
      const streams: { file: string; entries: EntryStream }[] = [];
      for (let i = 0; i < files; i++) {
        const dir = join(agentDir, "sessions", `--home-dev-p${i % 4}--`);
        mkdirSync(dir, { recursive: true });
        const file = join(dir, `2026-11-30T12-00-${String(i).padStart(2, "0")}-000Z_session-${i}.jsonl`);
        const entries = new EntryStream(samples, { seed: `s${i}` });
        const target = Math.round(20_000 * Math.pow(50, prng.next()));
        let text = JSON.stringify({ type: "session", version: 3, id: `session-${i}`, timestamp: "2026-11-30T12:00:00.000Z", cwd: `/home/dev/p${i % 4}` }) + "\n";
        while (text.length < target) text += entries.next();
        writeFileSync(file, text);
        streams.push({ file, entries });
      }
      return () => {
        const s = streams[prng.int(0, streams.length - 1)];
        const line = s.entries.next();
        appendFileSync(s.file, line);
        return Buffer.byteLength(line);
      };
    },
  };
}

function tinyScenario(snapshots: number): Scenario {
  return {
    name: "25-byte",
    describe: `the issue's case: one real 1 MB session, ${snapshots} snapshots each after a 25-byte append`,
    snapshots,
    setup(agentDir) {
      const dir = join(agentDir, "sessions", "--home-dev-p--");
      mkdirSync(dir, { recursive: true });
      const file = join(dir, "2026-11-30T12-00-00-000Z_large.jsonl");
      copyFileSync(LARGE_SESSION, file);
      return (step) => {
        const line = `{"n":${String(step).padStart(15, "0")}}\n`; // 25 bytes
        appendFileSync(file, line);
        return Buffer.byteLength(line);
      };
    },
  };
}

interface Counts {
  data: number;
  tree: number;
  packOverhead: number;
  index: number;
  snapshot: number;
  objects: number;
}

/** Stored bytes by kind: frames of data blobs, frames of tree blobs, pack headers, index files, snapshot objects. */
async function measure(repo: any, repoDir: string): Promise<Counts> {
  const c: Counts = { data: 0, tree: 0, packOverhead: 0, index: 0, snapshot: 0, objects: 0 };
  const files = (sub: string): string[] => {
    const out: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (!e.name.startsWith(".")) out.push(join(d, e.name));
      }
    };
    walk(join(repoDir, sub));
    return out;
  };
  const framed = new Map<string, number>();
  const packs = new Map<string, number>();
  for (const f of files("index")) {
    c.index += statSync(f).size;
    c.objects++;
    const index = await repo.readIndexFile(f.slice(f.lastIndexOf("/") + 1));
    for (const p of index.packs) {
      packs.set(p.id, p.size);
      const frames = new Map<number, { length: number; tree: boolean }>();
      for (const b of p.blobs) frames.set(b.offset, { length: b.length, tree: b.type === 1 });
      for (const [offset, fr] of frames) framed.set(`${p.id}:${offset}`, fr.tree ? -fr.length : fr.length);
    }
  }
  for (const len of framed.values()) {
    if (len < 0) c.tree -= len;
    else c.data += len;
  }
  let packBytes = 0;
  for (const f of files("data")) {
    packBytes += statSync(f).size;
    c.objects++;
  }
  c.packOverhead = packBytes - c.data - c.tree;
  for (const f of files("snapshots")) {
    c.snapshot += statSync(f).size;
    c.objects++;
  }
  return c;
}

interface Result {
  engine: string;
  scenario: string;
  snapshots: number;
  appendedBytes: number;
  stored: Counts;
  perAppendedByte: Record<keyof Omit<Counts, "objects">, number> & { total: number };
  objectsPerSnapshot: number;
  msPerSnapshot: number;
}

async function run(engine: Engine, scenario: Scenario): Promise<Result> {
  const root = mkdtempSync(join(tmpdir(), "pi-guard-bench-appends-"));
  try {
    const agentDir = join(root, "agent");
    const repoDir = join(root, "repo");
    const append = scenario.setup(agentDir);
    const cred = { kind: "keyfile", secret: Buffer.alloc(32, 7), path: "bench" };
    let repo = await engine.Repository.init(new engine.LocalTarget(repoDir), cred);
    if (engine.tree) {
      const config = JSON.parse(readFileSync(join(repoDir, "config"), "utf8"));
      config.chunker.tree = engine.tree;
      writeFileSync(join(repoDir, "config"), JSON.stringify(config, null, 2) + "\n");
      repo = await engine.Repository.open(new engine.LocalTarget(repoDir), cred);
    }
    const opts = { roots: [{ name: "agent", path: agentDir }], filter: { include: [], exclude: [] }, host: "bench" };
    await engine.createSnapshot(repo, opts);
    const base = await measure(repo, repoDir);
    let appended = 0;
    const started = performance.now();
    for (let i = 0; i < scenario.snapshots; i++) {
      appended += append(i);
      await engine.createSnapshot(repo, opts);
    }
    const ms = performance.now() - started;
    const end = await measure(repo, repoDir);
    const stored = Object.fromEntries(Object.keys(end).map((k) => [k, end[k as keyof Counts] - base[k as keyof Counts]])) as unknown as Counts;
    const bytes = stored.data + stored.tree + stored.packOverhead + stored.index + stored.snapshot;
    const per = (n: number) => Number((n / appended).toFixed(2));
    const result: Result = {
      engine: engine.label,
      scenario: scenario.name,
      snapshots: scenario.snapshots,
      appendedBytes: appended,
      stored,
      perAppendedByte: {
        data: per(stored.data),
        tree: per(stored.tree),
        packOverhead: per(stored.packOverhead),
        index: per(stored.index),
        snapshot: per(stored.snapshot),
        total: per(bytes),
      },
      objectsPerSnapshot: Number((stored.objects / scenario.snapshots).toFixed(2)),
      msPerSnapshot: Number((ms / scenario.snapshots).toFixed(1)),
    };
    log(`${engine.label} ${scenario.name}: ${JSON.stringify(result.perAppendedByte)}, ${result.objectsPerSnapshot} objects/snapshot`);
    return result;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function table(results: Result[]): string {
  const head = ["scenario", "engine", "appended", "stored", "data/B", "tree/B", "packhdr/B", "index/B", "snap/B", "total/B", "objects/snap", "ms/snap"];
  const fmt = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`);
  const rows = results.map((r) => {
    const total = r.stored.data + r.stored.tree + r.stored.packOverhead + r.stored.index + r.stored.snapshot;
    const p = r.perAppendedByte;
    return [r.scenario, r.engine, fmt(r.appendedBytes), fmt(total), p.data, p.tree, p.packOverhead, p.index, p.snapshot, p.total, r.objectsPerSnapshot, r.msPerSnapshot].map(String);
  });
  const lines = [head, ...rows].map((cells) => `| ${cells.join(" | ")} |`);
  lines.splice(1, 0, `|${head.map(() => "---").join("|")}|`);
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      snapshots: { type: "string", default: "400" },
      files: { type: "string", default: "20" },
      before: { type: "string" },
      tree: { type: "string", multiple: true },
      out: { type: "string", default: join(PROJECT_ROOT, "bench", "out") },
    },
  });
  const snapshots = Number(values.snapshots);
  const engines = [await loadEngine(PROJECT_ROOT, "this checkout")];
  for (const spec of values.tree ?? []) {
    const [min, avg, max] = spec.split(",").map(Number);
    engines.push({ ...(await loadEngine(PROJECT_ROOT, `this, tree ${avg / 1024}K`)), tree: { min, avg, max } });
  }
  if (values.before) engines.unshift(await loadEngine(resolve(values.before), "before"));
  const scenarios = [tinyScenario(snapshots), piScenario(Number(values.files), snapshots)];
  const results: Result[] = [];
  for (const scenario of scenarios) for (const engine of engines) results.push(await run(engine, scenario));
  const text = table(results);
  process.stdout.write(`${scenarios.map((s) => `${s.name}: ${s.describe}`).join("\n")}\n\n${text}\n`);
  mkdirSync(values.out!, { recursive: true });
  const file = join(values.out!, `appends-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ node: process.version, results }, null, 2));
  log(`wrote ${file}`);
}

await main();
