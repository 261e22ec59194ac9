// A plain `sessions search <query>` runs search-plain.js (src/cli/start.ts): one bundled file that
// does a warm search by itself and hands anything else, as its arguments only, to main.js.
// Through the real CLI: what a warm search loads and that a cold one is handed over, and that
// either way it prints what the command table prints (the table is reached by `-n20`, which the
// strict reading leaves to it): missing, stale and damaged catalogs and indexes, and errors.

import { cpSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT, type CliResult } from "../helpers/cli.js";
import { claudeConfigDir, runClaude, startClaudeModel } from "../helpers/agents/claude.js";
import { snapshot } from "../helpers/cli.js";
import { callTool, say } from "../helpers/fake-model/server.js";
import { run, runOk } from "./cli.js";
import { makeWorld, type World } from "./world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("search-plain");
  // Another agent's session: Claude Code is then detected, and the catalog's fingerprint reads its sessions' stat.
  const model = await startClaudeModel([callTool("Bash", { command: "echo heron-from-claude", description: "say heron" }), say("The echo printed heron-from-claude.")]);
  try {
    await runClaude(w.sb, model, "please echo a heron");
  } finally {
    await model.close();
  }
}, 180_000);
afterAll(() => w?.sb.cleanup());

/** What a search printed, without its timings. */
const printed = (r: CliResult) => ({
  code: r.code,
  stderr: r.stderr,
  stdout: r.stdout.replace(/"(queryMs|ms)": [\d.]+/g, '"$1": 0').replace(/ in [\d.]+ ms/g, " in 0 ms").replace(/\([\d.]+ ms\)/g, "(0 ms)"),
});
const TABLE = ["-n20"];
const TRACE = { PI_GUARD_TRACE_HANDOVER: "1" };
const forget = (what: "index" | "catalog") => rmSync(path.join(w.sb.dataHome, "pi-guard", what === "index" ? "search" : "catalog"), { recursive: true, force: true });
const dataDir = () => path.join(w.sb.dataHome, "pi-guard");
const indexFile = () => path.join(w.sb.dataHome, "pi-guard", "search", "index.sqlite");
let touches = 0;

/** Ways to leave the catalog or the index not current before a search. */
const COLD: Record<string, () => unknown> = {
  "no catalog, no index": () => (forget("catalog"), forget("index")),
  "no index": () => forget("index"),
  // A new mtime: the catalog's view and the index are behind the live file.
  "a live session changed": () => utimesSync(w.main.file, new Date(), new Date(Date.UTC(2030, 0, 1, 0, 0, ++touches))),
  // `sessions list` brings the catalog's view up to date, not the index.
  "the index behind a current catalog": async () => {
    COLD["a live session changed"]!();
    await runOk(w.sb, ["sessions", "list"]);
  },
  "a damaged index": () => {
    for (const f of [indexFile(), `${indexFile()}-wal`, `${indexFile()}-shm`]) rmSync(f, { force: true });
    writeFileSync(indexFile(), "this is not a database, it is sixty-four bytes or more of junk....");
  },
};

/** The files of dist/ a search with `args` loads, in order (test/helpers/loaded-files). */
async function loadedFiles(args: string[], env: Record<string, string> = {}): Promise<{ files: string[]; r: CliResult }> {
  const out = path.join(w.sb.root, "loaded-files");
  rmSync(out, { force: true });
  const hooks = path.join(PROJECT_ROOT, "test", "helpers", "loaded-files", "register.mjs");
  const r = await run(w.sb, args, { NODE_OPTIONS: `--import=${hooks}`, LOADED_FILES_OUT: out, ...env });
  const ours = readFileSync(out, "utf8").split("\n").filter((u) => u.startsWith(pathToFileURL(path.join(PROJECT_ROOT, "dist")).href));
  return { files: ours.map((u) => path.relative(path.join(PROJECT_ROOT, "dist", "cli"), fileURLToPath(u))), r };
}

/**
 * A plain search prints what the command table prints (`-n20` reaches it), cold in each way and
 * warm, from the same state each time; cold, it is handed over, and warm too when `warmHandedOver`.
 */
async function sameAsTable(flag: string, query: string, rest: string[], colds: Record<string, () => unknown> = COLD, warmHandedOver = false): Promise<void> {
  const args = [...(flag ? [flag] : []), "sessions", "search", query, ...rest];
  const before = path.join(w.sb.root, "data-before");
    for (const [how, makeCold] of [...Object.entries(colds), ["warm", () => undefined] as const]) {
      await makeCold();
      // Both runs start from the same catalog and index (each run changes them; BM25's statistics with them).
      rmSync(before, { recursive: true, force: true });
      cpSync(dataDir(), before, { recursive: true });
      const traced = await run(w.sb, args, TRACE);
      // Every cold search is handed over, before it printed anything: the trace is the first line.
      const handedOver = /^pi-guard: \[plain search handed over: [^\n]*\]\n/;
      expect(handedOver.test(traced.stderr), `${how}: ${traced.stderr}`).toBe(how !== "warm" || warmHandedOver);
      const plain = printed({ ...traced, stderr: traced.stderr.replace(handedOver, "") });
      rmSync(dataDir(), { recursive: true, force: true });
      cpSync(before, dataDir(), { recursive: true });
      const table = printed(await run(w.sb, [...(flag ? [flag] : []), "sessions", "search", ...TABLE, query, ...rest]));
      expect(plain.code, `${how}: ${plain.stderr}`).toBe(0);
      expect(plain, how).toEqual(table);
    }
}

