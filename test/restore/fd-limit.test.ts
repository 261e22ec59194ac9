// Restore (and the snapshot and listing around it) under a real `ulimit -n`: a restore of many
// more files than the process may open at once restores every one of them, byte-identical, with
// exit 0. Too many open files must never become "not restored": the restore keeps its descriptors
// within a budget taken from the process's real limit. The built CLI runs in a child shell after
// `ulimit -n N` (which sets the soft and the hard limit, so Node cannot raise it). Worker threads
// that cannot start under the limit must not hang the restore either.

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, type CliResult, collect, initRepo, snapshot } from "../helpers/cli.js";
import { FIXTURES_DIR, makeSandbox, type Sandbox, treeState } from "../helpers/tmp.js";

/** `pi-guard <args>` with its open-file limit set to `limit` (soft and hard). */
function underLimit(sb: Sandbox, limit: number, args: string[], env: Record<string, string> = {}, timeoutMs = 600_000): Promise<CliResult> {
  const child = spawn("bash", ["-c", `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, BIN, ...args], { env: { ...sb.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return collect(child, timeoutMs);
}

/** The reason a run failed, short: its first lines of stderr (a failed restore names every file). */
const why = (r: CliResult) => `exit ${r.code}: ${r.stderr.split("\n").slice(0, 3).join("\n")}`;

const LIMIT = 64;
const FIXTURES = ["pi-v3/branched.jsonl", "pi-v3/forked.jsonl", "pi-v3/legacy-v1-with-garbage-line.jsonl"].map((f) => readFileSync(path.join(FIXTURES_DIR, f), "utf8"));

/**
 * `count` sessions in `projects` project folders: real pi files (the fixtures) under a header of
 * their own, so that every file is a blob of its own and hundreds of files share each pack read.
 */
function writeSessions(sessionsDir: string, count: number, projects: number): void {
  for (let i = 0; i < count; i++) {
    const project = i % projects;
    const id = `01990000-${project.toString(16).padStart(4, "0")}-7000-8000-${i.toString(16).padStart(12, "0")}`;
    const body = FIXTURES[i % FIXTURES.length];
    const header = JSON.parse(body.slice(0, body.indexOf("\n")));
    const dir = path.join(sessionsDir, `--home-user-project-${project}--`);
    if (i < projects) mkdirSync(dir, { recursive: true });
    const line = JSON.stringify({ ...header, id, cwd: `/home/user/project-${project}` });
    writeFileSync(path.join(dir, `2026-01-01T00-00-00-000Z_${id}.jsonl`), line + body.slice(body.indexOf("\n")));
  }
}

describe(`3,000 sessions under ulimit -n ${LIMIT}`, () => {
  let sb: Sandbox;
  let before: ReturnType<typeof treeState>;

  beforeAll(async () => {
    sb = makeSandbox("fdlimit");
    writeSessions(sb.sessionsDir, 3000, 30);
    before = treeState(sb.agentDir);
    await initRepo(sb);
  }, 600_000);

  afterAll(() => sb?.cleanup(), 600_000);

  it("snapshot and sessions list work under the limit", async () => {
    const snap = await underLimit(sb, LIMIT, ["snapshot", "--json"]);
    expect(snap.code, why(snap)).toBe(0);
    expect(snap.json().files).toBe(3000);
    const list = await underLimit(sb, LIMIT, ["sessions", "list", "--json"]);
    expect(list.code, why(list)).toBe(0);
    expect(list.json<unknown[]>()).toHaveLength(3000);
  }, 600_000);

  it("restore --target restores every file byte-identical, exit 0", async () => {
    // The snapshot itself is taken without a limit here: this test is about the restore alone.
    await snapshot(sb);
    const target = path.join(sb.root, "restored");
    const r = await underLimit(sb, LIMIT, ["restore", "latest", "--target", target, "--json"]);
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(treeState(target)).toEqual(before);
  }, 600_000);

  it("worker threads that cannot start (30 asked for: EMFILE loading their script) neither hang nor fail the restore", async () => {
    await snapshot(sb);
    const target = path.join(sb.root, "restored-workers");
    // Killed after 5 minutes: a job posted to a dead worker never settled, and the restore hung.
    const r = await underLimit(sb, LIMIT, ["restore", "latest", "--target", target, "--json"], { PI_GUARD_WORKERS: "30" }, 300_000);
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(treeState(target)).toEqual(before);
  }, 600_000);

  it("restore in place, after the sessions were deleted, restores every file byte-identical, exit 0", async () => {
    await snapshot(sb);
    rmSync(sb.sessionsDir, { recursive: true });
    const r = await underLimit(sb, LIMIT, ["restore", "latest", "--json"]);
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(r.json().create).toBe(3000);
    expect(treeState(sb.agentDir)).toEqual(before);
  }, 600_000);
});

describe(`scale: 10,000 small files under ulimit -n ${LIMIT}`, () => {
  let sb: Sandbox;

  beforeAll(async () => {
    sb = makeSandbox("fdscale");
    // Files of a few dozen bytes, each its own blob: one pack read holds thousands of them, all
    // waiting at once for a descriptor.
    for (let d = 0; d < 50; d++) {
      const dir = path.join(sb.agentDir, "pi-hermes-memory", `part-${d}`);
      mkdirSync(dir, { recursive: true });
      for (let i = 0; i < 200; i++) writeFileSync(path.join(dir, `note-${i}.md`), `# note ${d}/${i}\n${"memory ".repeat(i % 10)}\n`);
    }
    await initRepo(sb);
  }, 600_000);

  afterAll(() => sb?.cleanup(), 600_000);

  it("snapshot, then restore --target: every file restored byte-identical, exit 0", async () => {
    const snap = await underLimit(sb, LIMIT, ["snapshot", "--json"]);
    expect(snap.code, why(snap)).toBe(0);
    expect(snap.json().files).toBe(10_000);
    const target = path.join(sb.root, "restored");
    const r = await underLimit(sb, LIMIT, ["restore", "latest", "--target", target, "--json"]);
    expect(r.code, why(r)).toBe(0);
    expect(r.json().failed).toEqual([]);
    expect(r.json().create).toBe(10_000);
    expect(treeState(target)).toEqual(treeState(sb.agentDir));
  }, 600_000);
});
