// opencode 1.x behind the AgentAdapter interface (DESIGN.md "Other agents", issue 19 item 5).
// Everything lives in $XDG_DATA_HOME/opencode: opencode.db (SQLite in WAL mode, which opencode
// leaves uncheckpointed at exit) with its -wal and -shm, auth.json, log/, and before 1.2 the JSON
// tree storage/. OPENCODE_DB moves the db: an absolute path as it is, a relative one inside the data
// dir; non-"latest" release channels use opencode-<channel>.db. The sessions are rows: `session`,
// then `message` and `part`, each holding its record as JSON in `data`.
//
// The db is only ever read through a FileReader's materialized copy (db and -wal in a temp
// folder, opened there), never in place: an open would write the -shm and may create side files.

import type Database from "better-sqlite3";
import { sqlite } from "../../sqlite.js";
import { existsSync } from "node:fs";
import path from "node:path";
import type { AgentMessage, SessionEntry, Usage } from "../../model/session.js";
import { num, str } from "../jsonl.js";
import { secretValuesOf } from "../secrets.js";
import type { AgentAdapter, FileReader, FileRef, RestoreCheck, SecretFile, SessionMeta } from "../types.js";
import { sqliteUnits } from "../units.js";
import { ENV_OPENCODE_DB, locateOpencode, OPENCODE_DB_ROOT, OPENCODE_ROOT } from "./locate.js";

export { ENV_OPENCODE_DB, locateOpencode, OPENCODE_DB_ROOT, OPENCODE_ROOT };


/** Sessions listed per db at most: a hostile db cannot make a listing endless. */
const MAX_SESSIONS = 100_000;
/** Rows read for one session at most (messages and parts). */
const MAX_ROWS = 1_000_000;
/** A row's JSON larger than this is kept as a warning, not parsed. */
const MAX_ROW_JSON = 64 << 20;

const isDbName = (p: string) => /^opencode(-[A-Za-z0-9._-]+)?\.db$/.test(path.posix.basename(p));


const SECRETS: SecretFile[] = [{ root: OPENCODE_ROOT, path: "auth.json", kind: "whole", what: "API keys and OAuth tokens of the providers" }];

const isDb = (ref: FileRef) => (ref.root === OPENCODE_ROOT || ref.root === OPENCODE_DB_ROOT) && !ref.path.includes("/") && isDbName(ref.path);

async function* dbFiles(files: FileReader): AsyncGenerator<FileRef> {
  for (const root of [OPENCODE_ROOT, OPENCODE_DB_ROOT]) {
    if (!files.roots.includes(root)) continue;
    for await (const f of files.list(root)) if (isDb(f)) yield { root: f.root, path: f.path };
  }
}

/** Opens a private copy of the db (with its WAL, if the files hold one) and runs `use` on it. */
async function withDb<T>(files: FileReader, db: FileRef, use: (conn: Database, refs: FileRef[]) => T): Promise<T> {
  const refs = [db];
  const wal = { root: db.root, path: `${db.path}-wal` };
  if (await files.stat(wal)) refs.push(wal);
  const copy = await files.materialize(refs);
  let conn: Database | undefined;
  try {
    // Read-write, in the temp folder: SQLite recovers the copied WAL into the copy.
    conn = new (sqlite())(copy.path(db), { fileMustExist: true });
    return use(conn, refs);
  } finally {
    conn?.close();
    await copy.dispose();
  }
}

const iso = (ms: unknown): string => (typeof ms === "number" && Number.isFinite(ms) ? new Date(ms).toISOString() : "");

function parseRow(text: unknown, warnings: string[], what: string): Record<string, unknown> | undefined {
  if (typeof text !== "string" || text.length > MAX_ROW_JSON) {
    warnings.push(`${what}: no readable data`);
    return undefined;
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  warnings.push(`${what}: data is not a JSON object`);
  return undefined;
}

function usageOf(data: Record<string, unknown>): Usage | undefined {
  const t = data.tokens as Record<string, unknown> | undefined;
  if (!t || typeof t !== "object") return undefined;
  const cache = (t.cache ?? {}) as Record<string, unknown>;
  const input = num(t.input);
  const output = num(t.output);
  const cacheRead = num(cache.read);
  const cacheWrite = num(cache.write);
  const cost = num(data.cost);
  return {
    input,
    output,
    cacheRead,
    cacheWrite,
    totalTokens: num(t.total) || input + output + cacheRead + cacheWrite,
    reasoning: num(t.reasoning),
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: cost, totalFromProvider: true },
  };
}

