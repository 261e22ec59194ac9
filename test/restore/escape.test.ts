// Invariant 9: restore is the last line of defence. A crafted snapshot (written with the
// repository's own key) holding `..` paths, absolute paths, a symlink followed by a file under
// it, and a second root reached through a symlink the first root created, must not write one
// byte outside its target, in place or with --target.

import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox, sha256File } from "../helpers/tmp.js";
import { META_ROOT_NAME } from "../../src/sessions/meta.js";
import { craftSnapshot } from "./craft.js";

describe("restore of a hostile snapshot never leaves its target", () => {
  let sb: Sandbox;
  let outside: string;
  let snap: string;
  let twoRoots: string;
  let badRootName: string;
  // Every file of the sandbox that no restore may touch, with its content hash.
  const untouchable = (except: string[]) => {
    // pi-guard's own state dir holds the journal of an in-place restore (restore --undo).
    const skip = [sb.agentDir, sb.repo, sb.dataHome, path.join(sb.home, ".local", "state", "pi-guard"), ...except].map((d) => d + path.sep);
    const state: Record<string, string> = {};
    for (const f of listFiles(sb.root)) {
      if (skip.some((d) => f.startsWith(d))) continue;
      state[f] = lstatSync(f).isSymbolicLink() ? `-> ${readlinkSync(f)}` : sha256File(f);
    }
    return state;
  };

  beforeAll(async () => {
    sb = makeSandbox("escape");
    outside = sb.dir("outside");
    writeFileSync(path.join(outside, "victim.txt"), "original outside\n");
    // What `../x` and `sessions/../../x` would overwrite from a target in sb.root, and in place.
    writeFileSync(path.join(sb.root, "x"), "original x\n");
    writeFileSync(path.join(sb.home, ".pi-x"), "original home file\n");
    mkdirSync(path.join(sb.agentDir, "sessions"), { recursive: true });
    writeFileSync(path.join(sb.home, ".pi", "x"), "original .pi/x\n");
    await initRepo(sb);
    snap = await craftSnapshot(sb, [
      { type: "file", path: "good.txt", data: "good\n" },
      { type: "file", path: "../x", data: "EVIL ../x\n" },
      { type: "file", path: "sessions/../../x", data: "EVIL sessions/../../x\n" },
      { type: "file", path: "sessions/../../../.pi-x", data: "EVIL home\n" },
      { type: "file", path: path.join(outside, "abs.txt"), data: "EVIL absolute\n" },
      { type: "file", path: "sessions/a\\..\\..\\b", data: "EVIL backslash\n" },
      { type: "file", path: "sessions/./dot", data: "EVIL dot\n" },
      { type: "file", path: "sessions/ok.jsonl", data: '{"type":"session"}\n' },
      // pathBytes wins over path, so it is checked just the same.
      { type: "file", path: "harmless.txt", pathBytes: Buffer.from("../pb-x").toString("base64"), data: "EVIL pathBytes\n" },
      { type: "file", path: "sessions/nul\u0000x", data: "EVIL NUL\n" },
      { type: "symlink", path: "sessions/link", target: outside },
      { type: "file", path: "sessions/link/victim.txt", data: "EVIL through the link\n" },
      { type: "file", path: "sessions/link/new.txt", data: "EVIL new file through the link\n" },
    ]);
    // The first root makes `.meta` (where --target puts the meta root) a link to `outside`.
    twoRoots = await craftSnapshot(
      sb,
      [
        { type: "file", path: "good2.txt", data: "good2\n" },
        { type: "symlink", path: ".meta", target: outside },
        { type: "symlink", path: ".meta2", target: outside },
        { type: "file", root: "meta", path: "victim.txt", data: "EVIL second root\n" },
        { type: "file", root: "meta", path: "tags.json", data: "EVIL second root new\n" },
      ],
      [
        { name: "agent", path: sb.agentDir },
        { name: "meta", path: path.join(sb.dataHome, "pi-guard", "meta") },
      ],
    );
    badRootName = await craftSnapshot(
      sb,
      [
        { type: "file", path: "good3.txt", data: "good3\n" },
        { type: "file", root: "../../outside", path: "evil.txt", data: "EVIL root name\n" },
        { type: "file", root: "elsewhere", path: "evil.txt", data: "EVIL unconfigured root\n" },
      ],
      [
        { name: "agent", path: sb.agentDir },
        { name: "../../outside", path: outside },
        { name: "elsewhere", path: outside },
      ],
    );
  });

  afterAll(() => sb?.cleanup());

  it("--target: the good files are restored, every bad node is named, nothing outside changes, exit 1", async () => {
    const target = path.join(sb.root, "target");
    const before = untouchable([target]);
    const r = await cli(sb, ["restore", snap, "--target", target]);
    expect(r.code, r.stderr).toBe(1);
    expect(untouchable([target])).toEqual(before);
    expect(existsSync(path.join(outside, "new.txt"))).toBe(false);
    expect(existsSync(path.join(sb.root, "pb-x"))).toBe(false);
    expect(existsSync(path.join(target, "harmless.txt"))).toBe(false);
    expect(readFileSync(path.join(outside, "victim.txt"), "utf8")).toBe("original outside\n");
    expect(readFileSync(path.join(sb.root, "x"), "utf8")).toBe("original x\n");
    expect(readFileSync(path.join(target, "good.txt"), "utf8")).toBe("good\n");
    expect(readFileSync(path.join(target, "sessions/ok.jsonl"), "utf8")).toBe('{"type":"session"}\n');
    // The link itself is restored, as a link; nothing is written through it.
    expect(readlinkSync(path.join(target, "sessions/link"))).toBe(outside);
    for (const bad of ["../x", "sessions/../../x", "sessions/../../../.pi-x", path.join(outside, "abs.txt"), "sessions/a\\..\\..\\b", "sessions/./dot", "harmless.txt", "sessions/nul\\x00x"]) {
      expect(r.stderr).toContain(`not restored: ${bad}: unsafe path`);
    }
    expect(r.stderr).toMatch(/not restored: sessions\/link\/victim\.txt: sessions\/link is a symbolic link/);
    expect(r.stderr).toMatch(/not restored: sessions\/link\/new\.txt: sessions\/link is a symbolic link/);
    expect(listFiles(target).filter((f) => f.includes(".pi-guard-"))).toEqual([]);
  });

  it("in place: the same, and the agent dir's parents and $HOME are untouched", async () => {
    const before = untouchable([]);
    const r = await cli(sb, ["restore", snap, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(untouchable([])).toEqual(before);
    expect(readFileSync(path.join(sb.home, ".pi", "x"), "utf8")).toBe("original .pi/x\n");
    expect(readFileSync(path.join(sb.home, ".pi-x"), "utf8")).toBe("original home file\n");
    expect(existsSync(path.join(outside, "new.txt"))).toBe(false);
    expect(readFileSync(path.join(sb.agentDir, "good.txt"), "utf8")).toBe("good\n");
    expect(readlinkSync(path.join(sb.agentDir, "sessions/link"))).toBe(outside);
    const j = r.json();
    expect(j.failed.map((f: { path: string }) => f.path).sort()).toEqual(
      [
        "../x",
        "sessions/../../x",
        "sessions/../../../.pi-x",
        path.join(outside, "abs.txt"),
        "sessions/a\\..\\..\\b",
        "sessions/./dot",
        "harmless.txt",
        "sessions/nul\u0000x",
        "sessions/link/victim.txt",
        "sessions/link/new.txt",
      ].sort(),
    );
    // Created: good.txt, ok.jsonl and the link; nothing else is counted.
    expect(j.create).toBe(3);
    expect(listFiles(sb.agentDir).filter((f) => f.includes(".pi-guard-"))).toEqual([]);
  });

  it("a second root never goes through a symlink the first root just created", async () => {
    const target = path.join(sb.root, "target2");
    const before = untouchable([target]);
    const r = await cli(sb, ["restore", twoRoots, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(untouchable([target])).toEqual(before);
    expect(existsSync(path.join(outside, "tags.json"))).toBe(false);
    expect(readFileSync(path.join(outside, "victim.txt"), "utf8")).toBe("original outside\n");
    expect(readFileSync(path.join(target, "good2.txt"), "utf8")).toBe("good2\n");
    const failed = r.json().failed as { path: string; error: string }[];
    expect(failed.map((f) => f.path).sort()).toEqual(["tags.json", "victim.txt"]);
    for (const f of failed) expect(f.error).toMatch(/symbolic link/);
  });

  it("in place, a second root below the agent dir is not reached through a link the agent root just made", async () => {
    // pi-guard's data dir (and so the meta root) inside the agent dir: a nested second root.
    const env = { XDG_DATA_HOME: path.join(sb.agentDir, "xdg") };
    const through = path.join(outside, "pi-guard", "meta");
    mkdirSync(through, { recursive: true });
    const nested = await craftSnapshot(
      sb,
      [
        { type: "symlink", path: "xdg", target: outside },
        { type: "file", root: META_ROOT_NAME, path: "tags.json", data: "EVIL nested root\n" },
      ],
      [
        { name: "agent", path: sb.agentDir },
        { name: META_ROOT_NAME, path: path.join(sb.agentDir, "xdg", "pi-guard", "meta") },
      ],
    );
    const before = untouchable([]);
    const r = await cli(sb, ["restore", nested, "--json"], { env });
    expect(r.code, r.stderr).toBe(1);
    expect(untouchable([])).toEqual(before);
    expect(existsSync(path.join(through, "tags.json"))).toBe(false);
    const failed = r.json().failed as { root: string; path: string; error: string }[];
    if (lstatSync(path.join(sb.agentDir, "xdg")).isSymbolicLink()) {
      expect(readlinkSync(path.join(sb.agentDir, "xdg"))).toBe(outside);
      expect(failed).toMatchObject([{ root: META_ROOT_NAME, path: "tags.json", error: expect.stringMatching(/symbolic link/) }]);
    } else {
      // The data dir's metadata cache made xdg/ a real folder before the restore: the link is not
      // put over it (a folder is never replaced), and nothing is written through anything.
      expect(failed.map((f) => f.path)).toContain("xdg");
    }
  });

  it("root names are data too: an unsafe or unconfigured root is refused, the rest restores", async () => {
    const target = path.join(sb.root, "target3");
    const before = untouchable([target]);
    const r = await cli(sb, ["restore", badRootName, "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(readFileSync(path.join(target, "good3.txt"), "utf8")).toBe("good3\n");
    expect(r.json().failed.map((f: { root: string }) => f.root)).toEqual(["../../outside"]);
    const inPlace = await cli(sb, ["restore", badRootName, "--json"]);
    expect(inPlace.code, inPlace.stderr).toBe(1);
    expect(inPlace.json().failed.map((f: { root: string }) => f.root).sort()).toEqual(["../../outside", "elsewhere"]);
    expect(untouchable([target])).toEqual(before);
    expect(existsSync(path.join(outside, "evil.txt"))).toBe(false);
  });
});
