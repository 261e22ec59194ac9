// How metadata costs grow with the number of snapshots (issue 9, item 1).
//   npm run bench:meta -- [--counts 10,1000,10000,100000] [--runs 3] [--out bench/out] [--work DIR [--keep|--reuse]] [--bin PATH]
// --reuse times again the repositories a --keep run left in --work DIR, without generating them.
// --bin PATH times another build's CLI (e.g. main's bin/pi-guard.js), for interleaved comparisons.
// For each count N, a fast generator writes a valid repository of N snapshots through the
// Repository API (real sealed packs, index files and snapshot objects; only fsync is skipped, as
// nothing here survives a crash anyway), plus one real snapshot of a small agent dir made by the
// CLI. Then, timing the real CLI in a fresh process: an append-only `snapshot`, `snapshots --json`
// and `restore <time> --target`, each with a cold metadata cache (deleted first) and a warm one.
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { promises as fs } from "node:fs";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readKeyFile } from "../src/config/credentials.js";
import { BlobWriter } from "../src/repo/blob-writer.js";
import { Repository } from "../src/repo/repository.js";
import { SealPool } from "../src/repo/seal-pool.js";
import { TreeWriter } from "../src/snapshot/tree.js";
import { LocalTarget } from "../src/targets/local.js";
import { bodyBuffer, type PutBody } from "../src/targets/target.js";
import { PROGRAM } from "../src/version.js";
import { SNAPSHOT_VERSION, type Snapshot } from "../src/repo/format.js";
import { measure, type Measurement } from "./measure.js";
import { cleanEnv } from "./env.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
let BIN = join(PROJECT_ROOT, "bin/pi-guard.js");
const BATCH = 1024;
const log = (msg: string): void => void process.stderr.write(`[bench:meta] ${msg}\n`);

/** A local folder without fsync: the generator's objects are real, only their durability is not. */
class GeneratorTarget extends LocalTarget {
  override async put(key: string, data: PutBody): Promise<void> {
    const file = join(this.root, ...key.split("/"));
    await fs.mkdir(dirname(file), { recursive: true });
    if (!Buffer.isBuffer(data) && data.movableFile) await fs.rename(data.movableFile, file);
    else await fs.writeFile(file, await bodyBuffer(data, key), { mode: 0o600 });
  }
}

function makeAgentDir(dir: string): string[] {
  const files: string[] = [];
  for (let p = 0; p < 4; p++) {
    const folder = join(dir, "sessions", `--home-u-proj${p}--`);
    mkdirSync(folder, { recursive: true });
    for (let s = 0; s < 5; s++) {
      const file = join(folder, `2026-11-0${p + 1}T10-00-0${s}-000Z_00000000-0000-4000-8000-00000000${p}${s}00.jsonl`);
      const lines = [JSON.stringify({ type: "session", version: 3, id: `s${p}${s}`, timestamp: "2026-11-01T10:00:00.000Z", cwd: `/home/u/proj${p}` })];
      for (let i = 0; i < 200; i++) lines.push(JSON.stringify({ type: "message", id: `${p}${s}${i}`.padStart(8, "0"), parentId: null, timestamp: "2026-11-01T10:00:00.000Z", message: { role: "user", content: `line ${i} of session ${p}/${s} `.repeat(8) } }));
      writeFileSync(file, lines.join("\n") + "\n");
      files.push(file);
    }
  }
  writeFileSync(join(dir, "settings.json"), "{}\n");
  return files;
}

