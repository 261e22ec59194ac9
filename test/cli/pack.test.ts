// What `npm pack` ships is enough: the tarball, installed into an empty prefix with only its
// declared dependencies, gives a working `pi-guard --help` and `pi-guard demo`.
//
// The install takes the dependencies' tarballs from the npm cache that `npm ci` filled
// (--prefer-offline asks the registry only for metadata it has not cached). Install scripts are
// skipped: they would compile better-sqlite3 and zstd-napi from source (minutes), so the native
// addons this checkout already built are copied in instead, after checking that the versions match.

import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, PROJECT_ROOT, staleOutputs } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

const npm = (args: string[], cwd: string) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });

/** Native addons the install scripts would have built: copied from this checkout's node_modules. */
function copyNativeAddons(installed: string): string[] {
  const copied: string[] = [];
  for (const name of readdirSync(installed)) {
    const pkg = path.join(installed, name);
    if (!existsSync(path.join(pkg, "binding.gyp"))) continue;
    const ours = path.join(PROJECT_ROOT, "node_modules", name);
    const version = (dir: string) => JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).version;
    expect(version(pkg), `${name}: the tarball's dependency differs from the one built here`).toBe(version(ours));
    cpSync(path.join(ours, "build", "Release"), path.join(pkg, "build", "Release"), {
      recursive: true,
      // The addons only, not the object files.
      filter: (src) => !path.basename(src).startsWith("obj") && (statSync(src).isDirectory() || src.endsWith(".node")),
    });
    copied.push(name);
  }
  return copied;
}

describe("npm pack, installed into an empty prefix", () => {
  let sb: Sandbox;
  let bin: string;
  let files: string[];

  beforeAll(() => {
    if (process.env.PI_GUARD_TEST_ALLOW_STALE_DIST !== "1") expect(staleOutputs(), "run `npm run build` first").toEqual([]);
    sb = makeSandbox("pack");
    const packDir = sb.dir("pack");
    const prefix = sb.dir("prefix");
    // dist/ is fresh (checked above), so the prepack build is skipped here.
    const [packed] = JSON.parse(npm(["pack", "--ignore-scripts", "--json", "--pack-destination", packDir], PROJECT_ROOT));
    files = packed.files.map((f: { path: string }) => f.path);
    npm(["install", "--prefix", prefix, path.join(packDir, packed.filename), "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund"], prefix);
    expect(copyNativeAddons(path.join(prefix, "node_modules")).sort()).toEqual(["better-sqlite3", "zstd-napi"]);
    bin = path.join(prefix, "node_modules", ".bin", "pi-guard");
  });

  afterAll(() => sb?.cleanup());

  const run = (args: string[]) => {
    // Only the sandbox's HOME, XDG dirs and PATH: nothing of this checkout is reachable.
    const env = { ...sb.env, TMPDIR: sb.dir("tmp") };
    return collect(spawn(bin, args, { cwd: sb.root, env, stdio: ["ignore", "pipe", "pipe"] }));
  };

  it("ships the bundled CLI and its docs, not the sources or the tests", () => {
    for (const f of ["package.json", "bin/pi-guard.js", "dist/cli/main.js", "dist/cli/seal-worker.js", "README.md", "docs/FORMAT.md"]) expect(files).toContain(f);
    expect(files.filter((f) => /^(src|test|bench|dist\/src|dist\/bench)\//.test(f))).toEqual([]);
  });

  it("npm pack builds dist/ first, so that a clean checkout packs a working CLI", () => {
    const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8"));
    expect(pkg.scripts.prepack).toBe("npm run build");
    expect(pkg.bin).toEqual({ "pi-guard": "bin/pi-guard.js" });
  });

  it("pi-guard --help works", async () => {
    const r = await run(["--help"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: pi-guard/);
    expect(r.stdout).toContain("restore");
  });

  it("pi-guard demo restores every byte", async () => {
    const r = await run(["demo", "--json", "--size", "4"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ identical: true, difference: "identical", authMode: "600" });
  });
});
