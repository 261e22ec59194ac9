// Invariants 5 and 6: content addressing and append-aware snapshots. A 1 KB append to a 20 MB
// session costs a few KB, a fork of a big session stores little beyond its own entries, and the same
// bytes under two names are stored once. Numbers come from `snapshot --json` and from the repo's size.

import { appendFileSync, copyFileSync, mkdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendToLargest } from "../../bench/append.js";
import { Prng } from "../../bench/prng.js";
import { MODELS, SessionBuilder } from "../../bench/sessionBuilder.js";
import { loadTextPool, type TextPool } from "../../bench/textPool.js";
import { readKeyFile } from "../../src/config/credentials.js";
import { BlobType } from "../../src/repo/format.js";
import { Repository } from "../../src/repo/repository.js";
import { LocalTarget } from "../../src/targets/local.js";
import { listNames } from "../../src/targets/target.js";
import { initRepo, ok, PROJECT_ROOT, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { fauxToolCall, forkPiSession, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { apparentSize, fingerprint, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

const KB = 1024;
const MB = 1024 * 1024;

/**
 * Continue a real pi session with realistic generated turns (user prompts, thinking, tool calls
 * and results drawn from real text) until it is `targetBytes` long. Each entry hangs off the
 * previous leaf, so the file stays one valid conversation.
 */
function growSession(file: string, targetBytes: number, pool: TextPool, seed: string): void {
  const text = readFileSync(file, "utf8");
  const lines = text.trimEnd().split("\n");
  const last = JSON.parse(lines[lines.length - 1]) as { id: string; timestamp: string };
  const header = JSON.parse(lines[0]) as { cwd: string };
  const prng = new Prng(seed);
  const b = new SessionBuilder(prng, pool, header.cwd, { leafId: last.id, clockMs: Date.parse(last.timestamp), contextTokens: 4_000, model: MODELS[0] });
  let size = Buffer.byteLength(text);
  let pending: string[] = [];
  const write = (entry: unknown) => {
    const line = JSON.stringify(entry) + "\n";
    pending.push(line);
    size += Buffer.byteLength(line);
    if (pending.length >= 200) flush();
  };
  const flush = () => {
    appendFileSync(file, pending.join(""));
    pending = [];
  };
  while (size < targetBytes) {
    write(b.user(prng.logInt(30, 2_500), false));
    for (let r = prng.int(1, 6); r > 0; r--) {
      const { entry, calls } = b.assistant({ thinkingChars: prng.logInt(80, 4_000), textChars: prng.logInt(40, 2_000), toolCalls: 1 });
      write(entry);
      for (const call of calls) write(b.toolResult(call, prng.logInt(100, 30_000), false));
    }
    write(b.assistant({ thinkingChars: 200, textChars: prng.logInt(100, 3_000), toolCalls: 0 }).entry);
    if (b.state.contextTokens > 160_000) write(b.compaction());
  }
  flush();
}

describe("dedup and append-aware snapshots", () => {
  let sb: Sandbox;
  let pool: TextPool;
  let bigFile: string;
  let first: SnapshotJson;
  const seen: Record<string, number> = {};

  beforeAll(async () => {
    sb = makeSandbox("dedup");
    // bench's DEFAULT_POOL_ROOT is right only for the compiled dist/bench; name the folder here.
    pool = loadTextPool(path.join(PROJECT_ROOT, "node_modules"), 16 * MB);
    const project = sb.dir("project");
    const made = await makePiSession({
      agentDir: sb.agentDir,
      cwd: project,
      captureEvents: false,
      turns: [
        { user: "list the files", assistant: [[fauxToolCall("bash", { command: "ls -la" })], "Here they are."] },
        { user: "write a note", assistant: [[fauxToolCall("write", { path: "note.md", content: "# note\n" })], "Written."] },
      ],
    });
    bigFile = made.file;
    growSession(bigFile, 20 * MB, pool, "dedup-big");
    // A small second session, so the snapshot has unchanged files besides the big one.
    await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("other"), turns: [{ user: "hi", assistant: ["hello"] }] });
    await initRepo(sb);
    first = await snapshot(sb);
  });

  afterAll(() => {
    sb?.cleanup();
    // The numbers this run saw, for the report (vitest prints console output of passing tests too).
    console.log(`dedup numbers: ${JSON.stringify(seen)}`);
  });

  it("starts from a valid 20 MB pi session, stored compressed in full", () => {
    expect(statSync(bigFile).size).toBeGreaterThanOrEqual(20 * MB);
    validateWithPi(readFileSync(bigFile, "utf8"), { expectMessages: true });
    expect(first.bytesNew).toBeGreaterThanOrEqual(20 * MB);
    expect(first.bytesStored).toBeGreaterThan(1 * MB);
    seen.firstBytesStored = first.bytesStored;
  });

  it("a 1 KB append to the 20 MB session stores only a few KB", async () => {
    const sizeBefore = statSync(bigFile).size;
    const appended = appendToLargest(sb.agentDir, pool, 1, 1024);
    expect(appended.files).toEqual([bigFile]);
    // About 1 KB: the generator aims at it, but a short user line can leave the assistant line at
    // its minimum (its name is the real session's, so the draw differs per run: 868 B in one CI run).
    expect(appended.bytes).toBeGreaterThan(600);
    expect(appended.bytes).toBeLessThan(1600);
    expect(statSync(bigFile).size).toBe(sizeBefore + appended.bytes);
    validateWithPi(readFileSync(bigFile, "utf8"));

    const duBefore = apparentSize(sb.repo);
    const s = await snapshot(sb);
    const growth = apparentSize(sb.repo) - duBefore;
    Object.assign(seen, { appendBytesStored: s.bytesStored, appendBytesNew: s.bytesNew, appendRepoGrowth: growth, appendMs: s.durationMs });

    expect(s.filesChanged).toBe(1);
    expect(s.filesUnchanged).toBe(s.files - 1);
    expect(s.bytesStored).toBeLessThan(150 * KB);
    expect(growth).toBeLessThan(150 * KB);
    expect(s.bytesNew).toBeLessThan(150 * KB);
    expect(s.bytesNew).toBeGreaterThanOrEqual(appended.bytes);
  });

  it("a snapshot with nothing changed stores almost nothing", async () => {
    const duBefore = apparentSize(sb.repo);
    const s = await snapshot(sb);
    seen.unchangedBytesStored = s.bytesStored;
    expect(s.filesUnchanged).toBe(s.files);
    expect(s.bytesNew).toBeLessThan(16 * KB);
    expect(apparentSize(sb.repo) - duBefore).toBeLessThan(16 * KB);
  });

  it("the same file under two names is stored once: no data chunk again but, after an append, its last", async () => {
    const copyDir = path.join(sb.sessionsDir, "--copied-project--");
    mkdirSync(copyDir, { recursive: true });
    copyFileSync(bigFile, path.join(copyDir, path.basename(bigFile)));
    const repo = await Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
    const indexBefore = new Set(await listNames(repo.target, "index"));
    const duBefore = apparentSize(sb.repo);
    const s = await snapshot(sb);
    const growth = apparentSize(sb.repo) - duBefore;
    Object.assign(seen, { copyBytesStored: s.bytesStored, copyBytesNew: s.bytesNew, copyRepoGrowth: growth });
    expect(s.filesNew).toBe(1);
    expect(s.bytesTotal).toBeGreaterThan(40 * MB);
    // Every data chunk of the copy is already in the repository but, at most, its last one: the
    // earlier append was stored as an end-of-file piece after the old last chunk (docs/FORMAT.md
    // §10), and chunking the copy from scratch joins the two into one chunk. So: tree blobs, and
    // no more than one data blob of at most one maximum-size chunk.
    const added = (await listNames(repo.target, "index")).filter((n) => !indexBefore.has(n));
    expect(added).toHaveLength(1);
    const blobs = (await repo.readIndexFile(added[0])).packs.flatMap((p) => p.blobs);
    const data = blobs.filter((b) => b.type !== BlobType.Tree);
    expect(blobs.length).toBeGreaterThan(data.length);
    expect(data.length).toBeLessThanOrEqual(1);
    for (const b of data) expect(b.rawLength).toBeLessThanOrEqual(repo.dataChunker.params.max);
    // Against the 21 MB file: the new file's entry lists its ~640 chunk ids, plus that one chunk.
    const size = statSync(bigFile).size;
    expect(s.bytesStored).toBeLessThan(size / 100);
    expect(growth).toBeLessThan(size / 100);
  });

  it("a fork of the big session (pi --fork) stores little beyond its own entries", async () => {
    const fork = await forkPiSession({
      agentDir: sb.agentDir,
      cwd: sb.dir("fork-project"),
      parentFile: bigFile,
      captureEvents: false,
      turns: [{ user: "continue in the fork", assistant: ["a forked answer"] }],
    });
    const v = validateWithPi(readFileSync(fork.file, "utf8"));
    expect(v.header.parentSession).toBe(bigFile);
    expect(statSync(fork.file).size).toBeGreaterThan(20 * MB);

    const duBefore = apparentSize(sb.repo);
    const s = await snapshot(sb);
    const growth = apparentSize(sb.repo) - duBefore;
    Object.assign(seen, { forkBytesStored: s.bytesStored, forkBytesNew: s.bytesNew, forkRepoGrowth: growth, forkFileBytes: statSync(fork.file).size });
    expect(s.filesNew).toBe(1);
    // The new header and the fork's own turn change the first and the last chunk; the ~20 MB
    // in between are the parent's chunks.
    expect(s.bytesNew).toBeLessThan(400 * KB);
    expect(s.bytesStored).toBeLessThan(200 * KB);
    expect(growth).toBeLessThan(200 * KB);
  });

  it("restores the latest snapshot byte-identical, and the repository checks clean", async () => {
    const target = path.join(sb.root, "restored");
    await restoreJson(sb, ["latest", "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(treeState(sb.agentDir)));
    expect((await ok(sb, ["check", "--read-data", "--json"])).json().ok).toBe(true);
  });
});
