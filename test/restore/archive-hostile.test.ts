// `pi-guard archive` turns a snapshot into a tarball that other tools extract and may trust. A
// hostile snapshot (written with the repository's own key) must not become a hostile tar: unsafe
// names are left out and named, nothing goes below a symlink, and the command exits non-zero.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { craftSnapshot } from "./craft.js";

describe("archive of a hostile snapshot", () => {
  let sb: Sandbox;
  let outside: string;
  let snap: string;

  beforeAll(async () => {
    sb = makeSandbox("archive-hostile");
    outside = sb.dir("outside");
    writeFileSync(path.join(outside, "victim.txt"), "original outside\n");
    mkdirSync(path.join(sb.agentDir, "sessions"), { recursive: true });
    await initRepo(sb);
    snap = await craftSnapshot(
      sb,
      [
        { type: "file", path: "good.txt", data: "good\n" },
        { type: "file", path: "../x", data: "EVIL ../x\n" },
        { type: "file", path: "sessions/../../x", data: "EVIL sessions/../../x\n" },
        { type: "file", path: path.join(outside, "abs.txt"), data: "EVIL absolute\n" },
        { type: "file", path: "harmless.txt", pathBytes: Buffer.from("../pb-x").toString("base64"), data: "EVIL pathBytes\n" },
        { type: "file", path: "s-\ufffd.txt", pathBytes: Buffer.from([0x73, 0x2d, 0xff, 0x2e, 0x74, 0x78, 0x74]).toString("base64"), data: "not utf-8\n" },
        { type: "symlink", path: "sessions/link", target: outside },
        { type: "file", path: "sessions/link/victim.txt", data: "EVIL through the link\n" },
        { type: "file", root: "../../outside", path: "evil.txt", data: "EVIL root name\n" },
      ],
      [
        { name: "agent", path: sb.agentDir },
        { name: "../../outside", path: outside },
      ],
    );
  });

  afterAll(() => sb?.cleanup());

  it("leaves out and names every unsafe node, exits 1, and GNU tar extracts nothing outside", async () => {
    const out = path.join(sb.root, "a.tar.gz");
    const r = await cli(sb, ["archive", snap, "-o", out]);
    expect(r.code, r.stderr).toBe(1);
    for (const bad of ["../x", "sessions/../../x", "abs.txt", "harmless.txt", "s-\ufffd.txt", "sessions/link/victim.txt", "evil.txt"]) {
      expect(r.stderr).toContain(bad);
    }
    expect(r.stderr).toMatch(/7 path\(s\) of the snapshot are not in the archive/);
    const names = execFileSync("tar", ["-tzf", out], { encoding: "utf8" }).trim().split("\n").sort();
    expect(names).toEqual(["good.txt", "sessions/link"]);
    const dest = sb.dir("extract");
    execFileSync("tar", ["-xzf", out, "-C", dest]);
    expect(readFileSync(path.join(dest, "good.txt"), "utf8")).toBe("good\n");
    expect(readFileSync(path.join(outside, "victim.txt"), "utf8")).toBe("original outside\n");
    expect(existsSync(path.join(sb.root, "x"))).toBe(false);
  });

  it("--json lists the skipped nodes", async () => {
    const r = await cli(sb, ["--json", "archive", snap, "-o", path.join(sb.root, "b.tar.gz")]);
    expect(r.code).toBe(1);
    const json = JSON.parse(r.stdout);
    expect(json.skipped).toHaveLength(7);
    expect(json.files).toBe(1);
  });
});
