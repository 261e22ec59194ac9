// Opening a hermes database without ever writing to it or its -wal/-shm files. A read-only
// connection to a WAL-mode database may still create -shm and -wal, and a live hermes process
// keeps recent rows only in -wal; so such databases are read from a private copy of all three.

import Database from "better-sqlite3";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { RepoError } from "../repo/errors.js";
import { statInput } from "./input.js";

export type HermesSchema = "pi-hermes-memory" | "hermes-agent";

export interface OpenedHermes {
  db: Database;
  schema: HermesSchema;
  /** True when we read a private copy (WAL-mode or live database). */
  copied: boolean;
  close(): Promise<void>;
}

const MAGIC = "SQLite format 3\0";

async function exists(path: string): Promise<boolean> {
  return fs.stat(path).then(
    () => true,
    () => false,
  );
}

async function header(file: string): Promise<Buffer> {
  const handle = await fs.open(file, "r");
  try {
    const buf = Buffer.alloc(100);
    const { bytesRead } = await handle.read(buf, 0, 100, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** sqlite_master names -> which of the two known layouts this is. */
function sniff(db: Database, file: string): HermesSchema {
  const tables = new Map<string, string>();
  for (const row of db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all()) tables.set(String(row.name), String(row.sql ?? ""));
  const cols = (t: string) => new Set((db.prepare(`PRAGMA table_info("${t.replace(/"/g, '""')}")`).all() as { name: string }[]).map((c) => c.name));
  if (tables.has("sessions") && tables.has("messages")) {
    const m = cols("messages");
    const s = cols("sessions");
    if (m.has("tool_call_id") && m.has("tool_name") && s.has("parent_session_id")) return "hermes-agent";
    if (m.has("tool_calls") && s.has("cwd") && m.has("session_id")) return "pi-hermes-memory";
  }
  const names = [...tables.keys()].slice(0, 8).join(", ") || "none";
  throw new RepoError(`${file} is a SQLite database but not a hermes one (tables: ${names})`, "input");
}

export async function openHermes(file: string): Promise<OpenedHermes> {
  const stat = await statInput(file);
  if (stat.size === 0) throw new RepoError(`${file} is empty`, "input");
  const head = await header(file);
  if (head.subarray(0, 16).toString("latin1") !== MAGIC) throw new RepoError(`${file} is not a SQLite database`, "input");
  // Byte 18 is the read format: 2 means WAL mode.
  const wal = head[18] === 2 || (await exists(`${file}-wal`)) || (await exists(`${file}-journal`));

  let path = file;
  let tmp: string | undefined;
  if (wal) {
    tmp = await fs.mkdtemp(join(tmpdir(), "pi-guard-hermes-"));
    path = join(tmp, basename(file));
    // The main file first, then the WAL: frames newer than the copy are checksummed, so a torn
    // last frame is ignored rather than read.
    for (const suffix of ["", "-wal"]) {
      if (suffix && !(await exists(`${file}${suffix}`))) continue;
      await pipeline(createReadStream(`${file}${suffix}`), createWriteStream(`${path}${suffix}`, { flags: "wx", mode: 0o600 }));
    }
  }
  const cleanup = async () => {
    if (tmp) await fs.rm(tmp, { recursive: true, force: true });
  };
  let db: Database;
  try {
    db = new Database(path, { readonly: !wal, fileMustExist: true });
  } catch (err) {
    await cleanup();
    throw new RepoError(`${file}: cannot open as SQLite: ${(err as Error).message}`, "input");
  }
  try {
    const schema = sniff(db, file);
    return {
      db,
      schema,
      copied: wal,
      close: async () => {
        db.close();
        await cleanup();
      },
    };
  } catch (err) {
    db.close();
    await cleanup();
    if (err instanceof RepoError) throw err;
    throw new RepoError(`${file}: ${(err as Error).message}`, "input");
  }
}

/** SQLite errors (a corrupt page, "file is not a database") as one line about the user's file. */
export function sqliteError(file: string, err: unknown): RepoError {
  if (err instanceof RepoError) return err;
  return new RepoError(`${file}: cannot read the database: ${(err as Error).message}`, "input");
}
