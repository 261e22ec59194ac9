// Requests one mirror shipment makes to an S3 mirror (a real s3rver on 127.0.0.1): the first
// shipment to an empty bucket prefix, shipments after a snapshot of one appended line, and one
// with nothing new. Counts come from a wrapper around the real S3 target, by operation.
//   npm run build && node dist/bench/mirror-ship.js
import { spawn } from "node:child_process";
import { appendFileSync, cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import { dirname, join, resolve } from "node:path";
import { fixturesDir } from "./fixtures.js";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../src/config/config.js";
import { initRepository, openRepository, snapshotAgentDir } from "../src/engine.js";
import { copySnapshots, openReplica, shipSelection } from "../src/repo/replicate.js";
import { openTarget } from "../src/targets/open.js";
import type { ObjectInfo, OpOptions, PutBody, PutOptions } from "../src/targets/target.js";
import { TargetWrapper } from "../src/targets/wrap.js";

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

class CountingTarget extends TargetWrapper {
  readonly counts: Record<string, number> = {};
  private count(op: string): void {
    this.counts[op] = (this.counts[op] ?? 0) + 1;
  }
  override get(key: string, opts?: OpOptions): Promise<Buffer> {
    this.count("GET");
    return super.get(key, opts);
  }
  override getRange(key: string, offset: number, length: number, opts?: OpOptions): Promise<Buffer> {
    this.count("GET");
    return super.getRange(key, offset, length, opts);
  }
  override put(key: string, data: PutBody, opts?: PutOptions): Promise<void> {
    this.count("PUT");
    return super.put(key, data, opts);
  }
  override head(key: string, opts?: OpOptions): Promise<ObjectInfo | undefined> {
    this.count("HEAD");
    return super.head(key, opts);
  }
  override delete(key: string, opts?: OpOptions): Promise<void> {
    this.count("DELETE");
    return super.delete(key, opts);
  }
  override list(prefix: string, opts?: OpOptions): AsyncIterable<ObjectInfo> {
    this.count("LIST");
    return super.list(prefix, opts);
  }
}

const root = mkdtempSync(join(os.tmpdir(), "pi-guard-bench-mirror-"));
const server = spawn(process.execPath, [join(PROJECT_ROOT, "test/helpers/s3rver-child.mjs"), join(root, "s3"), "0", "bench"], { stdio: ["ignore", "pipe", "inherit"] });
try {
  const port = await new Promise<number>((res) => server.stdout!.on("data", (d: Buffer) => {
    const m = /LISTENING (\d+)/.exec(String(d));
    if (m) res(Number(m[1]));
  }));
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`, AWS_REGION: "us-east-1", XDG_DATA_HOME: join(root, "data"), XDG_CONFIG_HOME: join(root, "cfg"), HOME: root, PI_GUARD_PASSWORD: "bench" });
  const agent = join(root, "agent");
  cpSync(fixturesDir(), join(agent, "sessions"), { recursive: true });
  const config = loadConfig({ repo: join(root, "primary"), agentDir: agent });
  await initRepository(config, { password: "bench" });
  const repo = await openRepository(config);
  await snapshotAgentDir(config, repo);
  const ship = async (label: string) => {
    const target = new CountingTarget(openTarget({ repo: "s3://bench/mirror" }));
    const t0 = performance.now();
    const { repo: dest } = await openReplica(repo, target, { create: true, dataDir: config.dataDir });
    const r = await copySnapshots(repo, dest, { select: shipSelection });
    const ms = Math.round(performance.now() - t0);
    console.log(`${label.padEnd(40)} ${String(ms).padStart(5)} ms  copied ${r.copied.length}, ${r.blobsCopied} blobs, ${r.bytesCopied} B, ${r.packsWritten} packs  requests ${JSON.stringify(target.counts)}`);
  };
  await ship("first shipment (empty mirror)");
  const session = readdirSync(join(agent, "sessions"), { recursive: true }).map(String).find((f) => f.endsWith(".jsonl"))!;
  for (let i = 1; i <= 3; i++) {
    appendFileSync(join(agent, "sessions", session), `{"type":"custom","id":"b000000${i}","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n`);
    await snapshotAgentDir(config, repo);
    await ship(`shipment ${i} after one appended line`);
  }
  await ship("shipment with nothing new");
} finally {
  server.kill();
  rmSync(root, { recursive: true, force: true });
}
