// A restore into a target folder starts its decoding threads before it plans (engine.ts,
// earlyRestorePool), so they boot on another core meanwhile. Whatever then happens, the result is
// the one the late start gave: every file byte-identical, or, with a pack gone, exactly the files
// that need it failed and named, the others exact, no temp file left, a non-zero exit; and a
// restore that fails before it writes (a target that is a file) writes nothing and says why in
// one line.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, initRepo, snapshot } from "../helpers/cli.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";

const MiB = 1024 * 1024;

describe("restore --target with its threads started before the plan", () => {
  let sb: Sandbox;
  const source = new Map<string, Buffer>();
  const temps = (dir: string) => listFiles(dir).filter((f) => f.includes(".pi-guard-"));

  beforeAll(async () => {
    sb = makeSandbox("early-pool");
    // Random bytes do not compress: 40 MiB make three packs, so one can go missing.
    for (let i = 0; i < 20; i++) {
      const rel = `sessions/--p${i % 3}--/2026-01-0${(i % 9) + 1}T00-00-00-000Z_file-${i}.bin`;
      source.set(rel, randomBytes(MiB + i * 97 * 1024));
    }
    for (const [rel, data] of source) {
      mkdirSync(path.join(sb.agentDir, path.dirname(rel)), { recursive: true });
      writeFileSync(path.join(sb.agentDir, rel), data);
    }
    await initRepo(sb);
    await snapshot(sb);
  }, 120_000);

  afterAll(() => sb?.cleanup());

  const restored = (target: string) => [...source.keys()].filter((rel) => {
    try {
      return createHash("sha256").update(readFileSync(path.join(target, rel))).digest("hex") === createHash("sha256").update(source.get(rel)!).digest("hex");
    } catch {
      return false;
    }
  });

  it("restores every file byte-identical, exit 0", async () => {
    const target = path.join(sb.root, "t-all");
    const r = await cli(sb, ["restore", "latest", "--target", target, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(restored(target).sort()).toEqual([...source.keys()].sort());
    expect(temps(target)).toEqual([]);
  }, 120_000);

  it("a pack gone: the files that need it fail by name, the others are exact, no temp file stays, exit non-zero", async () => {
    const packs = readdirSync(path.join(sb.repo, "data"), { recursive: true })
      .map(String)
      .filter((p) => /^[0-9a-f]{2}\/[0-9a-f]{64}$/.test(p))
      .map((p) => path.join(sb.repo, "data", p));
    expect(packs.length).toBeGreaterThanOrEqual(2);
    // The biggest pack holds file data, not only the tree.
    const gone = packs.sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
    const kept = readFileSync(gone);
    rmSync(gone);
    try {
      const target = path.join(sb.root, "t-gone");
      const r = await cli(sb, ["restore", "latest", "--target", target, "--json"]);
      expect(r.code, r.stderr).not.toBe(0);
      const failed: string[] = r.json().failed.map((f: { path: string }) => f.path).sort();
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.length).toBeLessThan(source.size);
      const exact = restored(target).sort();
      expect(exact).toEqual([...source.keys()].filter((k) => !failed.includes(k)).sort());
      expect(listFiles(target).map((f) => path.relative(target, f)).sort()).toEqual(exact);
      expect(temps(target)).toEqual([]);
    } finally {
      writeFileSync(gone, kept);
    }
  }, 120_000);

  it("a target that is a file: one line, nothing written", async () => {
    const target = path.join(sb.root, "a-file");
    writeFileSync(target, "not a folder\n");
    const r = await cli(sb, ["restore", "latest", "--target", target, "--json"]);
    expectOneLineError(r);
    expect(readFileSync(target, "utf8")).toBe("not a folder\n");
  }, 120_000);
});
