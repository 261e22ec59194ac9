// The library example of docs/LIBRARY.md (and the README) runs exactly as written: the fenced
// block is copied into a project of its own that imports pi-guard by its package name, resolved
// through package.json "exports" (node_modules/pi-guard links to this checkout, as an install
// would hold it), and run on a sandbox with a real pi session. The same block type-checks, as
// TypeScript, against the declarations the package ships, and `npm pack` ships them.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, ok, PROJECT_ROOT } from "../helpers/cli.js";
import { fauxText, fauxToolCall, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { makePackageApp } from "./package-app.js";

/** The first ```js block of docs/LIBRARY.md. */
function example(): string {
  const doc = readFileSync(path.join(PROJECT_ROOT, "docs", "LIBRARY.md"), "utf8");
  const m = /```js\n([\s\S]*?)```/.exec(doc);
  expect(m, "docs/LIBRARY.md has a ```js block").not.toBeNull();
  return m![1];
}

let sb: Sandbox;
let app: string;
let sessionId: string;
let sessionFile: string;

beforeAll(async () => {
  sb = makeSandbox("readme-lib");
  writePiConfigFiles(sb.agentDir);
  const made = await makePiSession({
    agentDir: sb.agentDir,
    cwd: path.join(sb.root, "project"),
    turns: [{ user: "plan the database migration", assistant: [[fauxToolCall("bash", { command: "echo migrating" })], fauxText("the migration is planned")] }],
  });
  sessionId = made.sessionId;
  sessionFile = made.file;
  await ok(sb, ["init"]);
  await ok(sb, ["sessions", "tag", sessionId, "keep"]);
  app = makePackageApp(sb);
}, 120_000);

afterAll(() => sb?.cleanup());

describe("the README's library example", () => {
  it("is the block of docs/LIBRARY.md, word for word", () => {
    const readme = readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    const m = /```js\n([\s\S]*?)```/.exec(readme);
    expect(m, "README.md has a ```js block").not.toBeNull();
    expect(m![1]).toBe(example());
  });

  it("runs as written, importing pi-guard by its package name", { timeout: 120_000 }, async () => {
    writeFileSync(path.join(app, "example.mjs"), example());
    const tmp = sb.dir("tmp");
    const r = await collect(spawn(process.execPath, ["example.mjs"], { cwd: app, env: { ...sb.env, TMPDIR: tmp }, stdio: ["ignore", "pipe", "pipe"] }));
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^snapshot [0-9a-f]{8}: \d+ files$/);
    expect(lines[1]).toMatch(/^1 snapshots, the newest at \d{4}-\d\d-\d\dT/);
    const exported = path.join(tmp, `${sessionId}.md`);
    expect(lines[2]).toBe(`exported ${path.join(sb.root, "project")} to ${exported}`);
    const md = readFileSync(exported, "utf8");
    expect(md).toContain("plan the database migration");
    expect(md).toContain("echo migrating");
    expect(lines[3]).toMatch(new RegExp(`^found in ${sessionId}: .*«migrat`));
    expect(lines[4]).toMatch(/^restored \d+ files from [0-9a-f]{8}$/);
    expect(lines).toHaveLength(5);
    // The restore put the session back byte-identical in a folder of its own.
    const restored = path.join(tmp, "pi-then", path.relative(sb.agentDir, sessionFile));
    expect(readFileSync(restored)).toEqual(readFileSync(sessionFile));
    // The snapshot is one the CLI lists.
    const listed = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>();
    expect(lines[0]).toContain(listed[0].id.slice(0, 8));
  });

  it("type-checks as TypeScript against the shipped declarations", { timeout: 120_000 }, () => {
    writeFileSync(path.join(app, "example.mts"), example());
    writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: true, types: ["node"], typeRoots: [path.join(PROJECT_ROOT, "node_modules", "@types")] },
        files: ["example.mts"],
      }),
    );
    const tsc = path.join(PROJECT_ROOT, "node_modules", "typescript", "bin", "tsc");
    let out = "";
    try {
      out = execFileSync(process.execPath, [tsc, "-p", "tsconfig.json", "--listFiles"], { cwd: app, encoding: "utf8" });
    } catch (err) {
      throw new Error(`tsc failed:\n${(err as { stdout?: string }).stdout}`);
    }
    // The types came from the package's declarations, not from its sources.
    expect(out).toContain(path.join(PROJECT_ROOT, "dist", "types", "src", "index.d.ts"));
    expect(out).not.toContain(path.join(PROJECT_ROOT, "src", "index.ts"));
  });

  it("npm pack ships the library entry and its declarations", { timeout: 120_000 }, () => {
    const [packed] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--ignore-scripts", "--json"], { cwd: PROJECT_ROOT, encoding: "utf8" }));
    const files = new Set(packed.files.map((f: { path: string }) => f.path));
    const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8"));
    expect(pkg.exports["."]).toEqual({ types: "./dist/types/src/index.d.ts", default: "./dist/cli/index.js" });
    for (const f of ["dist/cli/index.js", "dist/types/src/index.d.ts", "dist/types/src/library/guard.d.ts", "dist/types/src/engine/types.d.ts"]) expect(files.has(f), f).toBe(true);
    // Declarations only: not the compiled sources the bundle was made from, nor the benchmarks' types.
    expect([...files].filter((f) => /^dist\/(src|bench|types\/bench)\//.test(String(f)) || (String(f).startsWith("dist/types/") && !String(f).endsWith(".d.ts")))).toEqual([]);
    expect(existsSync(path.join(PROJECT_ROOT, "dist", "cli", "index.js"))).toBe(true);
    expect(readdirSync(path.join(PROJECT_ROOT, "dist", "cli")).some((f) => f.startsWith("chunk-"))).toBe(true);
  });
});
