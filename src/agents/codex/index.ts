// Codex CLI behind the AgentAdapter interface (DESIGN.md "Other agents"): $CODEX_HOME or ~/.codex,
// rollouts as append-only JSONL read into the common model (read.ts), SQLite state in WAL mode,
// auth.json. Codex lists sessions from state_5.sqlite's `threads` table (absolute rollout_path),
// so a rollout without its row stays invisible to `codex resume`'s picker: rollouts and
// state_5.sqlite (with -wal and -shm) are restored as one unit, and doctor compares the two.

import path from "node:path";
import { sqlite } from "../../sqlite.js";
import type { DoctorCheck } from "../../doctor.js";
import { liveFiles } from "../files.js";
import { readHead } from "../jsonl.js";
import type { AgentAdapter, AgentLocation, FileReader, FileRef, RestoreCheck, RestoreUnit, SecretFile, SessionMeta, SessionRows } from "../types.js";
import { sqliteUnits } from "../units.js";
import { codexMetaFromHead, readCodexRollout } from "./read.js";
import { CODEX_ROOT, ENV_CODEX_HOME, locateCodex } from "./locate.js";

export { CODEX_ROOT, ENV_CODEX_HOME };


/** The database whose `threads` table Codex lists sessions from. */
export const CODEX_STATE_DB = "state_5.sqlite";

const HEAD_BYTES = 256 * 1024;
const MAX_ROLLOUT_BYTES = 1 << 30;
/** A `threads` table is read whole; more rows than this is not a real Codex home. */
const MAX_THREAD_ROWS = 1_000_000;

const SECRETS: SecretFile[] = [{ root: CODEX_ROOT, path: "auth.json", kind: "whole", what: "OpenAI API key and ChatGPT tokens" }];

/** sessions/YYYY/MM/DD/rollout-….jsonl and archived_sessions/rollout-….jsonl. */
export function isRollout(p: string): boolean {
  return /^(sessions\/\d{4}\/\d{2}\/\d{2}|archived_sessions)\/rollout-[^/]+\.jsonl$/.test(p);
}
/** The session uuid at the end of a rollout's name: rollout-<time>-<uuid>.jsonl. */
export function rolloutId(p: string): string | undefined {
  return /-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/i.exec(p)?.[1];
}
const isDb = (ref: FileRef) => ref.root === CODEX_ROOT && /^[^/]+\.sqlite$/.test(ref.path);
const isStateFile = (ref: FileRef) => ref.root === CODEX_ROOT && (ref.path === CODEX_STATE_DB || ref.path === `${CODEX_STATE_DB}-wal` || ref.path === `${CODEX_STATE_DB}-shm`);


export interface ThreadRow {
  id: string;
  rolloutPath: string;
}

/** The `threads` rows of a state_5.sqlite read through `files` (a private copy with its side files, never the agent's own). */
export async function readThreads(files: FileReader): Promise<ThreadRow[] | undefined> {
  const refs: FileRef[] = [];
  for (const p of [CODEX_STATE_DB, `${CODEX_STATE_DB}-wal`, `${CODEX_STATE_DB}-shm`]) if (await files.stat({ root: CODEX_ROOT, path: p })) refs.push({ root: CODEX_ROOT, path: p });
  if (!refs.length) return undefined;
  const copy = await files.materialize(refs);
  try {
    const db = new (sqlite())(copy.path(refs[0]), { fileMustExist: true });
    try {
      const rows = db.prepare(`SELECT id, rollout_path FROM threads LIMIT ${MAX_THREAD_ROWS}`).all();
      return rows.map((r) => ({ id: String(r.id), rolloutPath: String(r.rollout_path) }));
    } finally {
      db.close();
    }
  } finally {
    await copy.dispose();
  }
}

