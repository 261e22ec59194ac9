// Restore units every adapter can build on: a SQLite database comes back with its side files, or
// not at all (a db without its -wal is an older db, or a corrupt one).

import type { FileRef, RestoreUnit } from "./types.js";

const SIDE_FILES = ["-wal", "-shm", "-journal"] as const;
const key = (r: FileRef) => `${r.root}\0${r.path}`;

/** The database a file belongs to: itself, or the db a `-wal`/`-shm`/`-journal` sits beside. */
function dbOf(ref: FileRef, isDb: (ref: FileRef) => boolean): FileRef | undefined {
  if (isDb(ref)) return ref;
  for (const side of SIDE_FILES) {
    if (ref.path.endsWith(side)) {
      const db = { root: ref.root, path: ref.path.slice(0, -side.length) };
      if (isDb(db)) return db;
    }
  }
  return undefined;
}

/**
 * `selected` grouped into units: each SQLite database (as `isDb` tells) with whichever of its side
 * files `available` holds, every other file alone. Each selected file is in exactly one unit.
 */
export function sqliteUnits(selected: readonly FileRef[], available: readonly FileRef[], isDb: (ref: FileRef) => boolean): RestoreUnit[] {
  const have = new Set(available.map(key));
  const units = new Map<string, RestoreUnit>();
  for (const ref of selected) {
    const db = dbOf(ref, isDb);
    if (!db) {
      units.set(key(ref), { files: [ref], why: ref.path });
      continue;
    }
    if (units.has(key(db))) continue;
    const files = [db, ...SIDE_FILES.map((s) => ({ root: db.root, path: db.path + s }))].filter((f) => have.has(key(f)) || selected.some((s) => key(s) === key(f)));
    units.set(key(db), { files, why: `${db.path} with its ${files.length > 1 ? files.slice(1).map((f) => f.path.slice(db.path.length)).join(" and ") : "side files (none in the snapshot)"}` });
  }
  return [...units.values()];
}
