// Benchmark of `sessions list` and `sessions search` on a generated corpus of ~1 GiB and ~1,000
// sessions, run as child processes of the built CLI, cold (no catalog, no index) and warm.
//   npm run build && node dist/bench/sessions.js [--size 1GiB] [--sessions 1000] [--keep] [--bin path/to/bin/pi-guard.js]
// The bin runs as a user runs it: through its shebang, with pi-guard's node flags and environment.
// --bin times another build's CLI (e.g. main's) on the same generated corpus.
// Writes bench/out/sessions-<time>.json and .txt; temp data lives under /tmp and is removed.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { appendToLargest, DEFAULT_POOL_ROOT, generateAgentDir } from "./generate.js";
import { measure, type Measurement } from "./measure.js";
import { formatBytes, parseSize } from "./size.js";
import { loadTextPool } from "./textPool.js";

const PROJECT_ROOT = findProjectRoot(dirname(fileURLToPath(import.meta.url)));
let BIN = join(PROJECT_ROOT, "bin", "pi-guard.js");
const WARM_RUNS = 5;
const TARGET_WARM_SEARCH_MS = 100; // issue 20
const QUERIES = ["function", "deprecated callback", '"error handling"', "xyzzyplugh"];

function findProjectRoot(from: string): string {
  for (let dir = from; dirname(dir) !== dir; dir = dirname(dir)) {
    try {
      if (statSync(join(dir, "bin", "pi-guard.js")).isFile()) return dir;
    } catch {
      // keep walking up
    }
  }
  throw new Error("cannot find bin/pi-guard.js above " + from);
}

/**
 * generateAgentDir plans ~230 sessions per GiB. To reach ~1,000 sessions in ~1 GiB, it is called
 * many times on the same folder with small budgets and distinct seeds (3 sessions per call, sizes
 * varying call to call); the later calls only rewrite the small non-session files.
 */
function generateCorpus(out: string, totalBytes: number, sessions: number): { sessions: number; ms: number } {
  const pool = loadTextPool(DEFAULT_POOL_ROOT);
  const calls = Math.ceil(sessions / 3);
  const mean = totalBytes / calls;
  const started = Date.now();
  let made = 0;
  for (let i = 0; i < calls; i++) {
    const spread = 0.25 + 1.5 * ((i * 7919) % calls) / calls; // 0.25x .. 1.75x, mean 1x
    made += generateAgentDir({ out, sizeBytes: Math.round(mean * spread), seed: `sessions-bench-${i}`, pool }).sessions;
  }
  return { sessions: made, ms: Date.now() - started };
}

interface Row {
  step: string;
  ms: number;
  detail: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function main(): Promise<void> | void {
  const { values } = parseArgs({ options: { size: { type: "string", default: "1GiB" }, sessions: { type: "string", default: "1000" }, keep: { type: "boolean", default: false }, bin: { type: "string" } } });
  if (values.bin) BIN = resolve(values.bin);
  const work = mkdtempSync("/tmp/pi-guard-bench-sessions-");
  return run(work, parseSize(values.size!), Number(values.sessions)).finally(() => {
    if (values.keep) console.log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  });
}

async function run(work: string, sizeBytes: number, sessionCount: number): Promise<void> {
  const agentDir = join(work, "home", ".pi", "agent");
  const env: NodeJS.ProcessEnv = {
    // The shebang's node is this node.
    PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
    HOME: join(work, "home"),
    PI_CODING_AGENT_DIR: agentDir,
    PI_GUARD_REPO: join(work, "repo"),
    XDG_CONFIG_HOME: join(work, "xdg-config"),
    XDG_DATA_HOME: join(work, "xdg-data"),
    NO_COLOR: "1",
  };
  const dataDir = join(work, "xdg-data", "pi-guard");
  const cli = async (args: string[]): Promise<Measurement> => {
    const m = await measure(BIN, args, { env, timeoutMs: 30 * 60_000 });
    if (m.exitCode !== 0) throw new Error(`pi-guard ${args.join(" ")} exited ${m.exitCode}: ${m.stderr.trim().split("\n").pop()}`);
    return m;
  };
  const gen = generateCorpus(agentDir, sizeBytes, sessionCount);
  const corpusBytes = Number((await measure("du", ["-sb", join(agentDir, "sessions")])).stdout.split("\t")[0]);
  console.log(`corpus: ${gen.sessions} sessions, ${formatBytes(corpusBytes)} in ${(gen.ms / 1000).toFixed(1)} s`);
  await cli(["init"]);
  const snap = await cli(["snapshot", "--json"]);
  const rows: Row[] = [{ step: "snapshot (setup)", ms: snap.ms, detail: "one snapshot, so list/search also read the repository" }];

  rmSync(join(dataDir, "catalog"), { recursive: true, force: true });
  const listCold = await cli(["--json", "sessions", "list"]);
  const listed = (JSON.parse(listCold.stdout) as unknown[]).length;
  rows.push({ step: "list cold", ms: listCold.ms, detail: `${listed} sessions, empty catalog, peak ${listCold.peakRssMB.toFixed(0)} MB` });
  const listWarm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) listWarm.push((await cli(["--json", "sessions", "list"])).ms);
  rows.push({ step: "list warm", ms: median(listWarm), detail: `median of ${WARM_RUNS}` });

