// pi-guard vs restic against the same local S3 server (s3rver on 127.0.0.1), in one run, plus both
// tools' full restore from a local disk repository of the same tree.
//   npm run bench:s3 -- [--size 1GiB] [--seed 1] [--out bench/out] [--keep] [--no-local] [--pi-guard-root DIR]
//     [--request-log FILE]  (appends each request the proxy sees: time, kind, path)
import { spawn, type ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import { appendFileSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { appendToLargest } from "./append.js";
import { DEFAULT_POOL_ROOT, generateAgentDir } from "./generate.js";
import { formatTable, listErrors, makeRow, withWorkDir, writeResultFile, type Cell, type Row } from "./report.js";
import { type Counts, diffCounts, startCountingProxy, type CountingProxy } from "./s3-proxy.js";
import { formatBytes, parseSize } from "./size.js";
import { loadTextPool } from "./textPool.js";
import { compareTrees, hashTree, type TreeManifest } from "./treeHash.js";
import { piGuardTool, resticTool, type BackupTool, type Step } from "./tools.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The tests' s3rver starter: s3rver in a child process, prints "LISTENING <port>". */
const S3RVER_CHILD = join(PROJECT_ROOT, "test/helpers/s3rver-child.mjs");
const BUCKET = "bench";
const PI_GUARD_MAX_RSS_MB = 150;
const S3RVER_KEY = "S3RVER";

const log = (msg: string): void => void process.stderr.write(`[bench:s3] ${msg}\n`);

async function startS3rver(dir: string): Promise<{ port: number; child: ChildProcess }> {
  // S3 checks a PUT's x-amz-checksum-sha256 on its own machines; here it would take the tools' cores.
  const child = spawn(process.execPath, [S3RVER_CHILD, dir, "0", BUCKET], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, S3RVER_NO_CHECKSUMS: "1" } });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const port = await new Promise<number>((resolve, reject) => {
    let buf = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      const m = /LISTENING (\d+)\n/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (code) => reject(new Error(`s3rver exited ${code} before listening: ${stderr.trim()}`)));
  });
  return { port, child };
}

/** Bytes of the objects s3rver keeps for one repository (its metadata files excluded). */
function objectBytes(dir: string): number {
  let total = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith("._S3rver_object")) total += statSync(full).size;
    }
  };
  walk(dir);
  return total;
}

interface Run {
  tool: BackupTool;
  /** The repository's first path segment in the bucket, for request counts; "" for a local repo. */
  countKey: string;
  failed: string | null;
  steps: Record<string, unknown>;
  cells: Record<string, Cell>;
}

async function step(run: Run, name: string, proxy: CountingProxy | undefined, fn: () => Promise<Step>): Promise<Step | null> {
  if (run.failed) return null;
  const before = proxy?.snapshot().get(run.countKey);
  const s = await fn();
  const requests: Counts | undefined = proxy && run.countKey ? diffCounts(proxy.snapshot().get(run.countKey), before) : undefined;
  run.steps[name] = s.ok
    ? { ms: s.m.ms, peakRssMB: s.m.peakRssMB, requests, reported: s.info }
    : { error: s.error, ms: s.m?.ms, exitCode: s.m?.exitCode, stderrTail: s.m?.stderr.slice(-2000), requests };
  if (!s.ok) run.failed = `${name}: ${s.error}`;
  const req = requests ? `, ${requests.total} requests ${JSON.stringify(requests.byKind)}` : "";
  log(`${run.tool.name} ${name}: ${s.ok ? `${(s.m.ms / 1000).toFixed(2)} s, peak ${s.m.peakRssMB.toFixed(1)} MB${req}` : `error: ${s.error}`}`);
  if (s.ok) {
    run.cells[`${name}Ms`] = { value: s.m.ms };
    run.cells[`${name}Rss`] = { value: s.m.peakRssMB };
    if (requests) run.cells[`${name}Requests`] = { value: requests.total };
  }
  return s;
}

