// Retention at watcher scale: N snapshots of an agent dir of 20 sessions, each after a ~1 KB
// append to one session (what the watcher makes), spread 15 minutes apart (so N=1000 covers about
// ten days), then `forget --policy` (the default policy) and `prune` through the CLI. Prints wall
// times, repository size and pack count before and after, against the bytes appended, and checks
// that `check --read-data` passes and `restore latest` is byte-identical.
//
//   npx tsx bench/prune.ts [--snapshots 1000]

import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { loadConfig } from "../src/config/config.js";
import { readKeyFile } from "../src/config/credentials.js";
import { snapshotAgentDir } from "../src/engine.js";
import { snapshotKey } from "../src/repo/format.js";
import { Repository } from "../src/repo/repository.js";
import { LocalTarget } from "../src/targets/local.js";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg("snapshots", 1000);
const root = mkdtempSync(path.join(os.tmpdir(), "pi-guard-bench-prune-"));
const env: Record<string, string> = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: path.join(root, "home"),
  PI_CODING_AGENT_DIR: path.join(root, "home", ".pi", "agent"),
  PI_GUARD_REPO: path.join(root, "repo"),
  XDG_CONFIG_HOME: path.join(root, "cfg"),
  XDG_DATA_HOME: path.join(root, "data"),
  XDG_STATE_HOME: path.join(root, "state"),
  NO_COLOR: "1",
};
const bin = path.join(import.meta.dirname, "..", "bin", "pi-guard.js");
const run = (args: string[]) => {
  const t = process.hrtime.bigint();
  const out = execFileSync(process.execPath, [bin, ...args], { env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return { out, ms: Number(process.hrtime.bigint() - t) / 1e6 };
};
const du = (dir: string): number => {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += statSync(path.join(e.parentPath, e.name)).size;
  return n;
};
const packs = () => readdirSync(path.join(env.PI_GUARD_REPO, "data"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;

try {
  const sessions = path.join(env.PI_CODING_AGENT_DIR, "sessions", "--bench--");
  mkdirSync(sessions, { recursive: true });
  const line = () => JSON.stringify({ type: "message", id: randomBytes(4).toString("hex"), text: randomBytes(360).toString("base64") }) + "\n";
  let appended = 0;
  for (let s = 0; s < 20; s++) for (let k = 0; k < 20; k++) appended += (appendFileSync(path.join(sessions, `s${s}.jsonl`), line()), line().length);
  run(["init", "-q"]);
  const cred = (await readKeyFile(path.join(env.XDG_CONFIG_HOME, "pi-guard", "key")))!;
  const repo = await Repository.open(new LocalTarget(env.PI_GUARD_REPO), cred);
  const config = loadConfig({}, env);
  const start = Date.now() - N * 15 * 60_000;
  const t0 = Date.now();
  for (let i = 0; i < N; i++) {
    const l = line() + line();
    appendFileSync(path.join(sessions, `s${i % 20}.jsonl`), l);
    appended += l.length;
    const made = await snapshotAgentDir(config, repo);
    // Spread over time (the watcher's snapshots are seconds apart; retention needs days to act).
    const s = made.snapshot;
    const id = await repo.saveSnapshot({ ...s, time: new Date(start + i * 15 * 60_000).toISOString() });
    await repo.target.delete(snapshotKey(made.id));
    void id;
  }
  const makeMs = Date.now() - t0;
  const before = { bytes: du(env.PI_GUARD_REPO), packs: packs() };
  const forget = run(["forget", "--policy", "--json"]);
  const f = JSON.parse(forget.out);
  const prune = run(["prune", "--json"]);
  const p = JSON.parse(prune.out);
  const after = { bytes: du(env.PI_GUARD_REPO), packs: packs() };
  const again = run(["prune", "--json"]);
  const check = run(["check", "--read-data", "--json"]);
  const target = path.join(root, "restored");
  run(["restore", "latest", "--target", target, "--json"]);
  const diff = execFileSync("diff", ["-r", target, env.PI_CODING_AGENT_DIR], { encoding: "utf8" });
  const rows = [
    ["snapshots made", `${N} in ${(makeMs / 1000).toFixed(1)} s (library, one process)`],
    ["appended bytes", `${appended}`],
    ["forget --policy", `${forget.ms.toFixed(0)} ms: kept ${f.keep.length}, removed ${f.removed}`],
    ["prune", `${prune.ms.toFixed(0)} ms: packs deleted ${p.packs.deleted}, repacked ${p.packs.repacked} into ${p.packs.written}; blobs used ${p.blobs.used}, dropped ${p.blobs.removed}`],
    ["repo before", `${before.bytes} bytes (${(before.bytes / appended).toFixed(2)}x appended), ${before.packs} packs`],
    ["repo after", `${after.bytes} bytes (${(after.bytes / appended).toFixed(2)}x appended), ${after.packs} packs`],
    ["prune again", `${again.ms.toFixed(0)} ms, nothing to do: ${JSON.parse(again.out).nothingToDo}`],
    ["check --read-data", `${check.ms.toFixed(0)} ms, ok: ${JSON.parse(check.out).ok}`],
    ["restore latest", diff === "" ? "byte-identical" : "DIFFERS"],
  ];
  for (const [k, v] of rows) console.log(`${k.padEnd(18)} ${v}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
