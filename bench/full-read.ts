// What the bound on the append path's trust costs (docs/FORMAT.md §10): a file that keeps growing is
// read in full once per snapshot.fullReadIntervalMs (default one hour) instead of only from its tail,
// and change detection compares ctime (every file is read once after an upgrade: old nodes have none).
//   npm run build && node dist/bench/full-read.js [--size 1GiB] [--files 10] [--watch-seconds 60] [--interval-seconds 10] [--keep]
//
// Part 1, the CLI against restic on the same generated agent dir, same steps for both:
//   initial snapshot; ~4 KB appended to the `--files` largest sessions, then a snapshot inside the
//   window (pi-guard reads tails) and, after another append, one as the window has passed
//   (pi-guard with fullReadIntervalMs 0 reads those files in full, as the hourly snapshot does);
//   an unchanged snapshot; and every file's ctime changed by chmod (what the first snapshot after the
//   upgrade to ctime costs: no old node has one).
// Part 2, a watcher's hour in miniature: one process and one open repository (as `watch` runs),
// every second one entry (~1 KB) appended to each of the `--files` largest sessions and then a
// snapshot, for `--watch-seconds`, twice: with the window at `--interval-seconds`, and with it never
// passing. The difference in bytes read, per window, is what the default costs per hour of watching.
import { chmodSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { appendToLargest, listSessionFiles } from "./append.js";
import { DEFAULT_POOL_ROOT, generateAgentDir } from "./generate.js";
import { measure } from "./measure.js";
import { withWorkDir, writeResultFile } from "./report.js";
import { formatBytes, parseSize } from "./size.js";
import { loadTextPool, type TextPool } from "./textPool.js";
import { hashTree } from "./treeHash.js";
import { readKeyFile } from "../src/config/credentials.js";
import { BlobReader } from "../src/repo/blob-reader.js";
import { Repository } from "../src/repo/repository.js";
import { SealPool } from "../src/repo/seal-pool.js";
import { readTree } from "../src/snapshot/tree.js";
import { createSnapshot } from "../src/snapshot/snapshotter.js";
import { LocalTarget } from "../src/targets/local.js";
import { cleanEnv } from "./env.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = join(PROJECT_ROOT, "bin", "pi-guard.js");
const log = (msg: string): void => void process.stderr.write(`[bench:full-read] ${msg}\n`);

interface StepResult {
  step: string;
  tool: string;
  ms: number;
  peakRssMB: number;
  bytesRead?: number;
  filesChanged?: number;
}

function chmodAll(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += chmodAll(p);
    else if (e.isFile()) {
      chmodSync(p, statSync(p).mode & 0o7777);
      n++;
    }
  }
  return n;
}

