// Seeded bit-flip fuzzing of every kind of repository object. For each single-bit flip (made in
// place, then undone): a restore never returns wrong bytes (every file is exact or reported failed),
// the damaged object is named by check --read-data, and what does not depend on the damaged bytes
// keeps working. Prints a table of flips and outcomes per object kind.

import { closeSync, cpSync, existsSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRepository } from "../../src/repo/check.js";
import { RepoError } from "../../src/repo/errors.js";
import { BlobType } from "../../src/repo/format.js";
import { readPackHeader } from "../../src/repo/pack-scan.js";
import { Repository } from "../../src/repo/repository.js";
import { restoreSnapshot } from "../../src/restore/restorer.js";
import { LocalTarget } from "../../src/targets/local.js";
import { cli, initRepo, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { type FileState, listFiles, makeSandbox, type Sandbox, treeState, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

const SEED = 0x5eed_b17;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Flip one bit of a file in place (same inode, so cached handles see it too). */
function flipBit(file: string, at: number, bit: number): void {
  const fd = openSync(file, "r+");
  try {
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    b[0] ^= 1 << bit;
    writeSync(fd, b, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}

/** A session-like JSONL file: compressible, like the real thing. */
function sessionText(lines: number, salt: string): string {
  return Array.from({ length: lines }, (_, i) => JSON.stringify({ type: "message", id: (i * 7919).toString(16).padStart(8, "0"), salt, text: `turn ${i} of ${salt}: ${"lorem ipsum ".repeat(i % 13)}` })).join("\n") + "\n";
}

interface Region {
  /** The object kind, for the table. */
  kind: string;
  file: string;
  /** What check must say to name this object. */
  name: string;
  start: number;
  end: number;
}

type Outcome = "refused" | "detected" | "harmless";

interface Row {
  flips: number;
  refused: number;
  detected: number;
  harmless: number;
  restoresExact: number;
  restoresPartial: number;
  restoresRefused: number;
  filesFailed: number;
  wrongBytes: number;
}

const FLIPS: Record<string, number> = {
  config: 16,
  key: 16,
  index: 40,
  snapshot: 30,
  "data pack frames": 60,
  "pack header": 30,
  "pack trailer length": 16,
  "tree pack": 40,
};

describe("bit-flip fuzz", () => {
  let sb: Sandbox;
  let work: string;
  let target: LocalTarget;
  let secret: Buffer;
  const snaps: SnapshotJson[] = [];
  const states: Map<string, FileState>[] = [];
  const regions: Region[] = [];
  const table = new Map<string, Row>();

  beforeAll(async () => {
    sb = makeSandbox("fuzz");
    writePiConfigFiles(sb.agentDir);
    const dir = path.join(sb.sessionsDir, "--work-proj--");
    const a = path.join(dir, "2026-11-30T10-00-00-000Z_0b9c5c3e-0000-4000-8000-00000000000a.jsonl");
    const b = path.join(dir, "2026-11-30T11-00-00-000Z_0b9c5c3e-0000-4000-8000-00000000000b.jsonl");
    writeFileExact(a, sessionText(400, "a"), 0o644);
    writeFileExact(b, sessionText(300, "b"), 0o644);
    await initRepo(sb);
    const take = async () => {
      snaps.push(await snapshot(sb));
      states.push(treeState(sb.agentDir));
    };
    await take();
    writeFileSync(a, sessionText(200, "a2"), { flag: "a" });
    writeFileExact(path.join(dir, "2026-11-30T12-00-00-000Z_0b9c5c3e-0000-4000-8000-00000000000c.jsonl"), sessionText(250, "c"), 0o644);
    await take();
    writeFileExact(path.join(sb.agentDir, "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: "sk-ant-api03-ROTATED-" + "y".repeat(40) } }, null, 2), 0o600);
    writeFileSync(b, sessionText(100, "b2"), { flag: "a" });
    await take();

    work = path.join(sb.root, "work");
    cpSync(sb.repo, work, { recursive: true });
    target = new LocalTarget(work);
    secret = Buffer.from(readFileSync(path.join(sb.configHome, "pi-guard", "key"), "utf8").trim(), "base64");
    const repo = await open();

    const size = (f: string) => statSync(f).size;
    regions.push({ kind: "config", file: path.join(work, "config"), name: "config", start: 0, end: size(path.join(work, "config")) });
    for (const f of listFiles(path.join(work, "keys"))) regions.push({ kind: "key", file: f, name: path.basename(f).slice(0, 8), start: 0, end: size(f) });
    for (const f of listFiles(path.join(work, "index"))) regions.push({ kind: "index", file: f, name: `index ${path.basename(f).slice(0, 12)}`, start: 0, end: size(f) });
    for (const f of listFiles(path.join(work, "snapshots"))) regions.push({ kind: "snapshot", file: f, name: `snapshot ${path.basename(f).slice(0, 8)}`, start: 0, end: size(f) });
    for (const f of listFiles(path.join(work, "data"))) {
      const id = path.basename(f);
      const header = await readPackHeader(repo, id, size(f));
      const framesEnd = header.blobs.reduce((n, x) => Math.max(n, x.offset + x.length), 0);
      const name = `pack ${id.slice(0, 12)}`;
      if (header.blobs.every((x) => x.type === BlobType.Tree)) regions.push({ kind: "tree pack", file: f, name, start: 0, end: size(f) });
      else regions.push({ kind: "data pack frames", file: f, name, start: 0, end: framesEnd });
      regions.push({ kind: "pack header", file: f, name, start: framesEnd, end: size(f) - 4 });
      regions.push({ kind: "pack trailer length", file: f, name, start: size(f) - 4, end: size(f) });
    }
    expect(new Set(regions.map((r) => r.kind))).toEqual(new Set(Object.keys(FLIPS)));
  });

  afterAll(() => {
    const rows = [...table].map(([kind, r]) => ({ kind, ...r }));
    console.log(`bit-flip fuzz, seed ${SEED.toString(16)}:`);
    console.table(rows);
    if (process.env.PI_GUARD_FUZZ_REPORT) writeFileSync(process.env.PI_GUARD_FUZZ_REPORT, JSON.stringify(rows, null, 2));
    sb?.cleanup();
  });

  async function open(): Promise<Repository> {
    return Repository.open(target, { kind: "keyfile", secret, path: "key" });
  }

  /** Restore every snapshot into a fresh folder; count what came back and check no byte is wrong. */
  async function restoreAll(repo: Repository, row: Row, checkText: string, damagedFiles: Set<string>): Promise<boolean> {
    let allExact = true;
    const records = await repo.listSnapshots();
    for (let i = 0; i < snaps.length; i++) {
      const dest = path.join(sb.root, "restore");
      rmSync(dest, { recursive: true, force: true });
      const record = records.find((r) => r.id === snaps[i].snapshotId);
      if (!record) {
        // Unreadable snapshot object: check must have named it.
        expect(checkText).toContain(snaps[i].snapshotId.slice(0, 8));
        row.restoresRefused++;
        allExact = false;
        continue;
      }
      let failed: string[] = [];
      try {
        const report = await restoreSnapshot(repo, record, { destinations: { agent: dest } });
        failed = report.failed.map((f) => f.path);
      } catch (err) {
        if (!(err instanceof RepoError)) throw err;
        expect(checkText).toContain(snaps[i].snapshotId.slice(0, 8));
        row.restoresRefused++;
        allExact = false;
        continue;
      }
      const got = existsSync(dest) ? treeState(dest) : new Map<string, FileState>();
      for (const [p, state] of got) {
        if (states[i].get(p)?.sha256 !== state.sha256) row.wrongBytes++;
      }
      for (const p of states[i].keys()) {
        if (got.has(p)) continue;
        // Missing from the restore: it must be reported failed, and check must have named it.
        expect(failed, `${p} neither restored nor reported`).toContain(p);
        expect(damagedFiles.has(`${snaps[i].snapshotId} ${p}`), `${p} failed but check did not name it`).toBe(true);
      }
      row.filesFailed += failed.length;
      if (failed.length) {
        row.restoresPartial++;
        allExact = false;
      } else row.restoresExact++;
    }
    return allExact;
  }

  it("no flip makes a restore return wrong bytes; each damaged object is named; undamaged data keeps working", async () => {
    const rng = mulberry32(SEED);
    let flipNo = 0;
    const snapshotTried = new Set<string>();
    for (const [kind, count] of Object.entries(FLIPS)) {
      const row: Row = { flips: 0, refused: 0, detected: 0, harmless: 0, restoresExact: 0, restoresPartial: 0, restoresRefused: 0, filesFailed: 0, wrongBytes: 0 };
      table.set(kind, row);
      const candidates = regions.filter((r) => r.kind === kind && r.end > r.start);
      const total = candidates.reduce((n, r) => n + (r.end - r.start), 0);
      for (let n = 0; n < count; n++, flipNo++) {
        // Pick a byte uniformly over every object of this kind, then a bit.
        let at = Math.floor(rng() * total);
        const region = candidates.find((r) => (at < r.end - r.start ? true : ((at -= r.end - r.start), false)))!;
        const pos = region.start + at;
        const bit = Math.floor(rng() * 8);
        flipBit(region.file, pos, bit);
        row.flips++;
        try {
          const outcome = await evaluate(region, row);
          row[outcome]++;
          // Once per kind: new snapshots on a copy of the damaged repository work.
          if (outcome !== "refused" && !snapshotTried.has(kind)) {
            snapshotTried.add(kind);
            await snapshotStillWorks(flipNo);
          }
        } finally {
          flipBit(region.file, pos, bit);
        }
      }
    }
    const wrong = [...table.values()].reduce((n, r) => n + r.wrongBytes, 0);
    expect(wrong).toBe(0);
    // The format's promises: damage to a content-addressed object is always found by check.
    for (const kind of ["index", "snapshot", "data pack frames", "pack header", "pack trailer length", "tree pack"]) {
      expect(table.get(kind)!.harmless, kind).toBe(0);
    }
    // A damaged index, pack header or trailer never costs a file: the index heals from the packs,
    // and the index still locates the frames.
    for (const kind of ["index", "pack header", "pack trailer length"]) {
      expect(table.get(kind)!.restoresExact, kind).toBe(table.get(kind)!.flips * snaps.length);
    }
  }, 120_000);

  async function evaluate(region: Region, row: Row): Promise<Outcome> {
    let repo: Repository;
    try {
      repo = await open();
    } catch (err) {
      // Only the unencrypted config and the key objects are read before anything is authenticated.
      expect(["config", "key"]).toContain(region.kind);
      expect(err).toBeInstanceOf(RepoError);
      expect((err as Error).message).not.toContain("\n");
      return "refused";
    }
    const report = await checkRepository(repo, { readData: true });
    const text = report.problems.map((p) => p.message).join("\n");
    const damagedFiles = new Set(report.damagedFiles.map((f) => `${f.snapshot} ${f.path}`));
    if (!report.ok) expect(text, `${region.kind} flip not named`).toContain(region.name);
    const exact = await restoreAll(await open(), row, text, damagedFiles);
    if (report.ok) {
      // Check passed: then everything must restore exactly.
      expect(exact, `${region.kind}: check passed but a restore was not exact`).toBe(true);
      return "harmless";
    }
    return "detected";
  }

  async function snapshotStillWorks(flipNo: number): Promise<void> {
    const repo = path.join(sb.root, "snap-copy");
    rmSync(repo, { recursive: true, force: true });
    cpSync(work, repo, { recursive: true });
    const agent = path.join(sb.root, "snap-agent");
    rmSync(agent, { recursive: true, force: true });
    const fresh = path.join(agent, "sessions", "--new--", "2026-12-01T10-00-00-000Z_0b9c5c3e-0000-4000-8000-0000000000ff.jsonl");
    writeFileExact(fresh, sessionText(50, `new ${flipNo}`), 0o644);
    const env = { env: { PI_GUARD_REPO: repo, PI_CODING_AGENT_DIR: agent } };
    const s = await cli(sb, ["snapshot", "--json"], env);
    expect(s.code, s.stderr).toBe(0);
    const id = s.json<SnapshotJson>().snapshotId;
    const dest = path.join(sb.root, "snap-restore");
    rmSync(dest, { recursive: true, force: true });
    const r = await cli(sb, ["restore", id, "--target", dest, "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(path.join(dest, path.relative(agent, fresh)), "utf8")).toBe(sessionText(50, `new ${flipNo}`));

    // The same agent dir plus a new file: the newest snapshot is its parent, damaged or not.
    const added = path.join(sb.sessionsDir, "--work-proj--", "2026-12-01T11-00-00-000Z_0b9c5c3e-0000-4000-8000-0000000000fe.jsonl");
    writeFileExact(added, sessionText(40, `added ${flipNo}`), 0o644);
    try {
      const s2 = await cli(sb, ["snapshot", "--json"], { env: { PI_GUARD_REPO: repo } });
      expect(s2.code, s2.stderr).toBe(0);
      const dest2 = path.join(sb.root, "snap-restore-2");
      rmSync(dest2, { recursive: true, force: true });
      const r2 = await cli(sb, ["restore", s2.json<SnapshotJson>().snapshotId, "--target", dest2, "--json"], { env: { PI_GUARD_REPO: repo } });
      // Unchanged files may share blobs with the damage (dedup): those are reported, never wrong.
      expect([0, 3], r2.stderr).toContain(r2.code);
      const failed = new Set<string>(r2.json<{ failed: { path: string }[] }>().failed.map((f) => f.path));
      const expected = treeState(sb.agentDir);
      const got = treeState(dest2);
      expect(got.get(path.relative(sb.agentDir, added))?.sha256).toBe(expected.get(path.relative(sb.agentDir, added))?.sha256);
      for (const [p, state] of expected) {
        if (failed.has(p)) continue;
        expect(got.get(p)?.sha256, `${p} after a snapshot of a damaged repository`).toBe(state.sha256);
      }
    } finally {
      rmSync(added);
    }
  }
});