const STOP: Record<string, "stop" | "length" | "toolUse" | "error" | "aborted"> = { stop: "stop", length: "length", "tool-calls": "toolUse", error: "error", aborted: "aborted" };

/** One session's rows into the common model: a chain of entries, tool results after the assistant message that called them. */
function mapSession(conn: Database, meta: SessionMeta): { entries: SessionEntry[]; warnings: string[]; header: Record<string, unknown> } {
  const warnings: string[] = [];
  const entries: SessionEntry[] = [];
  const row = conn.prepare("SELECT * FROM session WHERE id = ?").get(meta.id);
  if (!row) throw new Error(`opencode session ${meta.id} is not in the database`);
  const partsBy = new Map<string, Record<string, unknown>[]>();
  let rows = 0;
  for (const p of conn.prepare("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id").iterate(meta.id)) {
    if (++rows > MAX_ROWS) {
      warnings.push(`more than ${MAX_ROWS} parts: the rest is not shown`);
      break;
    }
    const data = parseRow(p.data, warnings, `part ${String(p.id)}`);
    if (!data) continue;
    const list = partsBy.get(String(p.message_id)) ?? [];
    list.push({ id: p.id, ...data });
    partsBy.set(String(p.message_id), list);
  }
  let prev: string | null = null;
  const push = (e: SessionEntry) => {
    entries.push(e);
    prev = e.id;
  };
  for (const m of conn.prepare("SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id").iterate(meta.id)) {
    const id = String(m.id);
    const data = parseRow(m.data, warnings, `message ${id}`);
    if (!data) continue;
    const parts = partsBy.get(id) ?? [];
    const time = num((data.time as Record<string, unknown> | undefined)?.created) || num(m.time_created);
    const timestamp = iso(time);
    const other = parts.filter((p) => !["text", "reasoning", "tool"].includes(String(p.type)));
    const raw = { message: data, ...(other.length ? { parts: other } : {}) };
    if (data.role === "user") {
      const content = parts.filter((p) => p.type === "text" && typeof p.text === "string").map((p) => ({ type: "text" as const, text: p.text as string }));
      push({ type: "message", id, parentId: prev, timestamp, message: { role: "user", content, timestamp: time } as AgentMessage, raw });
      continue;
    }
    if (data.role !== "assistant") {
      push({ type: "custom", id, parentId: prev, timestamp, customType: `opencode:${String(data.role)}`, data: raw });
      continue;
    }
    const content: Record<string, unknown>[] = [];
    const results: SessionEntry[] = [];
    for (const p of parts) {
      if (p.type === "text" && typeof p.text === "string") content.push({ type: "text", text: p.text });
      else if (p.type === "reasoning" && typeof p.text === "string") content.push({ type: "thinking", thinking: p.text });
      else if (p.type === "tool") {
        const state = (p.state ?? {}) as Record<string, unknown>;
        const callId = str(p.callID) ?? String(p.id);
        const name = str(p.tool) ?? "tool";
        content.push({ type: "toolCall", id: callId, name, arguments: (state.input as Record<string, unknown>) ?? {} });
        if (state.status === "completed" || state.status === "error") {
          const end = num((state.time as Record<string, unknown> | undefined)?.end) || time;
          const text = state.status === "error" ? String(state.error ?? "") : String(state.output ?? "");
          results.push({
            type: "message",
            id: `${String(p.id)}:result`,
            parentId: null,
            timestamp: iso(end),
            message: { role: "toolResult", toolCallId: callId, toolName: name, content: [{ type: "text", text }], isError: state.status === "error", details: state.metadata, timestamp: end } as AgentMessage,
            raw: { part: p },
          });
        }
      }
    }
    const usage = usageOf(data);
    const message = {
      role: "assistant",
      content,
      provider: str(data.providerID),
      model: str(data.modelID),
      ...(usage ? { usage } : {}),
      ...(typeof data.finish === "string" && STOP[data.finish] ? { stopReason: STOP[data.finish] } : {}),
      ...(data.error ? { errorMessage: JSON.stringify(data.error).slice(0, 2000) } : {}),
      timestamp: time,
    } as AgentMessage;
    push({ type: "message", id, parentId: prev, timestamp, message, raw });
    for (const r of results) push({ ...r, parentId: prev });
  }
  const header = { type: "session", version: 3, id: meta.id, timestamp: iso(row.time_created), cwd: str(row.directory) ?? "", raw: row };
  return { entries, warnings, header };
}