/** N snapshots of one small tree blob each, older than anything real, in batches of BATCH per pack and index file. */
async function generate(repoDir: string, keyFile: string, count: number, roots: unknown, host: string): Promise<void> {
  const cred = (await readKeyFile(keyFile))!;
  const repo = await Repository.open(new GeneratorTarget(repoDir), cred);
  await repo.loadIndex();
  const pool = new SealPool(0);
  const start = Date.now() - (count + 60) * 1000;
  try {
    for (let first = 0; first < count; first += BATCH) {
      const writer = new BlobWriter(repo, pool);
      const trees: string[][] = [];
      for (let i = first; i < Math.min(count, first + BATCH); i++) {
        const tree = new TreeWriter(repo, writer);
        await tree.add({ root: "agent", path: "generated", type: "dir", mode: 0o755, mtimeMs: start + i * 1000 });
        trees.push((await tree.finish()).treeList);
      }
      await writer.finish();
      for (let k = 0; k < trees.length; k++) {
        const i = first + k;
        const snapshot: Snapshot = {
          version: SNAPSHOT_VERSION,
          time: new Date(start + i * 1000).toISOString(),
          host,
          user: os.userInfo().username,
          tags: [],
          roots: roots as Snapshot["roots"],
          treeList: trees[k],
          program: PROGRAM,
          summary: { files: 0, dirs: 1, bytesTotal: 0, bytesNew: 60, bytesStored: 300, filesNew: 0, filesChanged: 0, filesUnchanged: 0, durationMs: 5 },
        };
        await repo.saveSnapshot(snapshot);
      }
      // As real writers do after each snapshot: keep index/ small, and the snapshot listing current.
      while ((await repo.consolidateIndex()).written);
      await repo.consolidateListing({ after: "snapshot" });
      if ((first / BATCH) % 10 === 9) log(`  ${first + BATCH} snapshots`);
    }
  } finally {
    await pool.close();
  }
}

interface Timing {
  coldMs: number;
  /** Peak RSS of the cold run and the highest of the warm runs (process tree, bench/measure.ts). */
  coldPeakRssMB: number;
  warmPeakRssMB: number;
  /** The median of the warm runs. */
  warmMs: number;
  warmRunsMs: number[];
}

async function timeCommand(args: string[], env: NodeJS.ProcessEnv, cacheDir: string, runs: number, before?: () => void): Promise<Timing> {
  const once = async (): Promise<Measurement> => {
    before?.();
    // stdout goes to /dev/null, as a user's would to a file or a pipe that keeps up: captured by
    // this process, the 65 MB of `snapshots --json` at 100,000 took three times as long.
    const m = await measure("/bin/sh", ["-c", 'exec "$0" "$@" > /dev/null', BIN, ...args], { env, timeoutMs: 30 * 60_000 });
    if (m.exitCode !== 0) throw new Error(`pi-guard ${args.join(" ")} exited ${m.exitCode}: ${m.stderr.slice(-500)}`);
    return m;
  };
  rmSync(cacheDir, { recursive: true, force: true });
  const cold = await once();
  const warm: number[] = [];
  let warmPeakRssMB = 0;
  for (let r = 0; r < runs; r++) {
    const m = await once();
    warm.push(m.ms);
    warmPeakRssMB = Math.max(warmPeakRssMB, m.peakRssMB);
  }
  warm.sort((a, b) => a - b);
  return { coldMs: cold.ms, coldPeakRssMB: cold.peakRssMB, warmPeakRssMB, warmMs: warm[Math.floor(warm.length / 2)], warmRunsMs: warm };
}

async function benchCount(workRoot: string, count: number, runs: number, reuse: boolean): Promise<Record<string, unknown>> {
  const work = join(workRoot, `n${count}`);
  if (reuse && existsSync(join(work, "done.json"))) return timeAll(work, count, JSON.parse(readFileSync(join(work, "done.json"), "utf8")) as Generated, runs);
  rmSync(work, { recursive: true, force: true });
  const agent = join(work, "agent");
  const repoDir = join(work, "repo");
  const xdgData = join(work, "xdg-data");
  mkdirSync(agent, { recursive: true });
  const files = makeAgentDir(agent);
  // HOME of its own: no agent the machine has joins the snapshot (pi-guard guards every detected agent).
  const base = { HOME: join(work, "home"), PI_GUARD_REPO: repoDir, PI_CODING_AGENT_DIR: agent, XDG_CONFIG_HOME: join(work, "xdg-config"), XDG_DATA_HOME: xdgData, XDG_STATE_HOME: join(work, "xdg-state") };
  const init = await measure(BIN, ["init", "--key-file-only", "--json"], { env: cleanEnv(base) });
  if (init.exitCode !== 0) throw new Error(`init failed: ${init.stderr}`);
  const keyFile = (JSON.parse(init.stdout) as { keyFile: string }).keyFile;
  const env = cleanEnv({ ...base, PI_GUARD_KEY_FILE: keyFile });
  const roots = [{ name: "agent", path: agent }];
  const t0 = Date.now();
  await generate(repoDir, keyFile, count - 1, roots, os.hostname());
  const genMs = Date.now() - t0;
  const first = await measure(BIN, ["snapshot", "--json"], { env });
  if (first.exitCode !== 0) throw new Error(`snapshot failed: ${first.stderr}`);
  log(`N=${count}: generated in ${(genMs / 1000).toFixed(1)} s`);
  const generated: Generated = { env: { ...base, PI_GUARD_KEY_FILE: keyFile }, files, genMs };
  writeFileSync(join(work, "done.json"), JSON.stringify(generated));
  return timeAll(work, count, generated, runs);
}

