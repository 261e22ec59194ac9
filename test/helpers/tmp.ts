// Temp sandboxes for tests: every path pi-guard or pi could touch (agent dir, repository, XDG
// config/data, HOME) points into one temp folder, never at the real ~/.pi or ~/.config.

import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, type Dirent, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * The real-pi fixtures (test/fixtures/README.md), inside the repository so that a fresh clone has
 * them. A fixture that is missing fails the test that reads it: nothing here skips.
 */
export const FIXTURES_DIR = path.resolve(import.meta.dirname, "../fixtures");
if (!existsSync(path.join(FIXTURES_DIR, "pi-v3", "branched.jsonl"))) {
  throw new Error(`the test fixtures are missing from ${FIXTURES_DIR}: restore test/fixtures/ from git`);
}

export interface Sandbox {
  root: string;
  home: string;
  /** $HOME/.pi/agent, also PI_CODING_AGENT_DIR. */
  agentDir: string;
  sessionsDir: string;
  /** PI_GUARD_REPO: outside the agent dir. */
  repo: string;
  configHome: string;
  dataHome: string;
  /** The environment for a pi-guard process: only these variables plus PATH. */
  env: Record<string, string>;
  /** A fresh folder inside the sandbox. */
  dir(name: string): string;
  cleanup(): void;
}

/** Temp folders made by `tempRoot` and `makeSandbox` in this test file, not yet removed. */
const roots = new Set<string>();

/**
 * A fresh temp folder `pi-guard-<label>-XXXXXX` that test/helpers/cleanup.ts removes after the test
 * file, so a run leaves no session data behind in the system's temp folder.
 */
export function tempRoot(label: string): string {
  const root = mkdtempSync(path.join(os.tmpdir(), `pi-guard-${label}-`));
  roots.add(root);
  return root;
}

/** Remove every folder `tempRoot` made (and every sandbox not cleaned up yet). */
export function removeTempRoots(): void {
  for (const root of roots) {
    // A folder still mounted (a test's tmpfs it failed to unmount) stays; that test has failed already.
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {}
  }
  roots.clear();
}

export function makeSandbox(label = "t"): Sandbox {
  const root = tempRoot(`test-${label}`);
  const home = path.join(root, "home");
  const agentDir = path.join(home, ".pi", "agent");
  const sessionsDir = path.join(agentDir, "sessions");
  const repo = path.join(root, "backups", "repo");
  const configHome = path.join(root, "xdg-config");
  const dataHome = path.join(root, "xdg-data");
  for (const d of [home, configHome, dataHome]) mkdirSync(d, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_GUARD_REPO: repo,
    XDG_CONFIG_HOME: configHome,
    XDG_DATA_HOME: dataHome,
    TMPDIR: os.tmpdir(),
    NO_COLOR: "1",
  };
  return {
    root,
    home,
    agentDir,
    sessionsDir,
    repo,
    configHome,
    dataHome,
    env,
    dir(name: string) {
      const d = path.join(root, name);
      mkdirSync(d, { recursive: true });
      return d;
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Write auth.json (0600), models.json and settings.json the way pi keeps them. */
export function writePiConfigFiles(agentDir: string): void {
  mkdirSync(agentDir, { recursive: true });
  const auth = path.join(agentDir, "auth.json");
  writeFileExact(auth, JSON.stringify({ anthropic: { type: "api_key", key: "sk-ant-api03-TEST-" + "x".repeat(40) } }, null, 2), 0o600);
  writeFileExact(path.join(agentDir, "models.json"), JSON.stringify({ providers: { ollama: { baseUrl: "http://localhost:11434/v1", models: [{ id: "qwen" }] } } }, null, 2), 0o644);
  writeFileExact(path.join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "anthropic", theme: "dark" }, null, 2), 0o644);
}

export function writeFileExact(file: string, data: string | Buffer, mode: number): void {
  mkdirSync(path.dirname(file), { recursive: true });
  rmSync(file, { force: true });
  // writeFileSync honours the umask; chmod afterwards so 0600 stays 0600 and 0644 stays 0644.
  writeFileSync(file, data, { mode });
  chmodSync(file, mode);
}


/** Copy the read-only shared fixtures into `<agentDir>/sessions/--some-cwd--/`, writable. */
export function copyFixtures(agentDir: string): string[] {
  const dest = path.join(agentDir, "sessions", "--some-cwd--");
  mkdirSync(dest, { recursive: true });
  const copied: string[] = [];
  for (const group of readdirSync(FIXTURES_DIR, { withFileTypes: true })) {
    if (!group.isDirectory()) continue;
    for (const name of readdirSync(path.join(FIXTURES_DIR, group.name))) {
      if (!name.endsWith(".jsonl")) continue;
      const to = path.join(dest, `${group.name}-${name}`);
      copyFileSync(path.join(FIXTURES_DIR, group.name, name), to);
      chmodSync(to, 0o644);
      copied.push(to);
    }
  }
  return copied;
}

export interface FileState {
  sha256: string;
  size: number;
  mode: number;
}

/** Absolute paths of every file under `dir` (none if it does not exist). */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const a = path.join(d, e.name);
      if (e.isDirectory()) walk(a);
      else out.push(a);
    }
  };
  walk(dir);
  return out;
}

/** Relative path -> hash, size and permission bits of every regular file under `dir`. */
export function treeState(dir: string): Map<string, FileState> {
  const out = new Map<string, FileState>();
  const walk = (abs: string, rel: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const a = path.join(abs, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(a, r);
      else if (e.isFile()) {
        const st = statSync(a);
        out.set(r, { sha256: sha256File(a), size: st.size, mode: st.mode & 0o7777 });
      }
    }
  };
  walk(dir, "");
  return out;
}

export function sha256File(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** Every path of `tree` as a sorted list (for readable assertion diffs). */
export function paths(tree: Map<string, unknown>): string[] {
  return [...tree.keys()].sort();
}

/** A plain object of path -> "sha256 mode" so `expect(...).toEqual` prints a useful diff. */
export function fingerprint(tree: Map<string, FileState>, only?: (rel: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rel, s] of tree) if (!only || only(rel)) out[rel] = `${s.sha256.slice(0, 16)} ${s.size} ${s.mode.toString(8)}`;
  return out;
}

/** Every session file (*.jsonl) below `dir`, absolute paths, sorted. */
export function sessionFiles(dir: string): string[] {
  return listFiles(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort();
}

/** Size on disk of a folder as `du -sb` counts it (apparent bytes of every file). */
export function apparentSize(dir: string): number {
  let total = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const a = path.join(d, e.name);
      if (e.isDirectory()) walk(a);
      else if (e.isFile()) total += statSync(a).size;
    }
  };
  walk(dir);
  return total;
}