/**
 * One opencode session's rows (checked against opencode 1.18.33, whose `session delete` removes
 * all of them): its `session` row, then every table keyed by `session_id` (messages, their parts,
 * todos, shares and the v2 session state), and its event-sourcing rows, keyed by the session id
 * as `aggregate_id`. The `project` a session names is shared by the sessions of that project.
 */
const SESSION_TABLES = [
  { table: "session", column: "id" },
  ...["message", "part", "todo", "session_share", "session_context_epoch", "session_input", "session_message"].map((table) => ({ table, column: "session_id" })),
  { table: "event_sequence", column: "aggregate_id" },
  { table: "event", column: "aggregate_id" },
];
const SESSION_ROWS = { tables: SESSION_TABLES, shared: [{ table: "project", column: "id", from: { table: "session", column: "project_id" } }], migrations: { table: "migration", column: "id" } };

export const opencodeAdapter: AgentAdapter = {
  name: "opencode",
  title: "opencode",
  locate: locateOpencode,
  secretFiles: () => SECRETS,
  secretValues: (files) => secretValuesOf(files, SECRETS),
  copyRules: () => [
    { root: OPENCODE_ROOT, glob: "opencode*.db", kind: "sqlite-wal", keyTable: "session" },
    { root: OPENCODE_DB_ROOT, glob: "*.db", kind: "sqlite-wal", keyTable: "session" },
    { root: OPENCODE_ROOT, glob: "**/*.json", kind: "rewrite-json" },
  ],
  sessionRows: [
    { root: OPENCODE_ROOT, glob: "opencode*.db", ...SESSION_ROWS },
    { root: OPENCODE_DB_ROOT, glob: "*.db", ...SESSION_ROWS },
  ],
  sessions: {
    async *list(files) {
      for await (const db of dbFiles(files)) {
        const metas = await withDb(files, db, (conn, refs) => {
          const hasTable = conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session'").get();
          if (!hasTable) return [];
          return conn
            .prepare(`SELECT id, title, directory, time_created, time_updated FROM session ORDER BY time_created LIMIT ${MAX_SESSIONS}`)
            .all()
            .map((r): SessionMeta => ({
              agent: "opencode",
              id: String(r.id),
              ...(str(r.directory) ? { cwd: str(r.directory) } : {}),
              ...(str(r.title) ? { title: str(r.title) } : {}),
              started: iso(r.time_created),
              updated: iso(r.time_updated),
              files: refs,
              bytes: 0,
            }));
        });
        let bytes = 0;
        for (const r of metas[0]?.files ?? []) bytes += (await files.stat(r))?.size ?? 0;
        for (const m of metas) yield { ...m, bytes };
      }
    },
    async read(files, meta) {
      const db = meta.files[0];
      if (!db) throw new Error(`opencode session ${meta.id}: no database named`);
      const { entries, warnings, header } = await withDb(files, db, (conn) => mapSession(conn, meta));
      return { meta, header: header as never, entries, leafId: entries.at(-1)?.id ?? null, warnings };
    },
    isSessionFile: isDb,
  },
  async hazards(loc) {
    const legacy = path.join(loc.dir, "storage", "session");
    if (existsSync(legacy)) {
      return [
        {
          name: "opencode: migrations",
          status: "warn",
          message: `${legacy} holds sessions from before opencode 1.2; opencode migrates them into opencode.db, and its migrations have lost sessions (anomalyco/opencode #13560, #34445)`,
          fix: "keep storage/ until `opencode session list` shows every session, and take `pi-guard snapshot` before upgrading opencode",
        },
      ];
    }
    return [
      {
        name: "opencode: migrations",
        status: "ok",
        message: "opencode migrates opencode.db on upgrade, and its migrations have lost sessions; every snapshot keeps a consistent copy of the db from before",
      },
    ];
  },
  restoreUnits: (selected, available) => sqliteUnits(selected, available, isDb),
  async checkRestored(files, units) {
    const out: RestoreCheck[] = [];
    for (const db of units.flatMap((u) => u.files).filter(isDb)) {
      const name = `${db.root}:${db.path}`;
      try {
        const [check, sessions] = await withDb(files, db, (conn) => [conn.pragma("integrity_check", { simple: true }), conn.prepare("SELECT count(*) AS n FROM session").get()?.n]);
        out.push({ name, ok: check === "ok", message: check === "ok" ? `integrity_check ok, ${String(sessions)} session(s): opencode lists them` : `integrity_check: ${String(check).split("\n")[0]}` });
      } catch (err) {
        out.push({ name, ok: false, message: `not a database opencode can open: ${(err as Error).message.split("\n")[0]}` });
      }
    }
    return out;
  },
};

