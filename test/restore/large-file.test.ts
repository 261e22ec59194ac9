// Files over 2 GiB: a real 2.1 GiB sparse file (a database with data at known offsets, one past
// 2 GiB, and a hole at its end) and a real 2.1 GiB file of one repeated chunk. Each backs up in
// bounded memory and restores byte-identical, to --target and in place; the sparse one stays
// sparse, and `archive` still holds its exact bytes. One file of one repeated chunk is one blob
// at thousands of offsets: a restore used to hand it to a single writev of the whole file, which
// Node reported as 0 bytes written ("input/output error").

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, createReadStream, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, type CliResult, cli, initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const GiB = 2 ** 30;
const SIZE = Math.floor(2.1 * GiB);
const FILE = "pi-hermes-memory/sessions.db";
/** Peak memory allowed to a snapshot or restore of one such file: far below its size. */
const MAX_RSS_KIB = 512 * 1024;
const PEAK_RSS_PRELOAD = path.join(import.meta.dirname, "peak-rss.cjs");

async function sha256(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file, { highWaterMark: 8 * 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Run the CLI and read its peak resident set (KiB) from the preload. */
async function measured(sb: Sandbox, args: string[]): Promise<CliResult & { peakKiB: number }> {
  const out = path.join(sb.root, "peak-rss");
  rmSync(out, { force: true });
  const r = await cli(sb, args, { env: { NODE_OPTIONS: `--require ${PEAK_RSS_PRELOAD}`, PI_GUARD_TEST_PEAK_RSS: out }, timeoutMs: 600_000 });
  return { ...r, peakKiB: Number(readFileSync(out, "utf8")) };
}

const why = (r: CliResult) => `exit ${r.code}: ${r.stderr.slice(0, 500)}`;

describe("a 2.1 GiB sparse file", () => {
  let sb: Sandbox;
  let source: string;
  let sum: string;
  /** Non-zero regions: the header, the middle, across 2^31, past 2 GiB; the file ends in a hole. */
  const regions = [
    { at: 0, data: Buffer.concat([Buffer.from("SQLite format 3\0"), randomBytes(4096 - 16)]) },
    { at: GiB + 12_345, data: randomBytes(100 * 1024) },
    { at: 2 * GiB - 30_000, data: randomBytes(64 * 1024) },
    { at: 2 * GiB + 50 * 1024 * 1024, data: randomBytes(1024 * 1024) },
  ];

  beforeAll(async () => {
    sb = makeSandbox("sparse");
    source = path.join(sb.agentDir, FILE);
    mkdirSync(path.dirname(source), { recursive: true });
    const fd = openSync(source, "w", 0o644);
    ftruncateSync(fd, SIZE);
    for (const r of regions) writeSync(fd, r.data, 0, r.data.length, r.at);
    closeSync(fd);
    expect(statSync(source).blocks * 512).toBeLessThan(8 * 1024 * 1024);
    sum = await sha256(source);
    await initRepo(sb);
  }, 600_000);

  afterAll(() => sb?.cleanup(), 600_000);

  /** Same bytes, same size, and still sparse: a few MiB on disk, not 2.1 GiB. */
  async function expectSameSparse(file: string): Promise<void> {
    const st = statSync(file);
    expect(st.size).toBe(SIZE);
    expect(st.blocks * 512).toBeLessThan(16 * 1024 * 1024);
    expect(await sha256(file)).toBe(sum);
  }

  it("backs up in bounded memory, and restores to --target byte-identical and sparse, in bounded memory", async () => {
    const snap = await measured(sb, ["snapshot", "--json"]);
    expect(snap.code, why(snap)).toBe(0);
    expect(snap.json().bytesTotal).toBe(SIZE);
    expect(snap.peakKiB).toBeLessThan(MAX_RSS_KIB);
    const target = path.join(sb.root, "restored");
    const r = await measured(sb, ["restore", "latest", "--target", target, "--json"]);
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(r.peakKiB).toBeLessThan(MAX_RSS_KIB);
    await expectSameSparse(path.join(target, FILE));
  }, 600_000);

  it("restores in place, after it was deleted, byte-identical and sparse", async () => {
    rmSync(source);
    const r = await cli(sb, ["restore", "latest", "--json"], { timeoutMs: 600_000 });
    expect(r.code, why(r)).toBe(0);
    expect(r.json().files.map((f: { path: string; action: string }) => `${f.action} ${f.path}`)).toContain(`create ${FILE}`);
    await expectSameSparse(source);
  }, 600_000);

  it("archive writes its exact bytes (streamed through tar)", async () => {
    // pi-guard archive -o - | tar -xzO FILE: nothing of 2.1 GiB lands on disk.
    const archive = spawn(process.execPath, [BIN, "archive", "latest", "-o", "-", "--path", FILE], { env: sb.env, stdio: ["ignore", "pipe", "pipe"] });
    const tar = spawn("tar", ["-xzO", FILE], { stdio: ["pipe", "pipe", "pipe"] });
    archive.stdout.pipe(tar.stdin);
    const hash = createHash("sha256");
    tar.stdout.on("data", (d: Buffer) => hash.update(d));
    const stderr = { archive: "", tar: "" };
    archive.stderr.on("data", (d: Buffer) => (stderr.archive += d));
    tar.stderr.on("data", (d: Buffer) => (stderr.tar += d));
    const [a, t] = await Promise.all([once(archive, "close"), once(tar, "close")]);
    expect(a[0], stderr.archive).toBe(0);
    expect(t[0], stderr.tar).toBe(0);
    expect(hash.digest("hex")).toBe(sum);
  }, 600_000);
});

describe("a 2.1 GiB file of one repeated non-zero chunk", () => {
  let sb: Sandbox;
  let sum: string;

  beforeAll(async () => {
    sb = makeSandbox("repeat");
    const source = path.join(sb.agentDir, FILE);
    mkdirSync(path.dirname(source), { recursive: true });
    // The same byte throughout: every chunk is the chunker's largest, and all are one blob.
    const block = Buffer.alloc(16 * 1024 * 1024, 0x61);
    const fd = openSync(source, "w", 0o644);
    for (let at = 0; at < SIZE; at += block.length) writeSync(fd, block, 0, Math.min(block.length, SIZE - at), at);
    closeSync(fd);
    sum = await sha256(source);
    await initRepo(sb);
  }, 600_000);

  afterAll(() => sb?.cleanup(), 600_000);

  it("backs up and restores to --target byte-identical", async () => {
    const snap = await cli(sb, ["snapshot", "--json"], { timeoutMs: 600_000 });
    expect(snap.code, why(snap)).toBe(0);
    // The source is not needed any more: only one copy of 2.1 GiB on disk at a time.
    rmSync(path.join(sb.agentDir, FILE));
    const target = path.join(sb.root, "restored");
    const r = await cli(sb, ["restore", "latest", "--target", target, "--json"], { timeoutMs: 600_000 });
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    const restored = path.join(target, FILE);
    expect(statSync(restored).size).toBe(SIZE);
    expect(await sha256(restored)).toBe(sum);
  }, 600_000);
});
