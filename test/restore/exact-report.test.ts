// Every file a restore should write is either written (and counted) or listed as failed with
// its reason; a folder where a file belongs is never deleted; no temp file survives.

import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { once } from "./craft.js";

const SESSION = "sessions/--proj--/2026-01-02T03-04-05-000Z_0b9c5c3e-0000-4000-8000-000000000001.jsonl";

describe("restore reports exactly what it did", () => {
  let sb: Sandbox;
  let snap: string;
  const temps = (dir: string) => listFiles(dir).filter((f) => f.includes(".pi-guard-"));

  beforeAll(async () => {
    sb = makeSandbox("exact");
    mkdirSync(path.join(sb.agentDir, path.dirname(SESSION)), { recursive: true });
    writeFileSync(path.join(sb.agentDir, "auth.json"), '{"k":"v"}\n', { mode: 0o600 });
    writeFileSync(path.join(sb.agentDir, "models.json"), "{}\n");
    writeFileSync(path.join(sb.agentDir, SESSION), '{"type":"session","id":"0b9c5c3e-0000-4000-8000-000000000001"}\n');
    await initRepo(sb);
    snap = (await snapshot(sb)).snapshotId;
  });

  afterAll(() => sb?.cleanup());

  it("--target with a folder where auth.json belongs: the folder stays, auth.json is listed as failed, exit 1", async () => {
    const target = path.join(sb.root, "t1");
    mkdirSync(path.join(target, "auth.json", "inner"), { recursive: true });
    const r = await cli(sb, ["restore", snap, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const j = r.json();
    expect(j.failed.map((f: { path: string }) => f.path)).toEqual(["auth.json"]);
    expect(j.failed[0].error).toMatch(/folder is in the way/);
    expect(j.create).toBe(2);
    expect(j.replace).toBe(0);
    expect(statSync(path.join(target, "auth.json")).isDirectory()).toBe(true);
    expect(existsSync(path.join(target, "auth.json", "inner"))).toBe(true);
    expect(readFileSync(path.join(target, "models.json"), "utf8")).toBe("{}\n");
    expect(temps(target)).toEqual([]);
    const human = await cli(sb, ["restore", snap, "--target", target]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/not restored: auth\.json: a folder is in the way/);
  });

  it("in place, a session path that became a folder: the folder stays, the session is listed as failed, exit 1", async () => {
    rmSync(path.join(sb.agentDir, SESSION));
    mkdirSync(path.join(sb.agentDir, SESSION));
    writeFileSync(path.join(sb.agentDir, SESSION, "keep.txt"), "user data\n");
    rmSync(path.join(sb.agentDir, "models.json"));
    const r = await cli(sb, ["restore", snap, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const j = r.json();
    expect(j.failed.map((f: { path: string }) => f.path)).toEqual([SESSION]);
    expect(j.create).toBe(1);
    expect(j.files.map((f: { path: string }) => f.path)).toEqual(["models.json"]);
    expect(readFileSync(path.join(sb.agentDir, SESSION, "keep.txt"), "utf8")).toBe("user data\n");
    expect(temps(sb.agentDir)).toEqual([]);
    // Not with --delete either: the folder's contents are not "extra files".
    const del = await cli(sb, ["restore", snap, "--delete", "--json"]);
    expect(del.code, del.stderr).toBe(1);
    expect(del.json().delete).toBe(0);
    expect(readFileSync(path.join(sb.agentDir, SESSION, "keep.txt"), "utf8")).toBe("user data\n");
    rmSync(path.join(sb.agentDir, SESSION), { recursive: true });
  });

  it("a file whose data is missing from the repository is not counted as created", async () => {
    // b.txt points at a blob the repository does not have.
    const { loadConfig } = await import("../../src/config/config.js");
    const { openRepository } = await import("../../src/engine.js");
    const { withSnapshotBuilder } = await import("../../src/snapshot/snapshotter.js");
    const repo = await openRepository(loadConfig({}, sb.env));
    const missing = await withSnapshotBuilder(repo, { command: "test" }, async (b) => {
      await b.addStreamedFile({ root: "agent", path: "a.txt", mode: 0o644, mtimeMs: 0 }, once(Buffer.from("a\n")));
      await b.addNode({ root: "agent", path: "b.txt", type: "file", mode: 0o644, mtimeMs: 0, size: 2, content: ["ab".repeat(32)] });
      return b.commit({ host: "h", roots: [{ name: "agent", path: sb.agentDir }], tags: [] });
    });
    const target = path.join(sb.root, "t3");
    const r = await cli(sb, ["restore", missing.id, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(3);
    const j = r.json();
    expect(j.create).toBe(1);
    expect(j.failed.map((f: { path: string }) => f.path)).toEqual(["b.txt"]);
    expect(listFiles(target).map((f) => path.relative(target, f))).toEqual(["a.txt"]);
  });

  it("a file whose data does not match its recorded size is refused, not renamed into place", async () => {
    const { loadConfig } = await import("../../src/config/config.js");
    const { openRepository } = await import("../../src/engine.js");
    const { withSnapshotBuilder } = await import("../../src/snapshot/snapshotter.js");
    const repo = await openRepository(loadConfig({}, sb.env));
    let contentOfA: string[] = [];
    const lying = await withSnapshotBuilder(repo, { command: "test" }, async (b) => {
      await b.addStreamedFile({ root: "agent", path: "a.txt", mode: 0o644, mtimeMs: 0 }, once(Buffer.from("a\n")));
      contentOfA = [repo.blobId(Buffer.from("a\n"))];
      await b.addNode({ root: "agent", path: "big.txt", type: "file", mode: 0o644, mtimeMs: 0, size: 5000, content: contentOfA });
      return b.commit({ host: "h", roots: [{ name: "agent", path: sb.agentDir }], tags: [] });
    });
    const target = path.join(sb.root, "t4");
    const r = await cli(sb, ["restore", lying.id, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.json().failed.map((f: { path: string }) => f.path)).toEqual(["big.txt"]);
    expect(existsSync(path.join(target, "big.txt"))).toBe(false);
    expect(temps(target)).toEqual([]);
  });

  it("--target naming a file says that the target is a file", async () => {
    const file = path.join(sb.root, "a-file");
    writeFileSync(file, "x");
    const r = await cli(sb, ["restore", snap, "--target", file]);
    expect(expectOneLineError(r, 1)).toBe(`pi-guard: cannot restore to ${file}: it is a file, not a folder`);
  });
});
