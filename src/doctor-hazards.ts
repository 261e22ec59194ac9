/**
 * The hazards behind the original incident, for `pi-guard doctor`: an npm project or prefix in or
 * beside the agent dir (`npm install --prefix ~/.pi/agent/npm` reified it and deleted sessions/),
 * a repository or key file inside it, a sessions dir that is a symlink, no watcher and no recent
 * snapshot, and session files that pi would damage further (a torn last line its next append
 * glues onto, glued entries it drops on load, a missing header it replaces with an empty session).
 * Everything here only reads; session files are read with our own tolerant parser.
 */
import { promises as fs, type Dirent } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Config } from "./config/config.js";
import { isInside } from "./config/config.js";
import type { DoctorCheck } from "./doctor.js";
import { streamSessionItems } from "./agents/pi/parse.js";
import { PI_AGENT_FILES } from "./agents/pi/paths.js";
import { holdsSecrets } from "./export/secrets.js";
import type { ParseIssueKind } from "./agents/pi/lines.js";
import { watcherStatus } from "./watch/status.js";

type Env = Record<string, string | undefined>;
const HOUR = 60 * 60 * 1000;
/** Bounds a scan of a folder tree, so doctor stays quick on a huge agent dir. */
const SCAN_LIMIT = 20_000;

const exists = (p: string) => fs.lstat(p).then(() => true, () => false);
const shellWord = (s: string) => (/^[A-Za-z0-9_@%+=:,./~-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const shown = (paths: string[]) => `${paths.slice(0, 3).join(", ")}${paths.length > 3 ? ` and ${paths.length - 3} more` : ""}`;

/** What the hazard checks read of a Config: an agent location is enough (src/agents/pi builds one). */
export type HazardConfig = Pick<Config, "agentDir" | "roots" | "repo" | "keyFile">;

export async function findHazards(config: HazardConfig, env: Env = process.env): Promise<DoctorCheck[]> {
  return [
    ...(await npmProjects(config)),
    ...(await npmPrefix(config, env)),
    ...(await strayRepoAndKeys(config)),
    ...(await sessionsSymlink(config)),
    ...(await damagedSessionFiles(config)),
  ];
}

/** A package.json or node_modules in the agent dir, in a folder directly inside it, or in the folder that holds it. */
async function npmProjects(config: HazardConfig): Promise<DoctorCheck[]> {
  const dirs = [config.agentDir, path.dirname(config.agentDir)];
  const children = await fs.readdir(config.agentDir, { withFileTypes: true }).catch(() => [] as Dirent[]);
  for (const c of children) if (c.isDirectory() && c.name !== "sessions") dirs.push(path.join(config.agentDir, c.name));
  const found: string[] = [];
  for (const dir of dirs) for (const name of ["package.json", "node_modules"]) if (await exists(path.join(dir, name))) found.push(path.join(dir, name));
  if (!found.length) return [{ name: "npm project", status: "ok", message: "no package.json or node_modules in or beside the agent dir" }];
  return [
    {
      name: "npm project",
      status: "warn",
      message: `${shown(found)}: npm treats that folder as a project, and an install there (or below it) reifies it, deleting what its manifest lacks, sessions included`,
      fix: `move ${shellWord(found[0])} out of ${shellWord(path.dirname(found[0]))}, and run npm installs with a --prefix outside ~/.pi`,
      paths: found,
    },
  ];
}

function expandHome(p: string, home: string): string {
  return p.replace(/^~(?=$|\/)/, home).replace(/\$\{?HOME\}?/g, home);
}

/** npm's global prefix (npm_config_prefix, or prefix= in ~/.npmrc) pointing into or beside the agent dir. */
async function npmPrefix(config: HazardConfig, env: Env): Promise<DoctorCheck[]> {
  const home = env.HOME || os.homedir();
  const sources: { prefix: string; from: string }[] = [];
  for (const key of ["npm_config_prefix", "NPM_CONFIG_PREFIX"]) if (env[key]) sources.push({ prefix: env[key]!, from: key });
  const npmrc = path.join(home, ".npmrc");
  const text = await fs.readFile(npmrc, "utf8").catch(() => "");
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*prefix\s*=\s*(.+?)\s*$/.exec(line);
    if (m) sources.push({ prefix: m[1].replace(/^["']|["']$/g, ""), from: npmrc });
  }
  const piHome = path.dirname(config.agentDir);
  const risky = sources.filter(({ prefix }) => {
    const abs = path.resolve(home, expandHome(prefix, home));
    return isInside(abs, config.agentDir) || abs === piHome || (path.basename(piHome) === ".pi" && isInside(abs, piHome));
  });
  if (!risky.length) return [{ name: "npm prefix", status: "ok", message: sources.length ? `npm prefix ${sources[0].prefix} is away from the agent dir` : "no npm prefix set near the agent dir" }];
  const r = risky[0];
  return [
    {
      name: "npm prefix",
      status: "warn",
      message: `npm's prefix ${r.prefix} (from ${r.from}) is in or beside the agent dir: a global npm install there reifies that folder`,
      fix: r.from === npmrc ? `remove the prefix= line from ${npmrc} (or point it at ~/.npm-global)` : `unset ${r.from} (or point it at ~/.npm-global)`,
    },
  ];
}

/** Walk `root` (no symlinks followed), at most `depth` levels, skipping `skip` folders. */
async function walk(root: string, depth: number, skip: (dir: string) => boolean, visit: (file: string, entry: Dirent) => Promise<void> | void): Promise<void> {
  let seen = 0;
  const go = async (dir: string, level: number): Promise<void> => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    for (const e of entries) {
      if (++seen > SCAN_LIMIT) return;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (level < depth && !skip(p)) await go(p, level + 1);
      } else if (e.isFile()) await visit(p, e);
    }
  };
  await go(root, 0);
}

/** A pi-guard repository (config + keys/ + snapshots/) or key file anywhere in the agent dir, configured or not. */
async function strayRepoAndKeys(config: HazardConfig): Promise<DoctorCheck[]> {
  const repos: string[] = [];
  const keys: string[] = [];
  const sessions = path.join(config.agentDir, "sessions");
  await walk(config.agentDir, 4, (d) => d === sessions || path.basename(d) === "node_modules", async (file) => {
    const dir = path.dirname(file);
    if (path.basename(file) === "config" && (await exists(path.join(dir, "keys"))) && (await exists(path.join(dir, "snapshots")))) repos.push(dir);
    if (path.basename(file) === "key" || file.endsWith(".key")) {
      const st = await fs.stat(file).catch(() => undefined);
      if (st && st.size <= 64) {
        const text = (await fs.readFile(file, "utf8").catch(() => "")).trim();
        if (/^[A-Za-z0-9+/]{43}=$/.test(text) && Buffer.from(text, "base64").length === 32) keys.push(file);
      }
    }
  });
  const out: DoctorCheck[] = [];
  // The configured repository and key file have their own checks above; these are the others.
  const otherRepos = repos.filter((r) => path.resolve(r) !== path.resolve(config.repo));
  const otherKeys = keys.filter((k) => path.resolve(k) !== path.resolve(config.keyFile));
  if (otherRepos.length) {
    out.push({
      name: "repository in agent dir",
      status: "warn",
      message: `a pi-guard repository at ${shown(otherRepos)} is inside the agent dir: the accident that deletes sessions deletes it too`,
      fix: `move it out (e.g. mv ${otherRepos[0]} ~/.local/share/pi-guard/) and point PI_GUARD_REPO there`,
      paths: otherRepos,
    });
  }
  if (otherKeys.length) {
    out.push({
      name: "key in agent dir",
      status: "warn",
      message: `a pi-guard key file at ${shown(otherKeys)} is inside the agent dir: lose the dir and the backups cannot be opened`,
      fix: `move it out (e.g. to ~/.config/pi-guard/key, mode 0600) and keep a copy off this machine`,
      paths: otherKeys,
    });
  }
  return out;
}

function sessionRoots(config: HazardConfig): string[] {
  const moved = config.roots.find((r) => r.name === "sessions");
  return [moved ? moved.path : path.join(config.agentDir, "sessions")];
}

async function sessionsSymlink(config: HazardConfig): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  for (const dir of sessionRoots(config)) {
    const st = await fs.lstat(dir).catch(() => undefined);
    if (!st?.isSymbolicLink()) continue;
    const target = await fs.readlink(dir).catch(() => "?");
    out.push({
      name: "sessions symlink",
      status: "warn",
      message: `${dir} is a symlink to ${target}: snapshots follow it (root "sessions"), but if the link goes, pi starts an empty sessions dir and the folder behind it is no longer backed up`,
      fix: `set "sessionDir": "${path.resolve(path.dirname(dir), target)}" in settings.json (pi and pi-guard then use the real folder), and remove the link`,
    });
  }
  return out;
}

type Damage = "torn" | "glued" | "header";
const DAMAGE_OF: Partial<Record<ParseIssueKind, Damage>> = {
  "torn-last-line": "torn",
  "missing-final-newline": "torn",
  "glued-entries": "glued",
  "missing-header": "header",
  "invalid-header": "header",
};

const DAMAGE_TEXT: Record<Damage, { name: string; what: string; why: string }> = {
  torn: { name: "torn last line", what: "a torn last line (no final newline, or cut short)", why: "pi's next append glues onto it and that entry is lost on reload" },
  glued: { name: "glued entries", what: 'entries glued on one line (`}{"type":`)', why: "pi drops such a line when it loads the session" },
  header: { name: "missing header", what: "no valid session header on the first line", why: "pi replaces such a file with an empty session when it opens it" },
};

/** Session files pi would damage further, found with the read-only tolerant parser. */
async function damagedSessionFiles(config: HazardConfig): Promise<DoctorCheck[]> {
  const found: Record<Damage, string[]> = { torn: [], glued: [], header: [] };
  let files = 0;
  for (const root of sessionRoots(config)) {
    await walk(root, 3, () => false, async (file) => {
      if (!file.endsWith(".jsonl")) return;
      files++;
      const kinds = new Set<Damage>();
      try {
        for await (const item of streamSessionItems(file)) {
          const d = item.kind === "issue" ? DAMAGE_OF[item.issue.kind] : undefined;
          if (d) kinds.add(d);
        }
      } catch {
        return; // Vanished or unreadable while we looked: not a format problem.
      }
      for (const d of kinds) found[d].push(file);
    });
  }
  const out: DoctorCheck[] = [];
  for (const d of ["torn", "glued", "header"] as const) {
    const paths = found[d];
    const t = DAMAGE_TEXT[d];
    if (!paths.length) continue;
    out.push({
      name: t.name,
      status: "warn",
      message: `${paths.length} session file${paths.length === 1 ? " has" : "s have"} ${t.what}: ${shown(paths)}; ${t.why}`,
      fix: `pi-guard repair ${shellWord(paths[0])} --in-place (with that session closed in pi), and the same for each file listed`,
      paths,
    });
  }
  if (!out.length) out.push({ name: "session files", status: "ok", message: `${files} session file${files === 1 ? "" : "s"}: no torn, glued or headerless ones` });
  return out;
}

/** Protection now: a running watcher, or at least a snapshot within the hour. */
export async function protectionCheck(config: Config, lastSnapshotMs: number | undefined, now: number): Promise<DoctorCheck> {
  const w = await watcherStatus(config, new Date(now));
  if (w.suspectLoss) {
    return { name: "watcher", status: "warn", message: `the watcher reports a suspected loss since ${w.suspectLoss.since} (${w.suspectLoss.filesNow} of ${w.suspectLoss.filesBefore} files left)`, fix: "pi-guard restore latest (it skips the suspect-loss snapshot)" };
  }
  if (w.state === "running") return { name: "watcher", status: "ok", message: w.message };
  const recent = lastSnapshotMs !== undefined && now - lastSnapshotMs <= HOUR;
  const why = w.state === "none" ? "no watcher has run for this agent dir" : w.message;
  if (recent) return { name: "watcher", status: "ok", message: `${why}; the last snapshot is less than an hour old` };
  return {
    name: "watcher",
    status: "warn",
    message: `${why}, and no snapshot in the last hour: changes since ${lastSnapshotMs !== undefined ? new Date(lastSnapshotMs).toISOString() : "ever"} are not backed up`,
    fix: "pi-guard service install --enable (a service that keeps the watcher running)",
  };
}

/** Larger than any real config file: a bigger one is not parsed to judge it. */
const MAX_CONFIG_BYTES = 16 << 20;

/**
 * The files pi keeps in the agent dir (PI_AGENT_FILES: auth.json and the files pi 1.x added), one
 * check each that is present: what it is, whether the last snapshot holds it, and, for those that
 * hold credentials, whether others can read it. `backedUp` is the set of names the last snapshot
 * holds, `null` when there is no snapshot, undefined when it could not be told.
 */
export async function agentFileChecks(config: Config, backedUp: { snapshot: string; names: Set<string> } | null | undefined, env: Env = process.env): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const absent: string[] = [];
  for (const f of PI_AGENT_FILES) {
    const file = path.join(config.agentDir, f.name);
    const st = await fs.lstat(file).catch(() => undefined);
    if (!st?.isFile()) {
      if (!st) absent.push(f.name);
      else out.push({ name: f.name, status: "warn", message: `${file} (${f.what}) is not a regular file: pi cannot use it, and only what it is is backed up`, fix: `look at ${file} and put pi's file back (pi-guard restore latest --path ${f.name})` });
      continue;
    }
    const mode = st.mode & 0o777;
    let secret = f.secret === "always";
    if (f.secret === "if-it-holds-any" && st.size <= MAX_CONFIG_BYTES) {
      const text = await fs.readFile(file, "utf8").catch(() => "");
      secret = holdsSecrets(text, f.name, env);
    }
    const where = backedUp === undefined ? "not known whether backed up" : backedUp === null ? "not backed up yet (no snapshot)" : backedUp.names.has(f.name) ? `in snapshot ${backedUp.snapshot}` : `NOT in the last snapshot ${backedUp.snapshot}`;
    const facts = `${f.what}; ${secret ? "holds credentials, " : ""}mode ${mode.toString(8).padStart(3, "0")}; ${where}`;
    if (secret && (mode & 0o077) !== 0) {
      out.push({ name: f.name, status: "warn", message: `${file} (${facts}) is readable by others: its credentials are`, fix: `chmod 600 ${shellWord(file)}` });
    } else if (backedUp && !backedUp.names.has(f.name)) {
      out.push({ name: f.name, status: "warn", message: `${file} (${facts}): lost with the agent dir, it cannot be restored`, fix: "pi-guard snapshot now (and check that no exclude in pi-guard's config names it)" });
    } else out.push({ name: f.name, status: "ok", message: `${file} (${facts})` });
  }
  if (absent.length) out.push({ name: "agent files", status: "ok", message: `not present (pi writes them when needed): ${absent.join(", ")}` });
  return out;
}