async function cliPart(workDir: string, agentDir: string, pool: TextPool, files: number): Promise<StepResult[]> {
  const repo = join(workDir, "pi-guard-repo");
  const keyFile = join(workDir, "pi-guard.key");
  const windowPassed = join(workDir, "window-passed.json");
  writeFileSync(windowPassed, JSON.stringify({ snapshot: { fullReadIntervalMs: 0 } }));
  // HOME of its own: no agent the machine has joins the snapshot (pi-guard guards every detected agent).
  const base = { HOME: join(workDir, "home"), PI_GUARD_REPO: repo, PI_CODING_AGENT_DIR: agentDir, XDG_CONFIG_HOME: join(workDir, "xdg-config"), XDG_DATA_HOME: join(workDir, "xdg-data"), PI_GUARD_KEY_FILE: keyFile };
  const resticEnv = cleanEnv({ RESTIC_REPOSITORY: join(workDir, "restic-repo"), RESTIC_PASSWORD: "bench-password", RESTIC_CACHE_DIR: join(workDir, "restic-cache") });
  const results: StepResult[] = [];
  const piGuard = async (step: string, config?: string): Promise<void> => {
    const m = await measure(BIN, ["snapshot", "--json"], { env: cleanEnv({ ...base, ...(config ? { PI_GUARD_CONFIG: config } : {}) }), timeoutMs: 20 * 60_000 });
    if (m.exitCode !== 0) throw new Error(`pi-guard ${step}: exit ${m.exitCode}: ${m.stderr.trim().split("\n").at(-1)}`);
    const j = JSON.parse(m.stdout) as { bytesRead: number; filesChanged: number };
    results.push({ step, tool: "pi-guard", ms: m.ms, peakRssMB: m.peakRssMB, bytesRead: j.bytesRead, filesChanged: j.filesChanged });
    log(`pi-guard ${step}: ${(m.ms / 1000).toFixed(2)} s, read ${formatBytes(j.bytesRead)}`);
  };
  const restic = async (step: string): Promise<void> => {
    const m = await measure("restic", ["backup", "--json", "--host", "pi-guard-bench", "."], { env: resticEnv, cwd: agentDir, timeoutMs: 20 * 60_000 });
    if (m.exitCode !== 0) throw new Error(`restic ${step}: exit ${m.exitCode}: ${m.stderr.trim().split("\n").at(-1)}`);
    results.push({ step, tool: "restic", ms: m.ms, peakRssMB: m.peakRssMB });
    log(`restic ${step}: ${(m.ms / 1000).toFixed(2)} s`);
  };
  const both = async (step: string, config?: string): Promise<void> => {
    await hashTree(agentDir); // the same warm page cache for both
    await restic(step);
    await piGuard(step, config);
  };

  const init = await measure("restic", ["init"], { env: resticEnv });
  if (init.exitCode !== 0) throw new Error(`restic init: ${init.stderr.trim()}`);
  const made = await measure(BIN, ["init", "--json"], { env: cleanEnv({ ...base, PI_GUARD_PASSWORD: "bench-password", PI_GUARD_KEY_FILE: "" }) });
  if (made.exitCode !== 0) throw new Error(`pi-guard init: ${made.stderr.trim()}`);
  const key = await measure(BIN, ["key", "add", "--new-key-file", keyFile, "--json"], { env: cleanEnv({ ...base, PI_GUARD_PASSWORD: "bench-password", PI_GUARD_KEY_FILE: "" }) });
  if (key.exitCode !== 0) throw new Error(`pi-guard key add: ${key.stderr.trim()}`);

  await both("initial");
  let a = appendToLargest(agentDir, pool, files, 4096, "full-read:1");
  log(`appended ${a.bytes} bytes to ${a.files.length} sessions (${formatBytes(a.files.reduce((n, f) => n + statSync(f).size, 0))} together)`);
  await both("append, inside the window");
  a = appendToLargest(agentDir, pool, files, 4096, "full-read:2");
  await both("append, window passed", windowPassed);
  await both("unchanged");
  log(`chmod of ${chmodAll(agentDir)} files (ctime changes, bytes do not)`);
  await both("every ctime changed");
  // What `pi-guard verify` costs on the whole tree (restic's nearest is `restic check --read-data`,
  // which checks the repository, not the live files: no comparison).
  await hashTree(agentDir);
  const v = await measure(BIN, ["verify", "--json"], { env: cleanEnv(base), timeoutMs: 20 * 60_000 });
  if (v.exitCode !== 0) throw new Error(`pi-guard verify: exit ${v.exitCode}: ${v.stderr.trim().split("\n").at(-1)}`);
  const vj = JSON.parse(v.stdout) as { bytes: number };
  results.push({ step: "verify (live vs latest)", tool: "pi-guard", ms: v.ms, peakRssMB: v.peakRssMB, bytesRead: vj.bytes });
  log(`pi-guard verify: ${(v.ms / 1000).toFixed(2)} s, read ${formatBytes(vj.bytes)}`);
  return results;
}

interface WatchRun {
  intervalMs: number | null;
  snapshots: number;
  /** Full reads of the growing files (a node whose fullReadMs moved), counted file by file. */
  fullReads: number;
  bytesRead: number;
  snapshotMs: number;
  appended: number;
}

