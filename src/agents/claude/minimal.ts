// A first Claude Code adapter, written by `iface` so that detection, `agents` and multi-agent
// snapshots have a second real agent: where the data is, its secrets, how its files are written,
// and a listing of transcripts. Its reader keeps every line as a `claude:<type>` custom entry (the
// model's rule for a record with no place yet); `cc`'s full adapter (src/agents/claude/index.ts)
// maps them into messages and replaces this one in the registry.

import { readSettings } from "../../pi/paths.js";
import type { SessionEntry } from "../../pi/types.js";
import type { AgentAdapter, FileRef, SecretFile, SessionMeta } from "../types.js";
import { sqliteUnits } from "../units.js";
import { CLAUDE_ROOT, isClaudeTranscript, locateClaude } from "./locate.js";
import path from "node:path";

const MAX_TRANSCRIPT_BYTES = 1 << 30;

const SECRETS: SecretFile[] = [
  { root: CLAUDE_ROOT, path: ".credentials.json", kind: "whole", what: "OAuth tokens of the Claude account" },
  { root: CLAUDE_ROOT, path: ".claude.json", kind: "keys", keys: [["primaryApiKey"], ["customApiKeyResponses"], ["oauthAccount", "accessToken"], ["**", "env"]], what: "API key and account state" },
  { root: CLAUDE_ROOT, path: "settings.json", kind: "keys", keys: [["env"], ["apiKeyHelper"]], what: "settings (env values may hold keys)" },
];

/** Days Claude Code keeps transcripts when cleanupPeriodDays is not set. */
const DEFAULT_CLEANUP_DAYS = 30;

export const claudeMinimalAdapter: AgentAdapter = {
  name: "claude",
  title: "Claude Code",
  locate: locateClaude,
  secretFiles: () => SECRETS,
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
        const id = path.posix.basename(f.path, ".jsonl");
        yield { agent: "claude", id, updated: new Date(f.mtimeMs).toISOString(), files: [{ root: f.root, path: f.path }], bytes: f.size } satisfies SessionMeta;
      }
    },
    async read(files, meta) {
      const text = (await files.read(meta.files[0], MAX_TRANSCRIPT_BYTES)).toString("utf8");
      const entries: SessionEntry[] = [];
      const warnings: string[] = [];
      let cwd = "";
      let started = "";
      let prev: string | null = null;
      text.split("\n").forEach((line, i) => {
        if (!line.trim()) return;
        let rec: Record<string, unknown>;
        try {
          rec = JSON.parse(line) as Record<string, unknown>;
        } catch {
          warnings.push(`line ${i + 1}: not JSON`);
          return;
        }
        if (!cwd && typeof rec.cwd === "string") cwd = rec.cwd;
        if (!started && typeof rec.timestamp === "string") started = rec.timestamp;
        const id = typeof rec.uuid === "string" ? rec.uuid : `line-${i + 1}`;
        const parentId = typeof rec.parentUuid === "string" ? rec.parentUuid : rec.parentUuid === null ? null : prev;
        entries.push({ type: "custom", id, parentId, timestamp: typeof rec.timestamp === "string" ? rec.timestamp : started, customType: `claude:${String(rec.type)}`, data: rec });
        prev = id;
      });
      return { meta: { ...meta, ...(cwd ? { cwd } : {}) }, header: { type: "session", version: 3, id: meta.id, timestamp: started, cwd }, entries, leafId: prev, warnings };
    },
    isSessionFile: (ref: FileRef) => ref.root === CLAUDE_ROOT && isClaudeTranscript(ref.path),
  },
  async hazards(loc) {
    const read = readSettings(path.join(loc.dir, "settings.json"));
    const days = read.settings?.cleanupPeriodDays;
    const name = "claude: cleanupPeriodDays";
    if (typeof days === "number" && days >= 3650) return [{ name, status: "ok", message: `cleanupPeriodDays is ${days}: Claude Code keeps transcripts for ${days} days` }];
    const now = typeof days === "number" ? `cleanupPeriodDays is ${days}` : `cleanupPeriodDays is not set (default ${DEFAULT_CLEANUP_DAYS})`;
    return [
      {
        name,
        status: "warn",
        message: `${now}: Claude Code unlinks transcripts older than that, shortly after an interactive session starts${days === 0 ? " (0 has meant: write no transcripts at all)" : ""}`,
        fix: `set "cleanupPeriodDays": 36500 in ${read.path} (never 0); pi-guard keeps what the sweep already took`,
      },
    ];
  },
  restoreUnits: (selected, available) => sqliteUnits(selected, available, () => false),
  checkRestored: async () => [],
};
