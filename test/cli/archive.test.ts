// `archive` writes a plain .tar.gz any tar can read; `snapshot --from-tar` imports such a tarball
// (ours, or one made by hand with `tar czf` of .pi/agent) and restores to the same bytes.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, initRepo, ok, restoreJson, snapshot } from "../helpers/cli.js";
import { fauxToolCall, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { copyFixtures, fingerprint, makeSandbox, type Sandbox, sessionFiles, treeState, writePiConfigFiles } from "../helpers/tmp.js";

function tar(args: string[]): string {
  const r = spawnSync("tar", args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`tar ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

describe("archive and tar import", () => {
  let sb: Sandbox;
  let original: ReturnType<typeof treeState>;

  beforeAll(async () => {
    sb = makeSandbox("archive");
    writePiConfigFiles(sb.agentDir);
    copyFixtures(sb.agentDir);
    await makePiSession({
      agentDir: sb.agentDir,
      cwd: sb.dir("project"),
      turns: [{ user: "run ls", assistant: [[fauxToolCall("bash", { command: "ls" })], "done"] }],
    });
    // A long path, beyond ustar's 100-character name field, needs a PAX header.
    const deep = path.join(sb.agentDir, "extensions", "a-rather-long-extension-folder-name", "with", "nested", "folders", "that", "go", "on");
    mkdirSync(deep, { recursive: true });
    writeFileSync(path.join(deep, "index-with-a-long-file-name-too.ts"), "export const x = 1;\n");
    await initRepo(sb);
    await snapshot(sb);
    original = treeState(sb.agentDir);
  });

  afterAll(() => sb?.cleanup());

  it("archive latest -o x.tar.gz is readable by the system tar, byte for byte", async () => {
    const out = path.join(sb.root, "x.tar.gz");
    const r = (await ok(sb, ["archive", "latest", "-o", out, "--json"])).json();
    expect(r.files).toBe(original.size);
    const listed = tar(["-tzf", out]).split("\n").filter((l) => l && !l.endsWith("/"));
    expect(listed.sort()).toEqual([...original.keys()].sort());
    const extracted = sb.dir("extracted");
    tar(["-xzf", out, "-C", extracted]);
    expect(fingerprint(treeState(extracted))).toEqual(fingerprint(original));
    // Only the archive itself is left in its folder: no temp file beside it.
    expect(readdirSync(sb.root).filter((n) => n.includes("x.tar.gz"))).toEqual(["x.tar.gz"]);
  });

  it("archive -o - streams to stdout for a pipe", () => {
    const r = spawnSync("sh", ["-c", `"${process.execPath}" "${BIN}" archive latest -o - | tar -tz`], { env: sb.env, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("auth.json");
    expect(r.stdout.split("\n").filter((l) => l.endsWith(".jsonl"))).toHaveLength(sessionFiles(sb.sessionsDir).length);
  });

  it("snapshot --from-tar imports our archive; restoring it gives identical bytes", async () => {
    const out = path.join(sb.root, "x.tar.gz");
    const s = await snapshot(sb, ["--from-tar", out]);
    expect(s.files).toBe(original.size);
    // Everything was already in the repository.
    expect(s.bytesStored).toBeLessThan(64 * 1024);
    const target = path.join(sb.root, "from-archive");
    await restoreJson(sb, [s.snapshotId, "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(original));
  });

  it("imports a hand-made `tar czf` of .pi/agent (the prefix is found)", async () => {
    const hand = path.join(sb.root, "hand.tar.gz");
    tar(["-czf", hand, "-C", sb.home, ".pi/agent"]);
    expect(tar(["-tzf", hand])).toMatch(/^\.pi\/agent\/auth\.json$/m);
    const s = await snapshot(sb, ["--from-tar", hand, "--time", "2026-01-02T03:04:05Z"]);
    expect(s.time).toBe("2026-01-02T03:04:05.000Z");
    const target = path.join(sb.root, "from-hand");
    await restoreJson(sb, [s.snapshotId, "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(original));
    expect(existsSync(path.join(target, ".pi"))).toBe(false);
    for (const f of sessionFiles(path.join(target, "sessions"))) {
      if (!f.includes("garbage")) validateWithPi(readFileSync(f, "utf8"));
    }
  });

  it("imports an uncompressed tar with a ./ prefix too", async () => {
    const plain = path.join(sb.root, "plain.tar");
    tar(["-cf", plain, "-C", sb.agentDir, "."]);
    const s = await snapshot(sb, ["--from-tar", plain]);
    const target = path.join(sb.root, "from-plain");
    await restoreJson(sb, [s.snapshotId, "--target", target]);
    expect(fingerprint(treeState(target))).toEqual(fingerprint(original));
  });
});