/** `seconds` of a watcher's life in one process: each second an entry to each growing session, then a snapshot. */
async function watchPart(workDir: string, agentDir: string, pool: TextPool, files: number, seconds: number, intervalMs: number | null): Promise<WatchRun> {
  const cred = (await readKeyFile(join(workDir, "pi-guard.key")))!;
  const repo = await Repository.open(new LocalTarget(join(workDir, "pi-guard-repo")), cred, { dataDir: join(workDir, "xdg-data", "pi-guard") });
  const roots = [{ name: "agent", path: agentDir }];
  const filter = { include: [], exclude: ["bin", "git", "**/node_modules", "**/.DS_Store"] };
  // The window starts now for every file: one snapshot that reads the grown ones in full.
  appendToLargest(agentDir, pool, files, 600, `watch-start:${intervalMs}`);
  const taken = [await createSnapshot(repo, { roots, filter, fullReadIntervalMs: 0 })];
  const run: WatchRun = { intervalMs, snapshots: 0, fullReads: 0, bytesRead: 0, snapshotMs: 0, appended: 0 };
  const end = Date.now() + seconds * 1000;
  let tick = 0;
  while (Date.now() < end) {
    const second = Date.now() + 1000;
    run.appended += appendToLargest(agentDir, pool, files, 1000, `watch:${intervalMs}:${tick++}`).bytes;
    const started = performance.now();
    const s = await createSnapshot(repo, { roots, filter, fullReadIntervalMs: intervalMs ?? Number.MAX_SAFE_INTEGER });
    run.snapshotMs += performance.now() - started;
    run.snapshots++;
    run.bytesRead += s.snapshot.summary.bytesRead ?? 0;
    taken.push(s);
    await new Promise((r) => setTimeout(r, Math.max(0, second - Date.now())));
  }
  // Afterwards, so that it costs the snapshots nothing: each time a growing file's node got a new
  // fullReadMs, that snapshot read it in full.
  const growing = new Set(listSessionFiles(agentDir).sort((a, b) => b.size - a.size).slice(0, files).map((f) => relative(agentDir, f.path)));
  const reader = new BlobReader(repo, new SealPool(0));
  const last = new Map<string, number | undefined>();
  for (const [i, s] of taken.entries()) {
    for await (const node of readTree(reader, s.snapshot)) {
      if (!growing.has(node.path)) continue;
      if (i > 0 && node.fullReadMs !== last.get(node.path)) run.fullReads++;
      last.set(node.path, node.fullReadMs);
    }
  }
  return run;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "1GiB" },
      files: { type: "string", default: "10" },
      "watch-seconds": { type: "string", default: "60" },
      "interval-seconds": { type: "string", default: "10" },
      seed: { type: "string", default: "1" },
      out: { type: "string", default: join(PROJECT_ROOT, "bench", "out") },
      keep: { type: "boolean", default: false },
    },
  });
  const files = Number(values.files);
  const watchSeconds = Number(values["watch-seconds"]);
  const intervalMs = Number(values["interval-seconds"]) * 1000;
  const loadBefore = loadavg();
  await withWorkDir("pi-guard-bench-full-read-", values.keep!, log, async (workDir) => {
    const agentDir = join(workDir, "agent");
    const pool = loadTextPool(DEFAULT_POOL_ROOT);
    const gen = generateAgentDir({ out: agentDir, sizeBytes: parseSize(values.size!), seed: values.seed!, pool });
    log(`${gen.sessions} sessions, ${formatBytes(gen.sessionBytes + gen.otherBytes)} in ${(gen.ms / 1000).toFixed(1)} s`);
    const cli = await cliPart(workDir, agentDir, pool, files);
    const growing = listSessionFiles(agentDir).sort((a, b) => b.size - a.size).slice(0, files);
    const growingBytes = growing.reduce((n, f) => n + f.size, 0);
    log(`watching ${watchSeconds} s twice: window ${intervalMs / 1000} s, then never passing`);
    const bounded = await watchPart(workDir, agentDir, pool, files, watchSeconds, intervalMs);
    const trusting = await watchPart(workDir, agentDir, pool, files, watchSeconds, null);
    // Each growing file is read in full once per window: the extra bytes per full read of all of them.
    const extra = bounded.bytesRead - (trusting.bytesRead / trusting.snapshots) * bounded.snapshots;
    const windows = Math.max(1, bounded.fullReads / files);
    const extraPerInterval = extra / windows;

    const lines: string[] = [];
    lines.push(`full-read window: ${formatBytes(gen.sessionBytes + gen.otherBytes)} agent dir, ${gen.sessions} sessions; the ${files} largest grow (${formatBytes(growingBytes)} together)`);
    lines.push(`node ${process.version}, ${cpus().length} CPUs, load average ${loadBefore.map((l) => l.toFixed(1)).join(" ")} at the start, ${loadavg().map((l) => l.toFixed(1)).join(" ")} at the end`);
    lines.push("");
    lines.push(`${"step".padEnd(28)} ${"restic".padStart(9)} ${"pi-guard".padStart(9)} ${"(bytes read)".padStart(14)}`);
    const steps = [...new Set(cli.map((r) => r.step))];
    const secs = (r?: StepResult) => (r ? `${(r.ms / 1000).toFixed(2)} s` : "-");
    for (const step of steps) {
      const r = cli.find((x) => x.step === step && x.tool === "restic");
      const p = cli.find((x) => x.step === step && x.tool === "pi-guard")!;
      lines.push(`${step.padEnd(28)} ${secs(r).padStart(9)} ${secs(p).padStart(9)} ${formatBytes(p.bytesRead ?? 0).padStart(14)}`);
    }
    lines.push("");
    const row = (w: WatchRun) =>
      `${(w.intervalMs === null ? "never passes" : `${w.intervalMs / 1000} s`).padEnd(14)} ${String(w.snapshots).padStart(9)} ${String(w.fullReads).padStart(10)} ${formatBytes(w.bytesRead).padStart(12)} ${`${(w.snapshotMs / w.snapshots).toFixed(0)} ms`.padStart(14)}`;
    lines.push(`watching ${watchSeconds} s (an entry to each of ${files} sessions and a snapshot every second, one process):`);
    lines.push(`${"window".padEnd(14)} ${"snapshots".padStart(9)} ${"full reads".padStart(10)} ${"read".padStart(12)} ${"mean snapshot".padStart(14)}`);
    lines.push(row(bounded));
    lines.push(row(trusting));
    lines.push(`extra read: ${formatBytes(extra)} for ${bounded.fullReads} full reads of the ${files} growing files, ${formatBytes(extraPerInterval)} per window (they hold ${formatBytes(growingBytes)}); with the default window, that is per hour of watching`);
    console.log(lines.join("\n"));
    writeResultFile(values.out!, "full-read", { date: new Date().toISOString(), loadBefore, loadAfter: loadavg(), files, growingBytes, cli, watch: { seconds: watchSeconds, intervalMs, bounded, trusting, extra, extraPerInterval } } as { date: string });
  });
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
