// Invariant 6, the append path (docs/FORMAT.md §10): a file that only grew stores about the appended
// bytes (end-of-file pieces), its content-defined chunks stay those of a full re-chunk (so a fork
// still shares them), and a rewrite that keeps the inode and grows is still seen and stored right.
// Runs the engine in-process with one Repository, as the watcher does.

import { appendFileSync, closeSync, openSync, readFileSync, statSync, truncateSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EntryStream, loadFixtureEntries } from "../../bench/pi-entries.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobReader } from "../../src/repo/blob-reader.js";
import { type TreeNode } from "../../src/repo/format.js";
import { Repository } from "../../src/repo/repository.js";
import { SealPool } from "../../src/repo/seal-pool.js";
import { createSnapshot, MAX_TAIL_PIECES, withSnapshotBuilder, type SnapshotResult } from "../../src/snapshot/snapshotter.js";
import { readTree } from "../../src/snapshot/tree.js";
import { LocalTarget } from "../../src/targets/local.js";
import { initRepo, ok, restoreJson } from "../helpers/cli.js";
import { forkPiSession, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { FIXTURES_DIR, makeSandbox, type Sandbox, writeFileExact } from "../helpers/tmp.js";

const KB = 1024;
// In-process: seal on this thread (vitest cannot start the .ts worker script).
process.env.PI_GUARD_WORKERS = "0";

describe("append-aware snapshots: end-of-file pieces", () => {
  let sb: Sandbox;
  let repo: Repository;
  let reader: BlobReader;
  const samples = loadFixtureEntries(path.join(FIXTURES_DIR, "pi-mono-v1", "large-session.jsonl"));
  const roots = () => [{ name: "agent", path: sb.agentDir }];

  const snap = (parent?: string): Promise<SnapshotResult> =>
    createSnapshot(repo, { roots: roots(), filter: { include: [], exclude: [] }, host: "test-host", parent });

  async function nodeOf(s: SnapshotResult, rel: string): Promise<TreeNode> {
    for await (const node of readTree(reader, s.snapshot)) if (node.path === rel) return node;
    throw new Error(`${rel} not in snapshot ${s.id.slice(0, 8)}`);
  }
  const bytesOf = async (node: TreeNode): Promise<Buffer> => Buffer.concat(await reader.read(node.content ?? []));
  const rawLength = (id: string): number => repo.index.get(id)!.rawLength;
  const sum = (ids: Iterable<string>): number => [...ids].reduce((n, id) => n + rawLength(id), 0);

  /** A session file of real pi entries, `bytes` long or a little more. */
  function writeSession(rel: string, bytes: number, seed: string): { file: string; entries: EntryStream } {
    const file = path.join(sb.agentDir, rel);
    const entries = new EntryStream(samples, { seed });
    let text = JSON.stringify({ type: "session", version: 3, id: seed, timestamp: "2026-11-30T12:00:00.000Z", cwd: "/p" }) + "\n";
    while (Buffer.byteLength(text) < bytes) text += entries.next();
    writeFileExact(file, text, 0o644);
    return { file, entries };
  }

  beforeAll(async () => {
    sb = makeSandbox("append-tail");
    await initRepo(sb);
    repo = await Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
    reader = new BlobReader(repo, new SealPool(0));
  });
  afterAll(() => sb?.cleanup());

  it("a session grown 40 times restores byte-identical at every snapshot and stores the appended bytes once", async () => {
    const rel = "sessions/--p--/grown.jsonl";
    const { file, entries } = writeSession(rel, 300 * KB, "grown");
    const first = await snap();
    const firstNode = await nodeOf(first, rel);
    const seen = new Set(firstNode.content);
    const states: { id: string; bytes: Buffer }[] = [{ id: first.id, bytes: readFileSync(file) }];
    let appended = 0;
    let piecesSeen = 0;
    let cutEvents = 0;
    const { min, max } = repo.dataChunker.params;
    for (let i = 0; i < 40; i++) {
      const line = entries.next();
      appendFileSync(file, line);
      const n = Buffer.byteLength(line);
      appended += n;
      const s = await snap();
      const node = await nodeOf(s, rel);
      expect(node.size).toBe(statSync(file).size);
      const fresh = node.content!.filter((id) => !seen.has(id));
      for (const id of fresh) seen.add(id);
      if ((node.tail ?? 1) > 1) {
        // Only the appended bytes are new: one piece, exactly this append.
        piecesSeen++;
        expect(fresh).toEqual([node.content!.at(-1)]);
        expect(sum(fresh)).toBe(n);
        expect(node.tail).toBeLessThanOrEqual(MAX_TAIL_PIECES);
      } else {
        // A content-defined cut appeared after the old end: finished chunks + one remainder.
        cutEvents++;
        expect(sum(fresh)).toBeLessThanOrEqual(max + n);
      }
      states.push({ id: s.id, bytes: readFileSync(file) });
    }
    // Cuts are at least `min` apart, and none can fall before the old end of file.
    expect(cutEvents).toBeLessThanOrEqual(Math.ceil(appended / min) + 1);
    expect(piecesSeen).toBeGreaterThan(0);
    // Everything this file ever stored after the first snapshot: the appended bytes, plus at most
    // one re-stored region (at most one maximum chunk) per cut, not a last chunk per snapshot.
    const stored = sum(seen) - sum(new Set(firstNode.content));
    expect(stored).toBeLessThanOrEqual(appended + cutEvents * max);

    for (const st of states) {
      const s = { id: st.id, snapshot: await repo.loadSnapshot(st.id) };
      expect((await bytesOf(await nodeOf(s, rel))).equals(st.bytes)).toBe(true);
    }
    // The restorer sees a file with pieces as unchanged when the bytes on disk are the same.
    const target = sb.dir("restore-grown");
    const r1 = await restoreJson(sb, [states[20].id, "--target", target, "--path", rel]);
    expect(r1.create).toBe(1);
    expect(readFileSync(path.join(target, rel)).equals(states[20].bytes)).toBe(true);
    const r2 = await restoreJson(sb, [states[20].id, "--target", target, "--path", rel]);
    expect(r2.unchanged).toBe(1);
    expect(r2.bytesWritten).toBe(0);
    // Every piece is an ordinary blob: the full check reads and verifies each one.
    expect((await ok(sb, ["check", "--read-data", "--json"])).json().ok).toBe(true);
  });

  it("pieces stop at MAX_TAIL_PIECES: the next append merges them into one blob", async () => {
    // Smaller than the chunker's minimum throughout, so no content-defined cut can appear.
    const rel = "sessions/--p--/tiny.jsonl";
    const file = path.join(sb.agentDir, rel);
    writeFileExact(file, '{"type":"session","version":3}\n', 0o644);
    await snap();
    const tails: number[] = [];
    for (let i = 0; i < MAX_TAIL_PIECES + 2; i++) {
      appendFileSync(file, `{"n":${String(i).padStart(15, "0")}}\n`);
      const node = await nodeOf(await snap(), rel);
      tails.push(node.tail ?? 1);
      expect((await bytesOf(node)).equals(readFileSync(file))).toBe(true);
    }
    expect(statSync(file).size).toBeLessThan(repo.dataChunker.params.min);
    const grow = Array.from({ length: MAX_TAIL_PIECES - 1 }, (_, i) => i + 2);
    expect(tails).toEqual([...grow, 1, 2, 3]);
  });

  it("the content-defined chunks of a grown file are those a full re-chunk gives", async () => {
    const rel = "sessions/--p--/grown.jsonl";
    const latest = await repo.listSnapshots();
    const node = await nodeOf(latest.at(-1)!, rel);
    const stable = node.content!.slice(0, node.content!.length - (node.tail ?? 1));
    const whole = readFileSync(path.join(sb.agentDir, rel));
    const full = [...repo.dataChunker.split(whole)].map(([a, b]) => repo.blobId(whole.subarray(a, b)));
    expect(full.slice(0, stable.length)).toEqual(stable);
  });

  it("a fork made by pi shares its prefix with a parent that was appended to many times", async () => {
    const project = sb.dir("fork-parent");
    const made = await makePiSession({ agentDir: sb.agentDir, cwd: project, captureEvents: false, turns: [{ user: "start", assistant: ["ok"] }] });
    const parentFile = made.file;
    const lines = readFileSync(parentFile, "utf8").trimEnd().split("\n");
    const last = JSON.parse(lines.at(-1)!) as { id: string; timestamp: string };
    const entries = new EntryStream(samples, { seed: "fork", leafId: last.id, clockMs: Date.parse(last.timestamp) });
    let text = "";
    while (Buffer.byteLength(text) < 400 * KB) text += entries.next();
    appendFileSync(parentFile, text);
    await snap();
    for (let i = 0; i < 25; i++) {
      appendFileSync(parentFile, entries.next());
      await snap();
    }
    validateWithPi(readFileSync(parentFile, "utf8"));
    const parentRel = path.relative(sb.agentDir, parentFile);
    const parentNode = await nodeOf((await repo.listSnapshots()).at(-1)!, parentRel);
    expect(parentNode.tail ?? 1).toBeGreaterThanOrEqual(1);

    const fork = await forkPiSession({ agentDir: sb.agentDir, cwd: sb.dir("fork-child"), parentFile, captureEvents: false, turns: [{ user: "go on in the fork", assistant: ["forked"] }] });
    expect(validateWithPi(readFileSync(fork.file, "utf8")).header.parentSession).toBe(parentFile);
    const s = await snap();
    const forkNode = await nodeOf(s, path.relative(sb.agentDir, fork.file));
    const parentBlobs = new Set(parentNode.content);
    const shared = sum(new Set(forkNode.content!.filter((id) => parentBlobs.has(id))));
    // Everything but the chunk with the new header and the end (the parent's tail region and
    // the fork's own turn) is the parent's chunks.
    const { max } = repo.dataChunker.params;
    expect(shared).toBeGreaterThan(parentNode.size! - 3 * max);
    expect((await bytesOf(forkNode)).equals(readFileSync(fork.file))).toBe(true);
  });

  /** Overwrite bytes in place (same inode, same size), as `r+` does. */
  function overwrite(file: string, at: number, bytes: Buffer): void {
    const fd = openSync(file, "r+");
    try {
      writeSync(fd, bytes, 0, bytes.length, at);
    } finally {
      closeSync(fd);
    }
  }

  /** A file with several chunks and at least two end-of-file pieces, snapshotted; returns its node. */
  async function grownWithPieces(rel: string, seed: string): Promise<{ file: string; entries: EntryStream; node: TreeNode }> {
    const { file, entries } = writeSession(rel, 200 * KB, seed);
    await snap();
    for (let i = 0; i < 40; i++) {
      appendFileSync(file, entries.next());
      const node = await nodeOf(await snap(), rel);
      if ((node.tail ?? 1) >= 3) return { file, entries, node };
    }
    throw new Error("no pieces after 40 appends");
  }

  async function expectRewriteSeen(rel: string, file: string, at: number, entries: EntryStream): Promise<void> {
    const ino = statSync(file).ino;
    const before = readFileSync(file);
    overwrite(file, at, Buffer.from(before.subarray(at, at + 8).map((b) => b ^ 1)));
    appendFileSync(file, entries.next());
    expect(statSync(file).ino).toBe(ino);
    const node = await nodeOf(await snap(), rel);
    expect(node.tail).toBeUndefined();
    expect((await bytesOf(node)).equals(readFileSync(file))).toBe(true);
    // Re-chunked in full: the chunk list is exactly a full re-chunk's.
    const whole = readFileSync(file);
    expect(node.content).toEqual([...repo.dataChunker.split(whole)].map(([a, b]) => repo.blobId(whole.subarray(a, b))));
  }

  it("a rewrite inside a piece, then growth (same inode), is seen and stored right", async () => {
    const rel = "sessions/--p--/rewrite-piece.jsonl";
    const { file, entries, node } = await grownWithPieces(rel, "rw-piece");
    const lastPiece = rawLength(node.content!.at(-1)!);
    await expectRewriteSeen(rel, file, node.size! - lastPiece - rawLength(node.content!.at(-2)!) + 2, entries);
  });

  it("a rewrite inside the last content-defined chunk, then growth, is seen and stored right", async () => {
    const rel = "sessions/--p--/rewrite-chunk.jsonl";
    const { file, entries, node } = await grownWithPieces(rel, "rw-chunk");
    const tailBytes = sum(node.content!.slice(-node.tail!));
    await expectRewriteSeen(rel, file, node.size! - tailBytes - 100, entries);
  });

  it("a rewrite of the header (first chunk), then growth, is seen and stored right", async () => {
    const rel = "sessions/--p--/rewrite-head.jsonl";
    const { file, entries } = await grownWithPieces(rel, "rw-head");
    await expectRewriteSeen(rel, file, 10, entries);
  });

  it("a file truncated and grown again past its old size is stored right", async () => {
    const rel = "sessions/--p--/regrown.jsonl";
    const { file, entries, node } = await grownWithPieces(rel, "regrow");
    truncateSync(file, node.size! - 3000);
    let more = "";
    while (Buffer.byteLength(more) < 6000) more += entries.next();
    appendFileSync(file, more);
    expect(statSync(file).size).toBeGreaterThan(node.size!);
    const after = await nodeOf(await snap(), rel);
    expect((await bytesOf(after)).equals(readFileSync(file))).toBe(true);
    // Shrunk below the old size and regrown without a snapshot in between: also right.
    truncateSync(file, 1000);
    const small = await nodeOf(await snap(), rel);
    expect((await bytesOf(small)).equals(readFileSync(file))).toBe(true);
    appendFileSync(file, more);
    const regrown = await nodeOf(await snap(), rel);
    expect((await bytesOf(regrown)).equals(readFileSync(file))).toBe(true);
  });

  it("a parent whose tail piece is missing from the index: full re-chunk, correct restore", async () => {
    const rel = "sessions/--p--/lost-piece.jsonl";
    const { file, entries, node } = await grownWithPieces(rel, "lost");
    // Drop the newest piece from the index (its pack stays), as a repaired damaged index would:
    // a new index file without it supersedes the one that named it.
    const pieceId = node.content!.at(-1)!;
    let named: string | undefined;
    for (const id of repo.index.files) {
      if ((await repo.readIndexFile(id)).packs.some((p) => p.blobs.some((b) => b.id === pieceId))) named = id;
    }
    const old = await repo.readIndexFile(named!);
    await repo.saveIndex({ supersedes: [named!], packs: old.packs.map((p) => ({ ...p, blobs: p.blobs.filter((b) => b.id !== pieceId) })) });
    await repo.loadIndex(true);
    expect(repo.index.get(pieceId)).toBeUndefined();
    appendFileSync(file, entries.next());
    const s = await snap();
    const after = await nodeOf(s, rel);
    expect(after.tail).toBeUndefined();
    expect((await bytesOf(after)).equals(readFileSync(file))).toBe(true);
    const target = sb.dir("restore-lost");
    await restoreJson(sb, [s.id, "--target", target, "--path", rel]);
    expect(readFileSync(path.join(target, rel)).equals(readFileSync(file))).toBe(true);
  });

  it("a parent node with a hostile tail, size or content list: full re-chunk, correct bytes", async () => {
    const rel = "sessions/--p--/hostile.jsonl";
    const { file, entries } = writeSession(rel, 150 * KB, "hostile");
    const honest = await nodeOf(await snap(), rel);
    const lies: Partial<TreeNode>[] = [
      ...[0, -1, 2.5, honest.content!.length + 1, "1" as unknown as number].map((tail) => ({ tail })),
      { size: honest.size! - 100 },
      { content: "not a list" as unknown as string[] },
      { content: [...honest.content!.slice(0, -1), 42 as unknown as string] },
    ];
    for (const lie of lies) {
      const crafted = await withSnapshotBuilder(repo, { command: "test" }, async (b) => {
        await b.addNode({ ...honest, ...lie });
        return b.commit({ host: "test-host", roots: roots(), tags: [] });
      });
      appendFileSync(file, entries.next());
      const node = await nodeOf(await snap(crafted.id), rel);
      expect(node.tail).toBeUndefined();
      expect((await bytesOf(node)).equals(readFileSync(file))).toBe(true);
    }
  });
});