/** Rollouts with no row (invisible to Codex's listings), and rows whose rollout is gone. */
export async function compareThreads(files: FileReader, home: string): Promise<{ rows: number; unlisted: string[]; missing: string[] } | undefined> {
  const rows = await readThreads(files);
  if (!rows) return undefined;
  const ids = new Set(rows.map((r) => r.id));
  const rollouts: string[] = [];
  for await (const f of files.list(CODEX_ROOT, "sessions")) if (isRollout(f.path)) rollouts.push(f.path);
  const unlisted = rollouts.filter((p) => !ids.has(rolloutId(p) ?? ""));
  const have = new Set(rollouts.map((p) => path.join(home, p)));
  const missing = rows.filter((r) => r.rolloutPath.includes("/sessions/") && !have.has(r.rolloutPath)).map((r) => r.rolloutPath);
  return { rows: rows.length, unlisted, missing };
}

async function threadsHazard(loc: AgentLocation): Promise<DoctorCheck[]> {
  const name = "codex: threads";
  let cmp;
  try {
    cmp = await compareThreads(liveFiles(loc.roots), loc.dir);
  } catch (err) {
    return [{ name, status: "warn", message: `${path.join(loc.dir, CODEX_STATE_DB)} could not be read: ${(err as Error).message}`, fix: "run codex once to let it repair its state, then pi-guard doctor again" }];
  }
  if (!cmp) return [];
  if (!cmp.unlisted.length && !cmp.missing.length) return [{ name, status: "ok", message: `${CODEX_STATE_DB}: ${cmp.rows} threads, every rollout listed` }];
  const parts = [
    ...(cmp.unlisted.length ? [`${cmp.unlisted.length} rollout(s) have no row in the threads table, so codex resume's list does not show them (resume by id still works)`] : []),
    ...(cmp.missing.length ? [`${cmp.missing.length} thread row(s) point at rollouts that are gone`] : []),
  ];
  return [
    {
      name,
      status: "warn",
      message: `${CODEX_STATE_DB}: ${parts.join("; ")}`,
      fix: `pi-guard restore --agent codex brings rollouts back with ${CODEX_STATE_DB}; or resume a session by id: codex resume <uuid>`,
      paths: [...cmp.unlisted, ...cmp.missing],
    },
  ];
}

/**
 * One Codex thread's rows (checked against Codex 0.169.0): in state_5.sqlite its `threads` row
 * (what `codex resume`'s picker and the app server's thread/list read) and the tables keyed by its
 * id, with the sections and projects a row names (shared by other threads); in
 * thread_history_1.sqlite the paged history projected from its rollout, which records how far
 * into the rollout it has read, so it comes back from the same snapshot as the rollout.
 */
const MIGRATIONS = { table: "_sqlx_migrations", column: "version" };
const THREAD_ROWS: SessionRows[] = [
  {
    root: CODEX_ROOT,
    glob: CODEX_STATE_DB,
    tables: [
      { table: "threads", column: "id" },
      ...["thread_dynamic_tools", "thread_attachments", "guardian_review_feedback", "thread_read_receipts"].map((table) => ({ table, column: "thread_id" })),
      { table: "thread_spawn_edges", column: "child_thread_id" },
    ],
    shared: [
      { table: "thread_sections", column: "id", from: { table: "threads", column: "thread_section_id" } },
      { table: "projects", column: "id", from: { table: "threads", column: "project_id" } },
    ],
    migrations: MIGRATIONS,
  },
  {
    root: CODEX_ROOT,
    glob: "thread_history_1.sqlite",
    tables: ["thread_history_projection_state", "thread_turns", "thread_items", "thread_realtime_items"].map((table) => ({ table, column: "thread_id" })),
    migrations: MIGRATIONS,
  },
];

