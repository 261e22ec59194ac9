// Claude Code behind the AgentAdapter interface (DESIGN.md "Other agents"): ~/.claude or
// $CLAUDE_CONFIG_DIR, transcripts as append-only JSONL read into the common model (read.ts), its
// credentials, and the setting that deletes its history: cleanupPeriodDays, whose sweep unlinks
// transcripts older than N days and leaves only .last-cleanup behind.

import { statSync } from "node:fs";
import path from "node:path";
import type { DoctorCheck } from "../../doctor.js";
import { readSettings } from "../pi/paths.js";
import { readHead } from "../jsonl.js";
import type { AgeCleanup, AgentAdapter, FileRef, RestoreCheck, RestoreUnit, SecretFile, SessionMeta } from "../types.js";
import { CLAUDE_ROOT, isClaudeTranscript, locateClaude } from "./locate.js";
import { claudeMetaFromHead, readClaudeTranscript } from "./read.js";

/** A listing reads this much of each transcript: enough for its cwd, start and first prompt. */
const HEAD_BYTES = 256 * 1024;
/** A whole transcript is read into memory to map it; 1 GiB transcripts do not occur. */
const MAX_TRANSCRIPT_BYTES = 1 << 30;
/** Days Claude Code keeps transcripts when cleanupPeriodDays is not set. */
export const DEFAULT_CLEANUP_DAYS = 30;
/** A value this large keeps transcripts for good; what doctor's fix sets. */
const KEEP_DAYS = 36500;

const SECRETS: SecretFile[] = [
  { root: CLAUDE_ROOT, path: ".credentials.json", kind: "whole", what: "OAuth tokens of the Claude account" },
  {
    root: CLAUDE_ROOT,
    path: ".claude.json",
    kind: "keys",
    keys: [["primaryApiKey"], ["customApiKeyResponses"], ["oauthAccount", "accessToken"], ["**", "env"], ["mcpServers", "**", "headers"]],
    what: "API key and account state",
  },
  { root: CLAUDE_ROOT, path: "settings.json", kind: "keys", keys: [["env"], ["apiKeyHelper"]], what: "settings (env values may hold keys)" },
  { root: CLAUDE_ROOT, path: "settings.local.json", kind: "keys", keys: [["env"], ["apiKeyHelper"]], what: "local settings (env values may hold keys)" },
];

const sessionIdOf = (p: string) => path.posix.basename(p, ".jsonl");
/** A session's own folder beside its transcript: <uuid>/subagents/, <uuid>/tool-results/. */
const companionsPrefix = (transcript: string) => `${transcript.slice(0, -".jsonl".length)}/`;

function cleanupHazard(dir: string): DoctorCheck[] {
  const read = readSettings(path.join(dir, "settings.json"));
  const name = "claude: cleanupPeriodDays";
  if (read.error) return [{ name, status: "warn", message: `${read.path}: ${read.error}; Claude Code may fall back to deleting transcripts after ${DEFAULT_CLEANUP_DAYS} days`, fix: `repair ${read.path}` }];
  const days = read.settings?.cleanupPeriodDays;
  const checks: DoctorCheck[] = [];
  const swept = statSync(path.join(dir, ".last-cleanup"), { throwIfNoEntry: false });
  const lastSweep = swept ? `; its last sweep ran ${swept.mtime.toISOString()} (.last-cleanup)` : "";
  if (typeof days === "number" && days >= 3650) checks.push({ name, status: "ok", message: `cleanupPeriodDays is ${days}: Claude Code keeps transcripts for ${days} days${lastSweep}` });
  else {
    const now = typeof days === "number" ? `cleanupPeriodDays is ${days}` : `cleanupPeriodDays is not set (default ${DEFAULT_CLEANUP_DAYS})`;
    checks.push({
      name,
      status: "warn",
      message: `${now}: Claude Code unlinks transcripts older than that in a background sweep (about 10 minutes after the first prompt of an interactive session, 5 s into a claude -p run that lasts longer)${days === 0 ? "; 0 has meant: write no transcripts at all" : ""}${lastSweep}`,
      fix: `set "cleanupPeriodDays": ${KEEP_DAYS} in ${read.path} (never 0); pi-guard keeps what a sweep already took restorable`,
    });
  }
  return checks;
}