async function restoreAndVerify(run: Run, name: string, workDir: string, proxy: CountingProxy | undefined, expected: TreeManifest): Promise<void> {
  const target = join(workDir, `restore-${name}-${run.tool.name}`);
  mkdirSync(target, { recursive: true });
  const s = await step(run, name, proxy, () => run.tool.restore(target));
  if (s?.ok) {
    const result = compareTrees(expected, await hashTree(target));
    run.cells[`${name}Verify`] = { text: result };
    run.steps[`${name}Verify`] = result;
    log(`${run.tool.name} ${name} verify: ${result}`);
  }
  rmSync(target, { recursive: true, force: true });
}

async function bench(opts: { sizeBytes: number; seed: string; outDir: string; workDir: string; piGuardRoot: string; local: boolean; requestLog?: string }): Promise<void> {
  const agentDir = join(opts.workDir, "agent");
  log(`generating ${formatBytes(opts.sizeBytes)} agent dir in ${agentDir}`);
  const pool = loadTextPool(DEFAULT_POOL_ROOT);
  const gen = generateAgentDir({ out: agentDir, sizeBytes: opts.sizeBytes, seed: opts.seed, pool });
  log(`${gen.sessions} sessions, ${formatBytes(gen.sessionBytes + gen.otherBytes)} in ${(gen.ms / 1000).toFixed(1)} s`);
  await hashTree(agentDir); // warm page cache for both tools

  const s3Dir = join(opts.workDir, "s3");
  mkdirSync(s3Dir);
  const server = await startS3rver(s3Dir);
  const requestLog = opts.requestLog;
  const proxy = await startCountingProxy(server.port, requestLog ? { onRequest: (line) => appendFileSync(requestLog, `${new Date().toISOString()} ${line}\n`) } : {});
  log(`s3rver on 127.0.0.1:${server.port}, counting proxy on ${proxy.endpoint}`);
  const aws = { AWS_ACCESS_KEY_ID: S3RVER_KEY, AWS_SECRET_ACCESS_KEY: S3RVER_KEY, AWS_REGION: "us-east-1", AWS_DEFAULT_REGION: "us-east-1" };
  const mk = (tool: BackupTool, countKey: string): Run => ({ tool, countKey, failed: null, steps: {}, cells: {} });
  const s3Runs = [
    mk(resticTool(opts.workDir, agentDir, { repository: `s3:${proxy.endpoint}/${BUCKET}/restic`, tag: "s3", env: aws }), "restic"),
    mk(piGuardTool(opts.workDir, agentDir, opts.piGuardRoot, { repository: `s3://${BUCKET}/pi-guard`, tag: "s3", env: { ...aws, AWS_ENDPOINT_URL: proxy.endpoint } }), "pi-guard"),
  ];
  let appendedBytes = 0;
  const localRuns = opts.local ? [mk(resticTool(opts.workDir, agentDir), ""), mk(piGuardTool(opts.workDir, agentDir, opts.piGuardRoot), "")] : [];
  try {
    for (const r of s3Runs) await step(r, "init", proxy, () => r.tool.init());
    for (const r of s3Runs) {
      await step(r, "initial", proxy, () => r.tool.snapshot());
      if (!r.failed) r.cells.repoSize = { value: objectBytes(join(s3Dir, BUCKET, r.countKey)) };
    }
    const appended = appendToLargest(agentDir, pool, 10, 4096, `append:${opts.seed}`);
    appendedBytes = appended.bytes;
    log(`appended ${appended.bytes} bytes to ${appended.files.length} sessions`);
    const expected = await hashTree(agentDir);
    for (const r of s3Runs) await step(r, "append", proxy, () => r.tool.snapshot());
    for (const r of s3Runs) await restoreAndVerify(r, "restore", opts.workDir, proxy, expected);
    // The same tree (after the append) from a local disk repository.
    for (const r of localRuns) {
      await step(r, "init", undefined, () => r.tool.init());
      await step(r, "initial", undefined, () => r.tool.snapshot());
    }
    for (const r of localRuns) await restoreAndVerify(r, "localRestore", opts.workDir, undefined, expected);
  } finally {
    await proxy.close();
    server.child.kill("SIGKILL");
  }

  const [rS3, pS3] = s3Runs;
  const cell = (r: Run | undefined, key: string): Cell => r?.cells[key] ?? { error: r ? (r.failed ?? "not measured") : "not run (--no-local)" };
  const row = (metric: string, unit: Row["unit"], a: Run | undefined, b: Run | undefined, key: string, target: Parameters<typeof makeRow>[4]): Row =>
    makeRow(metric, unit, cell(a, key), cell(b, key), target);
  const rssTarget = { kind: "piGuardMax", max: PI_GUARD_MAX_RSS_MB } as const;
  const none = { kind: "none" } as const;
  const rows: Row[] = [
    row("S3 initial snapshot time", "ms", rS3, pS3, "initialMs", { kind: "ratio", max: 1.0 }),
    row("S3 initial snapshot peak RSS", "MB", rS3, pS3, "initialRss", rssTarget),
    row("S3 initial snapshot requests", "count", rS3, pS3, "initialRequests", none),
    row("S3 repo size after initial", "bytes", rS3, pS3, "repoSize", { kind: "ratio", max: 1.0 }),
    row("S3 append-only snapshot time", "ms", rS3, pS3, "appendMs", { kind: "ratio", max: 0.1 }),
    row("S3 append-only snapshot peak RSS", "MB", rS3, pS3, "appendRss", rssTarget),
    row("S3 append-only snapshot requests", "count", rS3, pS3, "appendRequests", none),
    row("S3 full restore time", "ms", rS3, pS3, "restoreMs", { kind: "ratio", max: 1.0 }),
    row("S3 full restore peak RSS", "MB", rS3, pS3, "restoreRss", rssTarget),
    row("S3 full restore requests", "count", rS3, pS3, "restoreRequests", none),
    row("S3 restore byte-identical", "text", rS3, pS3, "restoreVerify", { kind: "identical" }),
    row("local full restore time", "ms", localRuns[0], localRuns[1], "localRestoreMs", { kind: "ratio", max: 1.0 }),
    row("local full restore peak RSS", "MB", localRuns[0], localRuns[1], "localRestoreRss", rssTarget),
    row("local restore byte-identical", "text", localRuns[0], localRuns[1], "localRestoreVerify", { kind: "identical" }),
  ];
  const tree = { sessions: gen.sessions, bytes: gen.sessionBytes + gen.otherBytes, appendedBytes };
  console.log(`\npi-guard vs restic on s3rver (127.0.0.1), ${gen.sessions} sessions, ${formatBytes(tree.bytes)}\n`);
  console.log(formatTable(rows));
  console.log("\nRequests are counted by a proxy in front of s3rver (every request of each tool's repository prefix).");
  const errors = listErrors(rows);
  if (errors.length > 0) console.log(`\nerrors:\n  ${errors.join("\n  ")}`);
  const date = new Date().toISOString();
  const result = {
    date,
    options: { sizeBytes: opts.sizeBytes, seed: opts.seed, local: opts.local },
    environment: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model },
    tree,
    rows,
    steps: Object.fromEntries([...s3Runs.map((r) => [`${r.tool.name} s3`, r.steps]), ...localRuns.map((r) => [`${r.tool.name} local`, r.steps])]),
  };
  writeResultFile(opts.outDir, "s3", result);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "1GiB" },
      out: { type: "string", default: "bench/out" },
      seed: { type: "string", default: "1" },
      keep: { type: "boolean", default: false },
      "no-local": { type: "boolean", default: false },
      "pi-guard-root": { type: "string", default: PROJECT_ROOT },
      "request-log": { type: "string" },
    },
  });
  await withWorkDir("pi-guard-bench-s3-", values.keep, log, (workDir) =>
    bench({
      sizeBytes: parseSize(values.size),
      seed: values.seed,
      outDir: resolve(values.out),
      workDir,
      piGuardRoot: resolve(values["pi-guard-root"]),
      local: !values["no-local"],
      requestLog: values["request-log"] && resolve(values["request-log"]),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(`bench:s3 failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
