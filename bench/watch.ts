// `pi-guard watch` under a steady pi-like load, for N minutes (a benchmark, not a test).
//   npm run bench:watch -- [--minutes 10] [--sessions 20] [--interval-ms 100] [--out bench/out] [--keep]
// A driver appends real pi entries (lines sampled from the shared fixtures) to 20 session files,
// one append every 100 ms across them, while the watcher runs with the default config. Then the
// default retention (`forget --policy`) and a prune run, then check --read-data and a restore again.
// Reports the watcher's CPU and peak RSS, snapshots, objects and writes, repository growth against
// the appended bytes, and the same per day. Prints a table and writes JSON.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fixturesDir as sharedFixtures } from "./fixtures.js";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { watcherFiles } from "../src/watch/state.js";
import { Prng } from "./prng.js";
import { formatBytes } from "./size.js";
import { cleanEnv } from "./env.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = join(PROJECT_ROOT, "bin", "pi-guard.js");
const log = (msg: string): void => void process.stderr.write(`[bench:watch] ${msg}\n`);

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    sessions: { type: "string", default: "20" },
    "interval-ms": { type: "string", default: "100" },
    out: { type: "string", default: join(PROJECT_ROOT, "bench", "out") },
    fixtures: { type: "string" },
    seed: { type: "string", default: "watch" },
    keep: { type: "boolean", default: false },
  },
});
const minutes = Number(args.minutes);
const sessionCount = Number(args.sessions);
const intervalMs = Number(args["interval-ms"]);
if (!(minutes > 0) || !(sessionCount > 0) || !(intervalMs > 0)) throw new Error("--minutes, --sessions and --interval-ms must be positive numbers");

const fixturesDir = (): string => args.fixtures ?? sharedFixtures();

/** Every entry line (not a header, valid JSON) of every fixture session. */
function fixtureLines(dir: string): string[] {
  const lines: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".jsonl")) {
        for (const line of readFileSync(p, "utf8").split("\n")) {
          try {
            const v = JSON.parse(line) as { type?: string };
            if (v.type !== "session") lines.push(line);
          } catch {
            // torn or garbage lines are not what pi appends
          }
        }
      }
    }
  };
  walk(dir);
  if (lines.length === 0) throw new Error(`no entry lines in ${dir}`);
  return lines;
}