describe("the plain sessions search", () => {
  it("warm, loads two files of pi-guard's code: start.js and search-plain.js (scripts/bundle.mjs)", async () => {
    await runOk(w.sb, ["sessions", "search", "zebrafish"]); // builds the catalog and the index
    const { files, r } = await loadedFiles(["--json", "sessions", "search", "zebrafish"], TRACE);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.json<{ index: { indexed: number }; results: unknown[] }>().index.indexed).toBe(0);
    expect(r.json<{ results: unknown[] }>().results.length).toBeGreaterThan(0);
    expect(files).toEqual(["start.js", "search-plain.js"]);
  });

  it("cold, hands the command to main.js, which runs it from the start", async () => {
    forget("index");
    const { files, r } = await loadedFiles(["--json", "sessions", "search", "zebrafish"], TRACE);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("pi-guard: [plain search handed over: there is no search index yet]\n");
    expect(files.slice(0, 3)).toEqual(["start.js", "search-plain.js", "main.js"]);
    expect(r.json<{ index: { indexed: number } }>().index.indexed).toBeGreaterThan(0);
  });

  it("search-plain.js imports no file of dist/cli but main.js (the bundle checks it too)", () => {
    const text = readFileSync(path.join(PROJECT_ROOT, "dist", "cli", "search-plain.js"), "utf8");
    const specifiers = [...text.matchAll(/(?:\bimport\s*\(\s*|\bfrom\s*|\bimport\s+)"([^"]+)"/g)].map((m) => m[1]!);
    expect(specifiers.length).toBeGreaterThan(0);
    expect([...new Set(specifiers.filter((s) => s.startsWith(".") || s.includes("dist/")))]).toEqual(["./main.js"]);
  });

  it.each([
    ["--json", "zebrafish"],
    ["", "zebrafish"],
    ["--json", "pelican*"],
    ["--json", '"user-message-selector"'],
    ["", "nothing-matches-this"],
    ["-q", "zebrafish"],
    ["--json", "heron"],
    ["--json", "zebrafish", "--since", "2020-01-01", "--agent", "pi"],
    ["", "heron", "--until", "2999-01-01", "--live"],
  ])("%s %s: prints what the command table prints, cold in each way and warm", (flag, query, ...rest) => sameAsTable(flag, query, rest));

  it.each([
    [["  ** "], 2],
    [["x", "--limit", "0"], 2],
    [["x", "--since", "soonish"], 2],
    [["x", "--agent", "nosuchagent"], 2],
    [["x", "--lock-wait", "soon"], 2],
    [["x", "--repo", "sftp:host/x"], 2],
    [["x", "--repo", "restic:/nonexistent/restic-repo"], 2],
    [["x", "--config", "BAD_CONFIG"], 2],
    [["x", "--repo", "/nonexistent/pi-guard-repo"], 0],
  ])("%j: the same exit code and one line on stderr either way", async (given, code) => {
    const bad = path.join(w.sb.root, "bad-config.json");
    writeFileSync(bad, "{ not json");
    const rest = given.map((a) => (a === "BAD_CONFIG" ? bad : a));
    const plain = printed(await run(w.sb, ["sessions", "search", ...rest], { PI_GUARD_RESTIC: "/nonexistent/restic" }));
    const table = printed(await run(w.sb, ["sessions", "search", ...TABLE, ...rest], { PI_GUARD_RESTIC: "/nonexistent/restic" }));
    expect(plain).toEqual(table);
    expect(plain.code, plain.stderr).toBe(code);
    if (code) expect(plain.stderr).toMatch(/^pi-guard: [^\n]+\n$/);
  });

  // Last: it changes the world. Another agent's session kept only in a snapshot has no text in
  // the index (only pi's snapshot sessions do): its hit's text is read from the snapshot, which
  // needs the repository unlocked. That read's failure is caught (the text is left out), so the
  // plain search must see that it tried, and hand over all the same.
  it("a hit in another agent's session found only in a snapshot is handed over even warm", async () => {
    await snapshot(w.sb);
    rmSync(claudeConfigDir(w.sb), { recursive: true, force: true });
    await sameAsTable("--json", "heron", [], { "Claude Code's sessions wiped": () => undefined }, true);
  });
});