export const codexAdapter: AgentAdapter = {
  name: "codex",
  title: "Codex CLI",
  locate: locateCodex,
  secretFiles: () => SECRETS,
  // Imported when needed: export/secrets.js reaches config.ts, which loads the registry (an import cycle).
  secretValues: async (files) => (await import("../secrets.js")).secretValuesOf(files, SECRETS),
  copyRules: () => [
    { root: CODEX_ROOT, glob: "sessions/**/*.jsonl", kind: "append-jsonl" },
    { root: CODEX_ROOT, glob: "archived_sessions/**/*.jsonl", kind: "append-jsonl" },
    { root: CODEX_ROOT, glob: "history.jsonl", kind: "append-jsonl" },
    { root: CODEX_ROOT, glob: "session_index.jsonl", kind: "append-jsonl" },
    { root: CODEX_ROOT, glob: "state_*.sqlite", kind: "sqlite-wal", keyTable: "threads" },
    { root: CODEX_ROOT, glob: "*.sqlite", kind: "sqlite-wal" },
    { root: CODEX_ROOT, glob: "*.sqlite-{wal,shm}", kind: "sqlite-wal" },
    { root: CODEX_ROOT, glob: "*.json", kind: "rewrite-json" },
  ],
  sessions: {
    async *list(files) {
      if (!files.roots.includes(CODEX_ROOT)) return;
      for (const dir of ["sessions", "archived_sessions"]) {
        for await (const f of files.list(CODEX_ROOT, dir)) {
          if (!isRollout(f.path)) continue;
          const head = await readHead(files, f, HEAD_BYTES);
          const base: SessionMeta = { agent: "codex", id: rolloutId(f.path) ?? path.posix.basename(f.path, ".jsonl"), updated: new Date(f.mtimeMs).toISOString(), files: [{ root: f.root, path: f.path }], bytes: f.size };
          yield codexMetaFromHead(head.toString("utf8"), f.size > head.length, base);
        }
      }
    },
    async read(files, meta) {
      return readCodexRollout((await files.read(meta.files[0], MAX_ROLLOUT_BYTES)).toString("utf8"), meta);
    },
    isSessionFile: (ref) => ref.root === CODEX_ROOT && isRollout(ref.path),
  },
  sessionRows: THREAD_ROWS,
  hazards: (loc) => threadsHazard(loc),
  // Rollouts come back with state_5.sqlite (and its -wal/-shm), whose threads table lists them;
  // every other database with its side files; the rest one by one.
  restoreUnits(selected, available) {
    const key = (r: FileRef) => `${r.root}\0${r.path}`;
    const stateUnit = selected.filter((r) => (r.root === CODEX_ROOT && isRollout(r.path)) || isStateFile(r));
    const rest = selected.filter((r) => !stateUnit.includes(r));
    const units: RestoreUnit[] = [];
    if (stateUnit.length) {
      const files = [...stateUnit];
      const have = new Set(files.map(key));
      for (const a of available) if (isStateFile(a) && !have.has(key(a))) files.push(a);
      const rollouts = files.filter((f) => isRollout(f.path)).length;
      units.push({ files, why: `${rollouts} rollout(s) with ${CODEX_STATE_DB} and its side files (Codex lists sessions from its threads table)` });
    }
    return [...units, ...sqliteUnits(rest, available, isDb)];
  },
  async checkRestored(files, units) {
    const checks: RestoreCheck[] = [];
    const restored = units.flatMap((u) => u.files);
    if (restored.some(isStateFile)) {
      const refs = restored.filter(isStateFile);
      const copy = await files.materialize(refs);
      try {
        const db = new (sqlite())(copy.path(refs.find((r) => r.path === CODEX_STATE_DB) ?? refs[0]), { fileMustExist: true });
        try {
          const result = db.pragma("integrity_check", { simple: true });
          const ids = new Set(db.prepare(`SELECT id FROM threads LIMIT ${MAX_THREAD_ROWS}`).all().map((r) => String(r.id)));
          checks.push({ name: `codex: ${CODEX_STATE_DB} integrity`, ok: result === "ok", message: result === "ok" ? `PRAGMA integrity_check: ok` : `PRAGMA integrity_check: ${String(result)}` });
          const rollouts = restored.filter((r) => isRollout(r.path));
          const unlisted = rollouts.filter((r) => !ids.has(rolloutId(r.path) ?? ""));
          checks.push({
            name: "codex: threads",
            ok: unlisted.length === 0,
            message: unlisted.length ? `${unlisted.length} restored rollout(s) have no threads row: ${unlisted[0].path}` : `${rollouts.length} restored rollout(s), each listed in the threads table`,
          });
        } finally {
          db.close();
        }
      } catch (err) {
        checks.push({ name: `codex: ${CODEX_STATE_DB} integrity`, ok: false, message: `${CODEX_STATE_DB} does not open: ${(err as Error).message}` });
      } finally {
        await copy.dispose();
      }
    }
    return checks;
  },
};
