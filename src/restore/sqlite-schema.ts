// The schema checks of a session merge (sqlite-merge.ts): the snapshot's db and the live one must
// hold the session's tables with the same columns and primary keys, and the snapshot's must not be
// of a newer schema than the live one, or copying rows between them is unsafe. Both dbs are open
// on one connection: the live one as `main`, the snapshot's copy attached as `snap`.

import type Database from "better-sqlite3";
import type { SessionRows } from "../agents/types.js";
import { RepoError } from "../repo/errors.js";
import { sqlIdent as q } from "../sqlite.js";

export type Side = "main" | "snap";
const SIDE_NAME: Record<Side, string> = { main: "the live db", snap: "the snapshot's db" };

/** A migrations table is read whole; more rows than this is not an agent's db. */
const MAX_MIGRATIONS = 100_000;

/** A table as both dbs hold it: the live db's column order, and its primary key. */
export interface TableShape {
  table: string;
  columns: string[];
  pk: string[];
}

/** A refusal of the merge, one line: what differs. */
export const schemaRefusal = (why: string): RepoError => new RepoError(`the schemas differ: ${why}; nothing was written`, "input");

function shapeOf(db: Database, side: Side, table: string): { columns: string[]; pk: string[] } | undefined {
  const entry = db.prepare(`SELECT type, sql FROM ${side}.sqlite_master WHERE name = ?`).get(table) as { type: string; sql: string | null } | undefined;
  if (!entry) return undefined;
  // A view, a virtual table or a generated column in a hostile snapshot would run code of its own on every read.
  if (entry.type !== "table" || /^\s*CREATE\s+VIRTUAL/i.test(entry.sql ?? "")) throw schemaRefusal(`${table} in ${SIDE_NAME[side]} is not a plain table`);
  const cols = db.prepare(`PRAGMA ${side}.table_xinfo(${q(table)})`).all() as { name: string; pk: number; hidden: number }[];
  const hidden = cols.find((c) => c.hidden !== 0);
  if (hidden) throw schemaRefusal(`column ${table}.${hidden.name} in ${SIDE_NAME[side]} is generated or hidden`);
  return { columns: cols.map((c) => c.name), pk: cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name) };
}

/** One table's shape, the same on both sides; undefined when neither db has it. */
function sameShape(db: Database, table: string): TableShape | undefined {
  const live = shapeOf(db, "main", table);
  const snap = shapeOf(db, "snap", table);
  if (!live && !snap) return undefined;
  if (!live) throw schemaRefusal(`table ${table} is in the snapshot's db but not in the live one (the snapshot's schema is newer)`);
  if (!snap) throw schemaRefusal(`table ${table} is in the live db but not in the snapshot's (the live schema is newer)`);
  const onlySnap = snap.columns.find((c) => !live.columns.includes(c));
  if (onlySnap) throw schemaRefusal(`column ${table}.${onlySnap} is in the snapshot's db but not in the live one`);
  const onlyLive = live.columns.find((c) => !snap.columns.includes(c));
  if (onlyLive) throw schemaRefusal(`column ${table}.${onlyLive} is in the live db but not in the snapshot's`);
  if (live.pk.join("\0") !== snap.pk.join("\0")) throw schemaRefusal(`table ${table} has primary key (${live.pk.join(", ")}) live and (${snap.pk.join(", ")}) in the snapshot`);
  if (!live.pk.length) throw schemaRefusal(`table ${table} has no primary key, so its rows cannot be matched`);
  return { table, ...live };
}

/** The last of migration names or numbers, as people number them ("9" before "10"). */
const latest = (names: string[]): string | undefined => names.sort((a, b) => a.localeCompare(b, "en", { numeric: true })).at(-1);

function migrationsOf(db: Database, side: Side, m: { table: string; column: string }): Set<string> {
  const rows = db.prepare(`SELECT ${q(m.column)} AS v FROM ${side}.${q(m.table)} LIMIT ${MAX_MIGRATIONS + 1}`).raw().all() as unknown as unknown[][];
  if (rows.length > MAX_MIGRATIONS) throw schemaRefusal(`${m.table} in ${SIDE_NAME[side]} has more than ${MAX_MIGRATIONS} rows`);
  return new Set(rows.map((r) => String(r[0])));
}

/**
 * The shapes of the description's tables (those neither db has are left out, with a note), after
 * checking that the two dbs agree on them and that the snapshot's schema is not newer than the
 * live one. A live schema that is newer is allowed when the session's tables are unchanged (the
 * agent was upgraded since the snapshot, the case a lost session usually is), and noted.
 */
export function checkSchemas(db: Database, spec: SessionRows, notes: string[]): Map<string, TableShape> {
  const shapes = new Map<string, TableShape>();
  const names = [...spec.tables.map((t) => t.table), ...(spec.shared ?? []).map((s) => s.table)];
  for (const table of names) {
    if (shapes.has(table)) continue;
    const shape = sameShape(db, table);
    if (shape) shapes.set(table, shape);
    else if (table === spec.tables[0]?.table) throw schemaRefusal(`neither db has table ${table}`);
    else notes.push(`table ${table} is in neither db`);
  }
  for (const t of spec.tables) {
    if (shapes.has(t.table) && !shapes.get(t.table)!.columns.includes(t.column)) throw schemaRefusal(`table ${t.table} has no column ${t.column}`);
  }
  for (const s of spec.shared ?? []) {
    if (!shapes.get(s.table)?.columns.includes(s.column) || !shapes.get(s.from.table)?.columns.includes(s.from.column)) {
      throw schemaRefusal(`the shared rows ${s.table}.${s.column} (named by ${s.from.table}.${s.from.column}) are not in both dbs`);
    }
  }

  const version = (side: Side) => Number((db.prepare(`PRAGMA ${side}.user_version`).get() as { user_version: number }).user_version);
  if (version("snap") > version("main")) throw schemaRefusal(`the snapshot's db has user_version ${version("snap")}, newer than the live db's ${version("main")}`);
  const m = spec.migrations;
  const has = (side: Side) => !!m && !!db.prepare(`SELECT 1 FROM ${side}.sqlite_master WHERE type = 'table' AND name = ?`).get(m.table);
  if (m && (has("main") || has("snap"))) {
    if (!has("main") || !has("snap")) throw schemaRefusal(`table ${m.table} (the schema's migrations) is in only one of the dbs`);
    const live = migrationsOf(db, "main", m);
    const snap = migrationsOf(db, "snap", m);
    const newer = [...snap].filter((v) => !live.has(v));
    if (newer.length) throw schemaRefusal(`the snapshot's db has ${newer.length} migration(s) the live db lacks (${latest(newer)}): its schema is newer than the live one`);
    const older = [...live].filter((v) => !snap.has(v));
    if (older.length) notes.push(`the live db has ${older.length} migration(s) the snapshot's lacks (latest ${latest(older)}); the session's tables have the same columns in both`);
  }
  return shapes;
}
