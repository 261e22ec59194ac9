// Interleaved full restores from the repositories a `npm run bench:s3 -- --keep` run left behind:
// restic, one pi-guard build ("before") and another ("after"), from s3rver (through the counting
// proxy) and from the local disk, N rounds, each restore checked by sha256 of every file. With GNU
// time at /usr/bin/time, each restore's CPU time (user + system, every thread) is reported too:
// the figure that does not depend on how busy the machine is (its own RSS, about 1 MB, may add to
// the polled peak).
//   node dist/bench/restore-rounds.js --work /tmp/pi-guard-bench-s3-XXXXXX --before /other/checkout [--after .] [--rounds 5] [--only s3|local]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { measure } from "./measure.js";
import { diffCounts, startCountingProxy } from "./s3-proxy.js";
import { compareTrees, hashTree } from "./treeHash.js";
import { cleanEnv } from "./env.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const { values: args } = parseArgs({
  options: { work: { type: "string" }, before: { type: "string" }, after: { type: "string", default: PROJECT_ROOT }, rounds: { type: "string", default: "5" }, only: { type: "string" } },
});
if (!args.work || !args.before) throw new Error("usage: restore-rounds --work DIR --before CHECKOUT [--after CHECKOUT] [--rounds N] [--only s3|local]");
const W = args.work;

const child = spawn(process.execPath, [join(PROJECT_ROOT, "test/helpers/s3rver-child.mjs"), join(W, "s3"), "0", "bench"], { stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise<number>((res, rej) => {
  let buf = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    buf += d;
    const m = /LISTENING (\d+)\n/.exec(buf);
    if (m) res(Number(m[1]));
  });
  child.on("exit", (code) => rej(new Error(`s3rver exited ${code}`)));
});
const proxy = await startCountingProxy(port);

const clean = cleanEnv({}, /^AWS_/);
const aws = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1", AWS_DEFAULT_REGION: "us-east-1" };

interface Tool {
  name: string;
  countKey: string;
  cmd: string;
  args: (target: string) => string[];
  env: Record<string, string>;
}
const tools: Tool[] = [];
for (const place of args.only ? [args.only] : ["s3", "local"]) {
  const s3 = place === "s3";
  tools.push({
    name: `${place} restic`,
    countKey: "restic",
    cmd: "restic",
    args: (t) => ["restore", "latest", "--target", t],
    env: {
      ...clean,
      RESTIC_REPOSITORY: s3 ? `s3:${proxy.endpoint}/bench/restic` : join(W, "restic-repo"),
      RESTIC_PASSWORD: "bench-password",
      RESTIC_CACHE_DIR: join(W, s3 ? "restic-cache-s3" : "restic-cache"),
      ...(s3 ? aws : {}),
    },
  });
  for (const [label, root] of [
    ["before", args.before],
    ["after", args.after!],
  ]) {
    tools.push({
      name: `${place} pi-guard ${label}`,
      countKey: "pi-guard",
      cmd: join(resolve(root), "bin/pi-guard.js"),
      args: (t) => ["restore", "latest", "--target", t, "--json"],
      env: {
        ...clean,
        PI_GUARD_REPO: s3 ? "s3://bench/pi-guard" : join(W, "pi-guard-repo"),
        PI_CODING_AGENT_DIR: join(W, "agent"),
        XDG_CONFIG_HOME: join(W, s3 ? "xdg-config-s3" : "xdg-config"),
        XDG_DATA_HOME: join(W, s3 ? "xdg-data-s3" : "xdg-data"),
        PI_GUARD_KEY_FILE: join(W, s3 ? "pi-guard-s3.key" : "pi-guard.key"),
        ...(s3 ? { ...aws, AWS_ENDPOINT_URL: proxy.endpoint } : {}),
      },
    });
  }
}

const expected = await hashTree(join(W, "agent"));
const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
const cpuFile = join(W, "cpu.txt");
const results = new Map<string, { s: number; cpu: number; mb: number; requests: number; ranges: number }[]>(tools.map((t) => [t.name, []]));
for (let r = 1; r <= Number(args.rounds); r++) {
  for (const t of tools) {
    const target = join(W, "rt");
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target);
    await new Promise((res) => spawn("sync").on("exit", res));
    const before = proxy.snapshot().get(t.countKey);
    const m = TIME
      ? await measure(TIME, ["-f", "%U %S", "-o", cpuFile, t.cmd, ...t.args(target)], { env: t.env, timeoutMs: 600_000 })
      : await measure(t.cmd, t.args(target), { env: t.env, timeoutMs: 600_000 });
    const cpu = TIME ? readFileSync(cpuFile, "utf8").trim().split("\n").pop()!.split(" ").map(Number).reduce((a, b) => a + b, 0) : NaN;
    const req = diffCounts(proxy.snapshot().get(t.countKey), before);
    const verdict = m.exitCode === 0 ? compareTrees(expected, await hashTree(target)) : `exit ${m.exitCode}: ${m.stderr.slice(-300)}`;
    const ranges = req.byKind["GET range"] ?? 0;
    results.get(t.name)!.push({ s: m.ms / 1000, cpu, mb: m.peakRssMB, requests: req.total, ranges });
    console.log(`round ${r} ${t.name}: ${(m.ms / 1000).toFixed(2)} s, cpu ${cpu.toFixed(2)} s, ${m.peakRssMB.toFixed(1)} MB, ${req.total} requests (${ranges} range GETs), ${verdict}`);
  }
}
rmSync(join(W, "rt"), { recursive: true, force: true });
rmSync(cpuFile, { force: true });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log("\nmedians:");
for (const [name, rs] of results) {
  const mbs = rs.map((x) => x.mb);
  console.log(`${name}: ${median(rs.map((x) => x.s)).toFixed(2)} s, cpu ${median(rs.map((x) => x.cpu)).toFixed(2)} s, peak ${Math.min(...mbs).toFixed(0)}–${Math.max(...mbs).toFixed(0)} MB, ${median(rs.map((x) => x.requests))} requests, ${median(rs.map((x) => x.ranges))} range GETs`);
}
await proxy.close();
child.kill();