  rmSync(join(dataDir, "search"), { recursive: true, force: true });
  const searchCold = await cli(["--json", "sessions", "search", QUERIES[0]]);
  const cold = JSON.parse(searchCold.stdout) as { index: { indexed: number; ms: number } };
  const indexBytes = statSync(join(dataDir, "search", "index.sqlite")).size;
  rows.push({ step: "search cold", ms: searchCold.ms, detail: `indexed ${cold.index.indexed} sessions in ${(cold.index.ms / 1000).toFixed(1)} s, index ${formatBytes(indexBytes)}, peak ${searchCold.peakRssMB.toFixed(0)} MB` });
  const warm: Record<string, { processMs: number; queryMs: number; results: number }> = {};
  for (const q of QUERIES) {
    const runs: Measurement[] = [];
    for (let i = 0; i < WARM_RUNS; i++) runs.push(await cli(["--json", "sessions", "search", q]));
    const parsed = runs.map((m) => JSON.parse(m.stdout) as { queryMs: number; results: unknown[]; index: { indexed: number } });
    if (parsed.some((p) => p.index.indexed !== 0)) throw new Error(`warm search for ${q} re-indexed sessions`);
    warm[q] = { processMs: median(runs.map((m) => m.ms)), queryMs: median(parsed.map((p) => p.queryMs)), results: parsed[0].results.length };
    rows.push({ step: `search warm ${q}`, ms: warm[q].processMs, detail: `query ${warm[q].queryMs} ms, ${warm[q].results} sessions, median of ${WARM_RUNS}` });
  }
  // A watched agent dir gets a snapshot whenever a session grows: pi appends ~4 KB to one
  // session, a snapshot is taken, and the next list and search must take in that one snapshot.
  const pool = loadTextPool(DEFAULT_POOL_ROOT);
  const afterSnapshot = { list: [] as number[], search: [] as number[] };
  for (let i = 0; i < WARM_RUNS; i++) {
    appendToLargest(agentDir, pool, 1, 4096, `sessions-bench-append-${i}`);
    await cli(["snapshot", "--json"]);
    afterSnapshot.list.push((await cli(["--json", "sessions", "list"])).ms);
    appendToLargest(agentDir, pool, 1, 4096, `sessions-bench-append-${i}-b`);
    await cli(["snapshot", "--json"]);
    afterSnapshot.search.push((await cli(["--json", "sessions", "search", QUERIES[1]])).ms);
  }
  const snapshotsTaken = 1 + 2 * WARM_RUNS;
  rows.push({ step: "list after a new snapshot", ms: median(afterSnapshot.list), detail: `4 KB appended to one session, then a snapshot; median of ${WARM_RUNS}` });
  rows.push({ step: "search after a new snapshot", ms: median(afterSnapshot.search), detail: `the same, then "${QUERIES[1]}" (indexes the lines it gained); median of ${WARM_RUNS}` });
  const repoCatalog = join(dataDir, "catalog", (JSON.parse(readFileSync(join(work, "repo", "config"), "utf8")) as { id: string }).id);
  const cacheBytes = ["history.json", "content.json"].map((f) => statSync(join(repoCatalog, f)).size);
  rows.push({ step: `catalog cache after ${snapshotsTaken} snapshots`, ms: 0, detail: `history.json ${formatBytes(cacheBytes[0])}, content.json ${formatBytes(cacheBytes[1])}` });

  const worstWarm = Math.max(...Object.values(warm).map((w) => w.processMs));
  const pass = worstWarm <= TARGET_WARM_SEARCH_MS;

  const table = [
    `sessions benchmark: ${gen.sessions} sessions, ${formatBytes(corpusBytes)}, node ${process.version}, ${BIN}`,
    "",
    `${"step".padEnd(36)}  ${"wall".padStart(10)}  detail`,
    ...rows.map((r) => `${r.step.padEnd(36)}  ${(r.ms ? `${r.ms.toFixed(0)} ms` : "").padStart(10)}  ${r.detail}`),
    "",
    `warm search target <= ${TARGET_WARM_SEARCH_MS} ms (whole process): worst ${worstWarm.toFixed(0)} ms -> ${pass ? "pass" : "FAIL"}`,
  ].join("\n");
  console.log(table);
  const outDir = join(PROJECT_ROOT, "bench", "out");
  mkdirSync(outDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const json = { kind: "sessions", bin: BIN, time: new Date().toISOString(), node: process.version, corpus: { sessions: gen.sessions, bytes: corpusBytes, generateMs: gen.ms }, rows, warm, indexBytes, target: { warmSearchMs: TARGET_WARM_SEARCH_MS, worstWarm, pass } };
  writeFileSync(join(outDir, `sessions-${stamp}.json`), JSON.stringify(json, null, 2) + "\n");
  writeFileSync(join(outDir, `sessions-${stamp}.txt`), table + "\n");
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
