// pi-guard vs restic on the same generated agent dir, in one run.
//   npm run bench -- [--size 1GiB] [--out bench/out] [--seed 1] [--keep] [--append-rounds 5] [--pi-guard-root DIR]
import { spawnSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { appendToLargest } from "./append.js";
import { sampleCompression } from "./compression.js";
import { DEFAULT_POOL_ROOT, generateAgentDir } from "./generate.js";
import { formatTable, listErrors, makeRow, withWorkDir, writeResultFile, type Cell, type Row } from "./report.js";
import { formatBytes, parseSize } from "./size.js";
import { loadTextPool } from "./textPool.js";
import { compareTrees, duBytes, hashTree, type TreeManifest } from "./treeHash.js";
import { piGuardTool, resticTool, type BackupTool, type Step } from "./tools.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PI_GUARD_MAX_RSS_MB = 150;

/** One tool's progress through the run; after its first failure every later cell repeats that error. */
interface ToolRun {
  tool: BackupTool;
  failed: string | null;
  steps: Record<string, unknown>;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

async function runStep(run: ToolRun, name: string, fn: () => Promise<Step>): Promise<Step | null> {
  if (run.failed) return null;
  const s = await fn();
  // Keep what was measured and what the tool reported, not its whole stdout.
  run.steps[name] = s.ok
    ? { ms: s.m.ms, peakRssMB: s.m.peakRssMB, reported: s.info }
    : { error: s.error, ms: s.m?.ms, exitCode: s.m?.exitCode, stderrTail: s.m?.stderr.slice(-2000), stdoutTail: s.m?.stdout.slice(-2000) };
  if (!s.ok) run.failed = `${name}: ${s.error}`;
  log(`${run.tool.name} ${name}: ${s.ok ? `${(s.m.ms / 1000).toFixed(2)} s, peak ${s.m.peakRssMB.toFixed(1)} MB` : `error: ${s.error}`}`);
  return s;
}

const errorCell = (run: ToolRun): Cell => ({ error: run.failed ?? "not measured" });
const timeCell = (run: ToolRun, s: Step | null): Cell => (s?.ok ? { value: s.m.ms } : errorCell(run));
const rssCell = (run: ToolRun, s: Step | null): Cell => (s?.ok ? { value: s.m.peakRssMB } : errorCell(run));
/** The median time of rounds of one step; an error when any round failed. */
function medianTimeCell(run: ToolRun, rounds: (Step | null)[]): Cell {
  const ms = rounds.map((s) => (s?.ok ? s.m.ms : NaN)).sort((a, b) => a - b);
  if (ms.length === 0 || ms.some(Number.isNaN)) return errorCell(run);
  log(`${run.tool.name} rounds: ${ms.map((m) => (m / 1000).toFixed(2)).join(" ")} s, median ${(ms[Math.floor(ms.length / 2)] / 1000).toFixed(2)} s`);
  return { value: ms[Math.floor(ms.length / 2)] };
}
const maxRssCell = (run: ToolRun, rounds: (Step | null)[]): Cell =>
  rounds.every((s) => s?.ok) ? { value: Math.max(...rounds.map((s) => (s as Extract<Step, { ok: true }>).m.peakRssMB)) } : errorCell(run);
const repoBytes = (run: ToolRun): number | null => (run.failed ? null : duBytes(run.tool.repoDir));

async function restoreAndVerify(run: ToolRun, workDir: string, expected: TreeManifest): Promise<{ step: Step | null; verify: Cell }> {
  const target = join(workDir, `restore-${run.tool.name}`);
  mkdirSync(target, { recursive: true }); // restore into an existing, empty dir
  const s = await runStep(run, "restore", () => run.tool.restore(target));
  let verify: Cell = errorCell(run);
  if (s?.ok) {
    const result = compareTrees(expected, await hashTree(target));
    verify = { text: result };
    run.steps.restoreVerify = result;
    log(`${run.tool.name} restore verify: ${result}`);
  }
  rmSync(target, { recursive: true, force: true }); // 1 GiB each: free it right away
  return { step: s, verify };
}

function resticVersion(): string {
  const r = spawnSync("restic", ["version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : `unavailable: ${(r.stderr || String(r.error)).trim()}`;
}

async function bench(opts: { sizeBytes: number; seed: string; outDir: string; workDir: string; piGuardRoot: string; appendRounds: number }): Promise<void> {
  const agentDir = join(opts.workDir, "agent");
  log(`generating ${formatBytes(opts.sizeBytes)} agent dir in ${agentDir}`);
  const pool = loadTextPool(DEFAULT_POOL_ROOT);
  const gen = generateAgentDir({ out: agentDir, sizeBytes: opts.sizeBytes, seed: opts.seed, pool });
  log(`${gen.sessions} sessions, ${formatBytes(gen.sessionBytes + gen.otherBytes)} in ${(gen.ms / 1000).toFixed(1)} s`);
  const compression = sampleCompression(agentDir);
  log(`compression sample: gzip -1 ${compression.gzip1Ratio.toFixed(2)}x, zstd -3 ${compression.zstd3Ratio?.toFixed(2) ?? "n/a"}x`);
  // We cannot drop the page cache, so read the whole tree once: both tools then start warm.
  await hashTree(agentDir);
  (globalThis as { gc?: () => void }).gc?.();

  const runs: ToolRun[] = [resticTool(opts.workDir, agentDir), piGuardTool(opts.workDir, agentDir, opts.piGuardRoot)].map((tool) => ({ tool, failed: null, steps: {} }));
  const [restic, piGuard] = runs;
  const pgTool = piGuard.tool as ReturnType<typeof piGuardTool>;
  const cells = new Map<ToolRun, Record<string, Cell>>(runs.map((r) => [r, {}]));

  for (const r of runs) await runStep(r, "init", () => r.tool.init());
  // (a) initial snapshot, (e) repository size after it
  const sizeAfterInitial = new Map<ToolRun, number | null>();
  for (const r of runs) {
    const s = await runStep(r, "initialSnapshot", () => r.tool.snapshot());
    const bytes = repoBytes(r);
    sizeAfterInitial.set(r, bytes);
    Object.assign(cells.get(r)!, { initialMs: timeCell(r, s), initialRss: rssCell(r, s), repoSize: bytes === null ? errorCell(r) : { value: bytes } });
  }
  // (b) pi appends ~4 KB to its 10 largest sessions; both tools back up the same change. The growth
  // is the first round's; the time is the median of opts.appendRounds interleaved rounds, each a
  // fresh append, as one append's time moves by tens of ms run to run.
  const appended = appendToLargest(agentDir, pool, 10, 4096, `append:${opts.seed}`);
  log(`appended ${appended.bytes} bytes to ${appended.files.length} sessions`);
  await hashTree(agentDir); // keeps the cache state equal for both tools
  const appendRounds = new Map<ToolRun, (Step | null)[]>(runs.map((r) => [r, []]));
  for (const r of runs) {
    const s = await runStep(r, "appendSnapshot", () => r.tool.snapshot());
    appendRounds.get(r)!.push(s);
    const before = sizeAfterInitial.get(r);
    const after = repoBytes(r);
    const growth: Cell = before != null && after !== null ? { value: after - before } : errorCell(r);
    Object.assign(cells.get(r)!, { appendGrowth: growth });
  }
  for (let round = 2; round <= opts.appendRounds; round++) {
    appendToLargest(agentDir, pool, 10, 4096, `append:${opts.seed}:${round}`);
    await hashTree(agentDir);
    for (const r of runs) appendRounds.get(r)!.push(await runStep(r, `appendSnapshot${round}`, () => r.tool.snapshot()));
  }
  for (const r of runs) Object.assign(cells.get(r)!, { appendMs: medianTimeCell(r, appendRounds.get(r)!), appendRss: maxRssCell(r, appendRounds.get(r)!) });
  // (c) nothing changed
  for (const r of runs) {
    const s = await runStep(r, "unchangedSnapshot", () => r.tool.snapshot());
    cells.get(r)!.unchangedMs = timeCell(r, s);
  }
  // (b') a second append, both tools unlocking with a password (scrypt for both)
  const appended2 = appendToLargest(agentDir, pool, 10, 4096, `append2:${opts.seed}`);
  log(`appended ${appended2.bytes} bytes to ${appended2.files.length} sessions`);
  await hashTree(agentDir);
  for (const r of runs) {
    const s = await runStep(r, "appendSnapshotPassword", () => r.tool.passwordSnapshot());
    cells.get(r)!.appendPasswordMs = timeCell(r, s);
  }
  // (b'') a third append, now with `pi-guard watch` running: `pi-guard snapshot` hands the work to it
  // (src/watch/socket.ts); restic backs up the same change again, in the same run, for the ratio.
  let watcher: Awaited<ReturnType<typeof pgTool.startWatch>> | undefined;
  if (!piGuard.failed) {
    try {
      watcher = await pgTool.startWatch();
    } catch (err) {
      piGuard.failed = `watch: ${(err as Error).message}`;
    }
  }
  // A watcher that has been running takes snapshots with its code warm (the first few of a new
  // process are JIT-cold, 100-400 ms for 10 files): one hand-off, not measured, makes it so.
  if (watcher) {
    appendToLargest(agentDir, pool, 10, 4096, `append3-warm:${opts.seed}`);
    const warm = await piGuard.tool.snapshot();
    if (!warm.ok || warm.info.via !== "watcher") piGuard.failed = `appendSnapshotWatcher warm-up: ${warm.ok ? `via ${String(warm.info.via)} (${String(warm.info.handOff ?? "")})` : warm.error}`;
  }
  // After the watcher's start-up snapshot, which takes whatever changed before it ran; the median of
  // opts.appendRounds interleaved rounds, as for (b).
  const watcherRounds = new Map<ToolRun, (Step | null)[]>(runs.map((r) => [r, []]));
  for (let round = 1; round <= opts.appendRounds; round++) {
    const appended3 = appendToLargest(agentDir, pool, 10, 4096, `append3:${opts.seed}:${round}`);
    log(`appended ${appended3.bytes} bytes to ${appended3.files.length} sessions`);
    await hashTree(agentDir);
    for (const r of runs) {
      const s = await runStep(r, round === 1 ? "appendSnapshotWatcher" : `appendSnapshotWatcher${round}`, () => r.tool.snapshot());
      if (r === piGuard && s?.ok && (s.info.via !== "watcher" || s.info.filesChanged !== appended3.files.length)) piGuard.failed = `appendSnapshotWatcher: via ${String(s.info.via)} (${String(s.info.handOff ?? "")}), ${String(s.info.filesChanged)} files changed, not ${appended3.files.length}`;
      watcherRounds.get(r)!.push(s);
    }
  }
  for (const r of runs) cells.get(r)!.appendWatcherMs = r === piGuard && piGuard.failed ? errorCell(r) : medianTimeCell(r, watcherRounds.get(r)!);
  await watcher?.stop();
  const expectedAfterWatch = await hashTree(agentDir);
  // (d) restore everything into an empty dir and compare hashes with the source
  for (const r of runs) {
    const { step, verify } = await restoreAndVerify(r, opts.workDir, expectedAfterWatch);
    Object.assign(cells.get(r)!, { restoreMs: timeCell(r, step), restoreRss: rssCell(r, step), restoreVerify: verify });
  }

  const c = (r: ToolRun, k: string): Cell => cells.get(r)![k] ?? errorCell(r);
  const row = (metric: string, unit: Row["unit"], key: string, target: Parameters<typeof makeRow>[4]): Row => makeRow(metric, unit, c(restic, key), c(piGuard, key), target);
  const rssTarget = { kind: "piGuardMax", max: PI_GUARD_MAX_RSS_MB } as const;
  const rows: Row[] = [
    row("initial snapshot time", "ms", "initialMs", { kind: "ratio", max: 1.0 }),
    row("initial snapshot peak RSS", "MB", "initialRss", rssTarget),
    row("repo size after initial", "bytes", "repoSize", { kind: "ratio", max: 1.0 }),
    row("append-only snapshot time", "ms", "appendMs", { kind: "ratio", max: 0.1 }),
    row("append-only snapshot, password", "ms", "appendPasswordMs", { kind: "ratio", max: 0.1 }),
    row("append-only snapshot, watcher running", "ms", "appendWatcherMs", { kind: "ratio", max: 0.1 }),
    row("append-only snapshot peak RSS", "MB", "appendRss", rssTarget),
    row("repo growth from append", "bytes", "appendGrowth", { kind: "ratio", max: 0.1 }),
    row("unchanged snapshot time", "ms", "unchangedMs", { kind: "none" }),
    row("full restore time", "ms", "restoreMs", { kind: "ratio", max: 1.0 }),
    row("full restore peak RSS", "MB", "restoreRss", rssTarget),
    row("restore byte-identical", "text", "restoreVerify", { kind: "identical" }),
  ];

  const tree = { sessions: gen.sessions, bytes: gen.sessionBytes + gen.otherBytes, generateMs: gen.ms, appendedBytes: appended.bytes, appendedFiles: appended.files.length, compression };
  console.log(`\npi-guard vs restic on ${gen.sessions} sessions, ${formatBytes(tree.bytes)} (gzip -1 ${compression.gzip1Ratio.toFixed(2)}x)\n`);
  console.log(formatTable(rows));
  console.log("\npi-guard runs with its key file (HKDF), as it does unattended; the 'password' row unlocks with scrypt, as restic always does.");
  console.log(`The append-only rows (key file, watcher running) are each tool's median of ${opts.appendRounds} interleaved rounds; the growth is the first round's.`);
  const errors = listErrors(rows);
  if (errors.length > 0) console.log(`\nerrors:\n  ${errors.join("\n  ")}`);
  const date = new Date().toISOString();
  const result = {
    date,
    options: { sizeBytes: opts.sizeBytes, seed: opts.seed },
    environment: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, totalMemMB: Math.round(totalmem() / 2 ** 20), restic: resticVersion() },
    tree,
    rows,
    steps: Object.fromEntries(runs.map((r) => [r.tool.name, r.steps])),
  };
  writeResultFile(opts.outDir, "results", result);
}

function appendRoundsOf(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 50) throw new Error(`--append-rounds must be a whole number from 1 to 50, not ${JSON.stringify(text)}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "1GiB" },
      out: { type: "string", default: "bench/out" },
      seed: { type: "string", default: "1" },
      keep: { type: "boolean", default: false },
      // Interleaved rounds of each append-only step (key file, watcher running); the rows give their median.
      "append-rounds": { type: "string", default: "5" },
      // Benchmark another pi-guard checkout or build (its bin/ and dist/) against the same data.
      "pi-guard-root": { type: "string", default: PROJECT_ROOT },
    },
  });
  await withWorkDir("pi-guard-bench-", values.keep, log, (workDir) =>
    bench({ sizeBytes: parseSize(values.size), seed: values.seed, outDir: resolve(values.out), workDir, piGuardRoot: resolve(values["pi-guard-root"]), appendRounds: appendRoundsOf(values["append-rounds"]) }),
  );
}

main().catch((err: unknown) => {
  console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
