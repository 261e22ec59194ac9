// Run the built CLI (`node bin/pi-guard.js`) as a real child process, with an environment that
// points only into a test sandbox.
//
// The CLI runs from dist/, so it must be built: `npm test` runs `npm run build` first. When you run
// vitest directly, build first (`npm run build && npx vitest run test/cli`); a stale dist/ fails
// loudly here instead of silently testing old code. Set PI_GUARD_TEST_ALLOW_STALE_DIST=1 to skip
// the check (for example while someone else is editing src/ and you test an older build on purpose).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { PROJECT_ROOT } from "./root.js";
import type { Sandbox } from "./tmp.js";

export { PROJECT_ROOT };
export const BIN = path.join(PROJECT_ROOT, "bin", "pi-guard.js");

/**
 * Sources the CLI can load (relative static and dynamic imports followed from src/cli/start.ts)
 * that are newer than their compiled output, or have none. Empty when dist/ is fresh. Files the
 * CLI never loads do not count, so work in progress elsewhere in src/ does not block these tests.
 */
export function staleOutputs(entry = "src/cli/start.ts"): string[] {
  const stale: string[] = [];
  const seen = new Set<string>();
  // bin/ runs the bundle in dist/cli, made from dist/src after tsc: it must be newer than both.
  const bundle = path.join(PROJECT_ROOT, "dist", "cli", "start.js");
  const bundleMs = existsSync(bundle) ? statSync(bundle).mtimeMs : 0;
  const visit = (rel: string) => {
    if (seen.has(rel)) return;
    seen.add(rel);
    const abs = path.join(PROJECT_ROOT, rel);
    if (!existsSync(abs)) return;
    const out = path.join(PROJECT_ROOT, "dist", rel.replace(/\.ts$/, ".js"));
    if (!existsSync(out) || statSync(out).mtimeMs + 1 < statSync(abs).mtimeMs || bundleMs + 1 < statSync(out).mtimeMs) stale.push(rel);
    const text = readFileSync(abs, "utf8");
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*)["'](\.{1,2}\/[^"']+)\.js["']/g)) {
      visit(path.join(path.dirname(rel), `${m[1]}.ts`));
    }
  };
  visit(entry);
  return stale;
}

let checked = false;
function assertBuilt(): void {
  if (checked || process.env.PI_GUARD_TEST_ALLOW_STALE_DIST === "1") return;
  const stale = staleOutputs();
  if (stale.length) {
    throw new Error(`dist/ is missing or older than ${stale.slice(0, 3).join(", ")}${stale.length > 3 ? ` and ${stale.length - 3} more` : ""}: run \`npm run build\` first (\`npm test\` does)`);
  }
  checked = true;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (fails the test with the output when it is not JSON). */
  json<T = any>(): T;
}

export interface CliOptions {
  /** Extra or overriding environment variables; `undefined` removes one. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Kill the process after this long (default 120 s). */
  timeoutMs?: number;
}

function environment(sb: Sandbox | Record<string, string>, extra?: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = "env" in sb && typeof sb.env === "object" ? (sb as Sandbox).env : (sb as Record<string, string>);
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [k, v] of Object.entries(extra ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** Start `pi-guard <args>` without waiting (stdin is not a TTY: it is closed). */
export function spawnCli(sb: Sandbox | Record<string, string>, args: string[], opts: CliOptions = {}): ChildProcess {
  assertBuilt();
  return spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd ?? PROJECT_ROOT,
    env: environment(sb, opts.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Collect a spawned CLI's output and exit status. */
export function collect(child: ChildProcess, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout,
        stderr,
        json() {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`expected JSON on stdout, got:\n${stdout}\nstderr:\n${stderr}`);
          }
        },
      });
    });
  });
}

/** Run `pi-guard <args>` to completion. */
export function cli(sb: Sandbox | Record<string, string>, args: string[], opts: CliOptions = {}): Promise<CliResult> {
  return collect(spawnCli(sb, args, opts), opts.timeoutMs);
}

/** Run and require exit 0; returns the result (stdout parsed with `.json()` if wanted). */
export async function ok(sb: Sandbox | Record<string, string>, args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const r = await cli(sb, args, opts);
  if (r.code !== 0) throw new Error(`pi-guard ${args.join(" ")} exited ${r.code ?? r.signal}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r;
}

/**
 * A user mistake: non-zero exit (the given code if any), exactly one line on stderr, no stack
 * trace. Returns that line for further checks.
 */
export function expectOneLineError(r: CliResult, code?: number): string {
  const lines = r.stderr.split("\n").filter((l) => l.trim() !== "");
  const where = `stderr was:\n${r.stderr}\nstdout was:\n${r.stdout}`;
  expect(r.code, where).not.toBe(0);
  expect(r.code, where).not.toBeNull();
  if (code !== undefined) expect(r.code, where).toBe(code);
  expect(r.stderr, where).not.toMatch(/^\s+at /m);
  expect(r.stderr, where).not.toMatch(/internal error/i);
  expect(lines, where).toHaveLength(1);
  return lines[0];
}

/** `pi-guard init` in the sandbox with a key file (no password, no TTY). */
export async function initRepo(sb: Sandbox, extraArgs: string[] = []): Promise<void> {
  await ok(sb, ["init", ...extraArgs]);
}

export interface SnapshotJson {
  snapshotId: string;
  time: string;
  parent: string | null;
  files: number;
  dirs: number;
  bytesTotal: number;
  filesNew: number;
  filesChanged: number;
  filesUnchanged: number;
  bytesNew: number;
  bytesStored: number;
  durationMs: number;
}

export async function snapshot(sb: Sandbox, extraArgs: string[] = [], opts: CliOptions = {}): Promise<SnapshotJson> {
  return (await ok(sb, ["snapshot", "--json", ...extraArgs], opts)).json<SnapshotJson>();
}

export interface RestoreJson {
  snapshotId: string;
  snapshotTime: string;
  dryRun: boolean;
  undoSnapshot: string | null;
  create: number;
  replace: number;
  unchanged: number;
  delete: number;
  bytesWritten: number;
  failed: { path: string; error: string }[];
  files: { root: string; path: string; action: string; size: number }[];
}

export async function restoreJson(sb: Sandbox, args: string[], opts: CliOptions = {}): Promise<RestoreJson> {
  return (await ok(sb, ["restore", "--json", ...args], opts)).json<RestoreJson>();
}

/**
 * `args` (which must pass `--lock-wait`) started while `held` blocks it: it waits, and once the
 * lock is released it goes ahead and exits 0.
 */
export async function expectWaitsForLock(sb: Sandbox | Record<string, string>, args: string[], held: { release(): Promise<void> }): Promise<CliResult> {
  const waiting = collect(spawnCli(sb, args));
  await new Promise((r) => setTimeout(r, 1_500));
  await held.release();
  const r = await waiting;
  expect(r.code, r.stderr).toBe(0);
  return r;
}