function run(env: NodeJS.ProcessEnv, argv: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(BIN, argv, { env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function mustRun(env: NodeJS.ProcessEnv, argv: string[]): string {
  const r = run(env, argv);
  if (r.code !== 0) throw new Error(`pi-guard ${argv.join(" ")} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Objects in the repository by folder (temp files of writers excluded), and their apparent bytes. */
function repoObjects(repo: string): { counts: Record<string, number>; total: number; bytes: number } {
  const counts: Record<string, number> = {};
  let total = 0;
  let bytes = 0;
  const walk = (d: string, top: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p, top || e.name);
      else if (e.isFile()) {
        bytes += statSync(p).size;
        if (e.name.includes(".tmp") || e.name.startsWith(".")) continue;
        const key = top || e.name;
        counts[key] = (counts[key] ?? 0) + 1;
        total++;
      }
    }
  };
  walk(repo, "");
  return { counts, total, bytes };
}

function clockTicks(): number {
  const r = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const n = Number(r.stdout?.trim());
  return Number.isFinite(n) && n > 0 ? n : 100;
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]); // utime + stime (fields 14 and 15)
}

function statusKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

function snapshotsMade(stateFile: string): number {
  try {
    return (JSON.parse(readFileSync(stateFile, "utf8")) as { snapshots: { made: number } }).snapshots.made;
  } catch {
    return 0;
  }
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function exited(child: ChildProcess): Promise<number | string> {
  return new Promise((r) => child.on("close", (code, signal) => r(code ?? signal ?? "unknown")));
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "pi-guard-bench-watch-"));
  const home = join(work, "home");
  const agentDir = join(home, ".pi", "agent");
  const repo = join(work, "repo");
  const stateHome = join(work, "xdg-state");
  const env = cleanEnv({
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_GUARD_REPO: repo,
    XDG_CONFIG_HOME: join(work, "xdg-config"),
    XDG_DATA_HOME: join(work, "xdg-data"),
    XDG_STATE_HOME: stateHome,
  });
  const prng = new Prng(args.seed!);
  const lines = fixtureLines(fixturesDir());
  const pick = () => prng.pick(lines);

  // 20 sessions in 5 projects, each with a header and a few entries, as pi leaves them.
  const files: string[] = [];
  for (let i = 0; i < sessionCount; i++) {
    const cwd = `/home/user/project-${i % 5}`;
    const dir = join(agentDir, "sessions", `--${cwd.slice(1).replace(/\//g, "-")}--`);
    mkdirSync(dir, { recursive: true });
    const time = new Date(Date.now() - (sessionCount - i) * 60_000).toISOString();
    const id = randomUUID();
    const file = join(dir, `${time.replace(/[:.]/g, "-")}_${id}.jsonl`);
    const body = [JSON.stringify({ type: "session", version: 3, id, timestamp: time, cwd }), ...Array.from({ length: 20 }, pick)].join("\n") + "\n";
    writeFileSync(file, body);
    files.push(file);
  }
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "anthropic" }));
  mustRun(env, ["init", "--json"]);

  const stateFile = watcherFiles(join(stateHome, "pi-guard"), agentDir).state;

  log(`watching ${sessionCount} sessions for ${minutes} min, one append every ${intervalMs} ms (work dir ${work})`);
  const watcher = spawn(BIN, ["watch", "--quiet"], { env, stdio: ["ignore", "ignore", "pipe"] });
  let watcherErr = "";
  watcher.stderr!.on("data", (d: Buffer) => (watcherErr = (watcherErr + d.toString()).slice(-20_000)));
  const watcherExit = exited(watcher);
  const pid = watcher.pid!;
  await waitFor("the watcher's first snapshot", () => snapshotsMade(stateFile) >= 1);
  const before = repoObjects(repo);
  const snapshotsBefore = snapshotsMade(stateFile);
  const ticks = clockTicks();
  const cpuStart = cpuTicks(pid);
  const t0 = Date.now();

  let appended = 0;
  let appends = 0;
  let maxRssKb = 0;
  const end = t0 + minutes * 60_000;
  let next = t0;
  let lastReport = t0;
  while (Date.now() < end) {
    const line = pick() + "\n";
    appendFileSync(files[appends % files.length], line);
    appended += Buffer.byteLength(line);
    appends++;
    if (appends % 10 === 0) maxRssKb = Math.max(maxRssKb, statusKb(pid, "VmRSS"));
    if (Date.now() - lastReport > 60_000) {
      lastReport = Date.now();
      log(`${((Date.now() - t0) / 60_000).toFixed(1)} min: ${appends} appends, ${formatBytes(appended)}, ${snapshotsMade(stateFile) - snapshotsBefore} snapshots`);
    }
    next += intervalMs;
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
  }
  const wallMs = Date.now() - t0;
  // Let the watcher catch up with the last appends, as it would in a quiet moment.
  const caughtUp = snapshotsMade(stateFile);
  await waitFor("the snapshot of the last appends", () => snapshotsMade(stateFile) > caughtUp, 30_000).catch(() => log("no snapshot after the last append within 30 s"));
  const cpuMs = ((cpuTicks(pid) - cpuStart) / ticks) * 1000;
  const peakRssKb = statusKb(pid, "VmHWM");
  watcher.kill("SIGTERM");
  const stopCode = await watcherExit;
  if (stopCode !== 0) log(`watcher exited ${stopCode}: ${watcherErr.trim().split("\n").slice(-3).join(" | ")}`);
  const snapshots = snapshotsMade(stateFile) - snapshotsBefore;
  const afterWatch = repoObjects(repo);
  const growth = afterWatch.bytes - before.bytes;
  const created = afterWatch.total - before.total;
  // Each snapshot also puts one lock object (and deletes it): a PUT on S3.
  const puts = created + snapshots;

  // Restorable: the newest snapshot has every session file exactly as it is now.
  const target = join(work, "restored");
  mkdirSync(target);
  mustRun(env, ["restore", "latest", "--target", target, "--json"]);
  const mismatched = files.filter((f) => !readFileSync(join(target, relative(agentDir, f))).equals(readFileSync(f))).length;

  // Retention (the config's default policy), then prune; every step must succeed, and the newest
  // snapshot must still restore byte-identical afterwards.
  const t = Date.now();
  const forgetReport = JSON.parse(mustRun(env, ["forget", "--policy", "--json"]));
  const pruneReport = JSON.parse(mustRun(env, ["prune", "--json"]));
  const retentionMs = Date.now() - t;
  const afterPrune = repoObjects(repo);
  mustRun(env, ["check", "--read-data", "--json"]);
  const afterTarget = join(work, "restored-after-prune");
  mkdirSync(afterTarget);
  mustRun(env, ["restore", "latest", "--target", afterTarget, "--json"]);
  const mismatchedAfterPrune = files.filter((f) => !readFileSync(join(afterTarget, relative(agentDir, f))).equals(readFileSync(f))).length;
  const retention = {
    ms: retentionMs,
    kept: forgetReport.keep.length as number,
    forgotten: forgetReport.removed as number,
    pruneReport,
    repoBytes: afterPrune.bytes,
    objects: afterPrune.total,
    growthBytes: afterPrune.bytes - before.bytes,
    growthPerAppended: (afterPrune.bytes - before.bytes) / appended,
    checkReadData: "ok",
    restoreLatestAfterPrune: { sessions: files.length, mismatched: mismatchedAfterPrune },
  };

  const perMin = (n: number) => n / (wallMs / 60_000);
  const perDay = (n: number) => perMin(n) * 1440;
  const result = {
    date: new Date().toISOString(),
    config: { minutes, sessions: sessionCount, intervalMs, debounceMs: 1000, maxDelayMs: 2000 },
    load: { appends, appendedBytes: appended, wallMs },
    watcher: { cpuPercentOfOneCore: (cpuMs / wallMs) * 100, cpuMs, peakRssMB: peakRssKb / 1024, maxSampledRssMB: maxRssKb / 1024, stopExit: stopCode },
    snapshots: { made: snapshots, perMinute: perMin(snapshots) },
    repository: {
      objectsBefore: before.total,
      objectsAfter: afterWatch.total,
      objectsByFolder: afterWatch.counts,
      objectsCreated: created,
      putsPerMinute: perMin(puts),
      bytesBefore: before.bytes,
      bytesAfter: afterWatch.bytes,
      growthBytes: growth,
      growthPerAppended: growth / appended,
    },
    restoreLatest: { sessions: files.length, mismatched },
    retentionAndPrune: retention,
    perDay: { snapshots: perDay(snapshots), puts: perDay(puts), appendedBytes: perDay(appended), growthBytesBeforePrune: perDay(growth), cpuSeconds: perDay(cpuMs) / 1000 },
  };

  const rows: [string, string][] = [
    ["duration", `${(wallMs / 60_000).toFixed(2)} min, ${appends} appends, ${formatBytes(appended)} appended`],
    ["watcher CPU", `${result.watcher.cpuPercentOfOneCore.toFixed(2)} % of one core (target < 5 %)`],
    ["watcher peak RSS", `${result.watcher.peakRssMB.toFixed(1)} MB VmHWM (target < 150 MB)`],
    ["snapshots", `${snapshots} (${perMin(snapshots).toFixed(1)}/min)`],
    ["objects", `${afterWatch.total} in the repository (${Object.entries(afterWatch.counts).map(([k, v]) => `${k} ${v}`).join(", ")}); ${created} created`],
    ["PUT-equivalent writes", `${perMin(puts).toFixed(1)}/min (objects + one lock per snapshot)`],
    ["repo growth before prune", `${formatBytes(growth)} = ${(growth / appended).toFixed(2)}× the appended bytes`],
    ["retention", `forget --policy kept ${retention.kept}, forgot ${retention.forgotten}; prune: ${retention.pruneReport.packs.before} → ${retention.pruneReport.packs.after} packs, ${retention.pruneReport.indexFiles.before} → 1 index files (${(retention.ms / 1000).toFixed(1)} s)`],
    ["repo growth after prune", `${formatBytes(retention.growthBytes)} = ${retention.growthPerAppended.toFixed(2)}× the appended bytes (target ≤ 1.5×); ${retention.objects} objects`],
    ["restore latest", mismatched === 0 ? `all ${files.length} sessions byte-identical` : `${mismatched} of ${files.length} sessions DIFFER`],
    ["after prune", `check --read-data ok; restore latest: ${retention.restoreLatestAfterPrune.mismatched === 0 ? `all ${files.length} sessions byte-identical` : `${retention.restoreLatestAfterPrune.mismatched} sessions DIFFER`}`],
    ["per day", `${Math.round(result.perDay.snapshots)} snapshots, ${Math.round(result.perDay.puts)} PUTs, ${formatBytes(result.perDay.appendedBytes)} appended, ${formatBytes(result.perDay.growthBytesBeforePrune)} growth before prune`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n") + "\n");
  mkdirSync(args.out!, { recursive: true });
  const out = join(args.out!, `watch-${result.date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
  log(`wrote ${out}`);
  if (!args.keep) rmSync(work, { recursive: true, force: true });
  if (mismatched || stopCode !== 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  log(`failed: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});