/** The sweep's age from settings.json: cleanupPeriodDays when it is a positive number, else the default. */
export function claudeCleanup(dir: string): AgeCleanup {
  const read = readSettings(path.join(dir, "settings.json"));
  const days = read.settings?.cleanupPeriodDays;
  if (typeof days === "number" && Number.isFinite(days) && days > 0) return { days, setting: `cleanupPeriodDays ${days} (${read.path})` };
  return { days: DEFAULT_CLEANUP_DAYS, setting: `cleanupPeriodDays ${DEFAULT_CLEANUP_DAYS} (${typeof days === "number" ? `${days} in ${read.path}: read as the default` : "not set: the default"})` };
}

export const claudeAdapter: AgentAdapter = {
  name: "claude",
  title: "Claude Code",
  locate: locateClaude,
  secretFiles: () => SECRETS,
  // Imported when needed: export/secrets.js reaches config.ts, which loads the registry (an import cycle).
  secretValues: async (files) => (await import("../secrets.js")).secretValuesOf(files, SECRETS),
  copyRules: () => [
    { root: CLAUDE_ROOT, glob: "projects/**/*.jsonl", kind: "append-jsonl" },
    { root: CLAUDE_ROOT, glob: "history.jsonl", kind: "append-jsonl" },
    { root: CLAUDE_ROOT, glob: "**/*.json", kind: "rewrite-json" },
  ],
  sessions: {
    async *list(files) {
      if (!files.roots.includes(CLAUDE_ROOT)) return;
      for await (const f of files.list(CLAUDE_ROOT, "projects")) {
        if (!isClaudeTranscript(f.path)) continue;
        const head = await readHead(files, f, HEAD_BYTES);
        const base: SessionMeta = { agent: "claude", id: sessionIdOf(f.path), updated: new Date(f.mtimeMs).toISOString(), files: [{ root: f.root, path: f.path }], bytes: f.size };
        yield claudeMetaFromHead(head.toString("utf8"), f.size > head.length, base);
      }
    },
    async read(files, meta) {
      const text = (await files.read(meta.files[0], MAX_TRANSCRIPT_BYTES)).toString("utf8");
      return readClaudeTranscript(text, meta);
    },
    isSessionFile: (ref: FileRef) => ref.root === CLAUDE_ROOT && isClaudeTranscript(ref.path),
  },
  hazards: async (loc) => cleanupHazard(loc.dir),
  ageCleanup: (loc) => claudeCleanup(loc.dir),
  // A transcript comes back with its own folder (subagents' transcripts, large tool results it points to).
  restoreUnits(selected, available) {
    const units: RestoreUnit[] = [];
    const placed = new Set<string>();
    const key = (r: FileRef) => `${r.root}\0${r.path}`;
    for (const ref of selected) {
      if (placed.has(key(ref))) continue;
      if (ref.root === CLAUDE_ROOT && isClaudeTranscript(ref.path)) {
        const prefix = companionsPrefix(ref.path);
        const files = [ref, ...available.filter((a) => a.root === ref.root && a.path.startsWith(prefix))];
        for (const f of files) placed.add(key(f));
        units.push({ files, why: files.length > 1 ? `${ref.path} with its ${prefix} folder` : ref.path });
      } else {
        placed.add(key(ref));
        units.push({ files: [ref], why: ref.path });
      }
    }
    return units;
  },
  // Claude Code lists a session from its transcript alone: it must sit where its name says, and parse.
  async checkRestored(files, units) {
    const checks: RestoreCheck[] = [];
    for (const unit of units) {
      const t = unit.files[0];
      if (t.root !== CLAUDE_ROOT || !isClaudeTranscript(t.path)) continue;
      const id = sessionIdOf(t.path);
      const session = readClaudeTranscript((await files.read(t, MAX_TRANSCRIPT_BYTES)).toString("utf8"), { agent: "claude", id, files: [t], bytes: 0 });
      const bad = session.warnings.filter((w) => !w.includes("incomplete last line"));
      const ok = session.entries.length > 0 && session.header.id === id && bad.length === 0;
      checks.push({
        name: `claude: ${t.path}`,
        ok,
        message: ok ? `session ${id}: ${session.entries.length} entries, readable by claude --resume` : `session ${id}: ${session.entries.length === 0 ? "no entries" : session.header.id !== id ? `its lines name session ${session.header.id}` : bad[0]}`,
      });
    }
    return checks;
  },
};
