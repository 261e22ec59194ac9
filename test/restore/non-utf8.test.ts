// File names are bytes on Linux. A name that is not valid UTF-8 must be backed up and come back
// with exactly the same bytes (docs/FORMAT.md §8: `pathBytes`).

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initRepo, restoreJson, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const FILE_NAME = Buffer.from([0x73, 0x2d, 0xff, 0x2e, 0x6a]); // "s-\xff.j"
const DIR_NAME = Buffer.from([0x64, 0xfe, 0xc3]); // "d\xfe\xc3": a truncated sequence too
const join = (...parts: (string | Buffer)[]) => Buffer.concat(parts.flatMap((p, i) => (i ? [Buffer.from("/"), Buffer.from(p)] : [Buffer.from(p)])));

describe("names that are not UTF-8 round-trip byte for byte", () => {
  let sb: Sandbox;
  let snap: string;
  const sessions = () => join(sb.agentDir, "sessions");

  beforeAll(async () => {
    sb = makeSandbox("non-utf8");
    mkdirSync(path.join(sb.agentDir, "sessions"), { recursive: true });
    writeFileSync(join(sessions(), FILE_NAME), "content of a file with a latin-1 name\n");
    mkdirSync(join(sessions(), DIR_NAME));
    writeFileSync(join(sessions(), DIR_NAME, "inner.txt"), "inside a folder with a bad name\n");
    writeFileSync(path.join(sb.agentDir, "sessions", "plain.txt"), "plain\n");
    await initRepo(sb);
    const s = await snapshot(sb);
    snap = s.snapshotId;
    expect(s.files).toBe(3);
  });

  afterAll(() => sb?.cleanup());

  it("in place after deletion: the same name bytes and content come back", async () => {
    rmSync(path.join(sb.agentDir, "sessions"), { recursive: true });
    const r = await restoreJson(sb, [snap]);
    expect(r.failed).toEqual([]);
    expect(r.create).toBe(3);
    const names = readdirSync(sessions(), { encoding: "buffer" }).sort(Buffer.compare);
    expect(names).toEqual([FILE_NAME, DIR_NAME, Buffer.from("plain.txt")].sort(Buffer.compare));
    expect(readFileSync(join(sessions(), FILE_NAME), "utf8")).toBe("content of a file with a latin-1 name\n");
    expect(readdirSync(join(sessions(), DIR_NAME), { encoding: "buffer" })).toEqual([Buffer.from("inner.txt")]);
    expect(readFileSync(join(sessions(), DIR_NAME, "inner.txt"), "utf8")).toBe("inside a folder with a bad name\n");
  });

  it("the next snapshot sees them unchanged, and --delete does not take them for extra files", async () => {
    await snapshot(sb);
    const s = await snapshot(sb);
    expect(s.files).toBe(3);
    expect(s.filesUnchanged).toBe(3);
    const r = await restoreJson(sb, [snap, "--delete", "--dry-run"]);
    expect(r.delete).toBe(0);
    expect(r.unchanged).toBe(3);
  });

  it("into --target as well", async () => {
    const target = path.join(sb.root, "t");
    const r = await restoreJson(sb, [snap, "--target", target]);
    expect(r.create).toBe(3);
    expect(readFileSync(join(target, "sessions", FILE_NAME), "utf8")).toBe("content of a file with a latin-1 name\n");
    expect(readFileSync(join(target, "sessions", DIR_NAME, "inner.txt"), "utf8")).toBe("inside a folder with a bad name\n");
  });
});
