// Descriptors taken by something else in the middle of a restore: the restore's budget was right
// when it started, then every free descriptor of the process is taken for a moment (a real EMFILE
// under a real limit, lowered with prlimit). Opens of temp files, of packs and of folders to sync
// wait and try again; no file is left unrestored for it.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BlobSink, PackOrderedRead } from "../../src/repo/read-pipeline.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { restoreSnapshot } from "../../src/restore/restorer.js";
import { LocalTarget } from "../../src/targets/local.js";
import { listFiles } from "../helpers/tmp.js";
import { type PipelineFixture, pipelineFixture } from "./pipeline-fixture.js";

// Worker threads cannot load the TypeScript sources under vitest: all work runs on the main thread.
process.env.PI_GUARD_WORKERS = "0";

const openNow = () => readdirSync("/proc/self/fd").length - 1;

/** Set this process's soft open-file limit (the hard one stays). */
function setSoftLimit(n: number): void {
  const r = spawnSync("prlimit", ["--pid", String(process.pid), `--nofile=${n}:`], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`prlimit failed: ${r.stderr || r.error}`);
}

const softLimit = (): number => Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))![1]);

/** Descriptors held by the test to starve the code under test; `release` gives them back. */
const hog: number[] = [];
function takeAllDescriptors(): number {
  for (;;) {
    try {
      hog.push(openSync("/dev/null", "r"));
    } catch {
      return hog.length;
    }
  }
}
const release = () => {
  for (const fd of hog.splice(0)) closeSync(fd);
};

let fx: PipelineFixture;

beforeAll(async () => {
  // 1,500 small files (hundreds per pack read) and a few larger ones across packs.
  const files: [string, Buffer][] = [];
  for (let i = 0; i < 1500; i++) files.push([`sessions/--p${i % 15}--/s${i}.jsonl`, Buffer.from(`{"type":"session","id":"${i}"}\n${"x".repeat(i % 700)}\n`)]);
  for (let i = 0; i < 4; i++) files.push([`pi-hermes-memory/big-${i}.db`, randomBytes(700 * 1024)]);
  fx = await pipelineFixture("fd-shortage", files);
}, 120_000);

afterAll(() => fx?.sb.cleanup());

describe("a restore that runs out of descriptors half-way", () => {
  it("waits for them and restores every file exactly (durable: folders are synced too), no temp file left", async () => {
    const repo = await Repository.open(new LocalTarget(fx.sb.repo), fx.cred);
    await repo.loadIndex();
    const dest = path.join(fx.sb.root, "dest");
    mkdirSync(dest);
    const original = softLimit();
    // Room for the budget's full 128 temp files when the restore starts.
    setSoftLimit(openNow() + 400);
    let hogged = 0;
    try {
      const report = await restoreSnapshot(repo, fx.record, {
        destinations: { agent: dest },
        durable: true,
        onProgress: ({ files }) => {
          // After the first file: take every free descriptor, and give them back a moment later.
          if (files !== 1) return;
          hogged = takeAllDescriptors();
          setTimeout(release, 300);
        },
      });
      expect(hogged).toBeGreaterThan(100);
      expect(report.failed).toEqual([]);
      expect(report.files).toHaveLength(fx.source.size);
      for (const [rel, data] of fx.source) expect(readFileSync(path.join(dest, rel)).equals(data), rel).toBe(true);
      expect(listFiles(dest).filter((f) => path.basename(f).includes(".pi-guard-"))).toEqual([]);
    } finally {
      release();
      setSoftLimit(original);
    }
  });
});

describe("pack reads without a descriptor", () => {
  it("wait for one: every blob is delivered once no file of the read fails", async () => {
    const repo = await Repository.open(new LocalTarget(fx.sb.repo), fx.cred);
    await repo.loadIndex();
    const files = [...fx.nodes.values()];
    const out = files.map((n) => Buffer.alloc(n.size ?? 0));
    const failures: string[] = [];
    let done = 0;
    const sink: BlobSink = {
      write: async (f, pos, parts) => {
        for (const p of parts) pos += p.copy(out[f], pos);
      },
      done: () => void done++,
      fail: (f, err) => void failures.push(`${files[f].path}: ${err.message}`),
      failed: () => false,
    };
    const original = softLimit();
    setSoftLimit(openNow() + 50);
    const pool = new SealPool(0);
    try {
      // No descriptor is free when the first pack is opened; some are, a moment later.
      takeAllDescriptors();
      setTimeout(release, 300);
      await new PackOrderedRead(repo, pool).run(
        files.map((n) => n.content ?? []),
        sink,
      );
      expect(failures).toEqual([]);
      expect(done).toBe(files.length);
      files.forEach((n, f) => expect(out[f].equals(fx.source.get(n.path)!), n.path).toBe(true));
    } finally {
      release();
      setSoftLimit(original);
      await pool.close();
    }
  });
});

describe("a local repository without a descriptor", () => {
  it("put, get, getRange and readRange wait for one (and put still syncs its folder)", async () => {
    const target = new LocalTarget(fx.sb.dir("shortage-target"));
    const data = randomBytes(300 * 1024);
    const original = softLimit();
    setSoftLimit(openNow() + 50);
    try {
      const take = () => {
        takeAllDescriptors();
        setTimeout(release, 200);
      };
      take();
      await target.put("data/ab/object", data);
      take();
      expect((await target.get("data/ab/object")).equals(data)).toBe(true);
      take();
      expect((await target.getRange("data/ab/object", 1000, 5000)).equals(data.subarray(1000, 6000))).toBe(true);
      take();
      const parts: Uint8Array[] = [];
      for await (const p of target.readRange("data/ab/object", 7, data.length - 7)) parts.push(p);
      expect(Buffer.concat(parts).equals(data.subarray(7))).toBe(true);
    } finally {
      release();
      setSoftLimit(original);
    }
  });
});