interface Generated {
  env: Record<string, string>;
  files: string[];
  genMs: number;
}

async function timeAll(work: string, count: number, generated: Generated, runs: number): Promise<Record<string, unknown>> {
  const { files, genMs } = generated;
  const env = cleanEnv(generated.env);
  const repoDir = generated.env.PI_GUARD_REPO;
  const xdgData = generated.env.XDG_DATA_HOME;
  const cacheDir = join(xdgData, "pi-guard", "cache");
  let line = 0;
  const append = () => appendFileSync(files[line++ % files.length], JSON.stringify({ type: "message", id: `a${line}`.padStart(8, "0"), parentId: null, timestamp: new Date().toISOString(), message: { role: "user", content: "appended" } }) + "\n");
  const snapshot = await timeCommand(["snapshot", "--json"], env, cacheDir, runs, append);
  const list = await timeCommand(["snapshots", "--json"], env, cacheDir, runs);
  const when = new Date().toISOString();
  const restoreDir = join(work, "restore");
  const restore = await timeCommand(["restore", when, "--target", restoreDir, "--json"], env, cacheDir, runs, () => rmSync(restoreDir, { recursive: true, force: true }));
  const indexFiles = (await fs.readdir(join(repoDir, "index"))).length;
  const snapshots = (await fs.readdir(join(repoDir, "snapshots"))).length;
  const rss = (t: Timing) => `${t.warmPeakRssMB.toFixed(0)}/${t.coldPeakRssMB.toFixed(0)} MB`;
  log(`N=${count}: snapshot ${snapshot.warmMs.toFixed(0)} ms warm / ${snapshot.coldMs.toFixed(0)} cold (${rss(snapshot)}); snapshots ${list.warmMs.toFixed(0)} / ${list.coldMs.toFixed(0)} (${rss(list)}); restore ${restore.warmMs.toFixed(0)} / ${restore.coldMs.toFixed(0)} (${rss(restore)}); ${indexFiles} index files`);
  return { count, snapshots, indexFiles, generateMs: genMs, snapshot, snapshotsList: list, restore };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { counts: { type: "string" }, runs: { type: "string" }, out: { type: "string" }, keep: { type: "boolean" }, reuse: { type: "boolean" }, work: { type: "string" }, bin: { type: "string" } } });
  if (values.bin) BIN = resolve(values.bin);
  const counts = (values.counts ?? "10,1000,10000,100000").split(",").map(Number);
  const runs = Number(values.runs ?? 3);
  const outDir = resolve(values.out ?? join(PROJECT_ROOT, "bench/out"));
  const workRoot = values.work ? resolve(values.work) : mkdtempSync(join(os.tmpdir(), "pi-guard-meta-"));
  const results: Record<string, unknown>[] = [];
  try {
    for (const n of counts) results.push(await benchCount(workRoot, n, runs, !!values.reuse));
  } finally {
    if (!values.keep && !values.reuse) rmSync(workRoot, { recursive: true, force: true });
  }
  const pad = (s: string, n: number) => s.padStart(n);
  const ms = (t: Timing, k: "coldMs" | "warmMs") => `${(t[k] / 1000).toFixed(2)} s`;
  const rows = [["snapshots", "index files", "snapshot warm", "snapshot cold", "snapshots warm", "snapshots cold", "restore warm", "restore cold"]];
  for (const r of results) {
    const s = r.snapshot as Timing;
    const l = r.snapshotsList as Timing;
    const t = r.restore as Timing;
    rows.push([String(r.count), String(r.indexFiles), ms(s, "warmMs"), ms(s, "coldMs"), ms(l, "warmMs"), ms(l, "coldMs"), ms(t, "warmMs"), ms(t, "coldMs")]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  process.stdout.write(rows.map((r) => "| " + r.map((cell, c) => pad(cell, widths[c])).join(" | ") + " |").join("\n") + "\n");
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `meta-scale-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify({ machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg() }, bin: BIN, runs, results }, null, 2) + "\n");
  log(`wrote ${file}`);
}

await main();
