// The part of better-sqlite3's API that salvage and its tests use. The package ships no types and only
// better-sqlite3 itself was added, so this local declaration keeps `strict` happy.
declare module "better-sqlite3" {
  interface Statement {
    all(...params: unknown[]): Record<string, unknown>[];
    get(...params: unknown[]): Record<string, unknown> | undefined;
    iterate(...params: unknown[]): IterableIterator<Record<string, unknown>>;
    /** Tests only: salvage never writes to a database. */
    run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
    /** restore/sqlite-merge.ts: rows as their first column's value (pluck) or as arrays (raw). */
    pluck(toggle?: boolean): this;
    raw(toggle?: boolean): this;
  }
  interface Options {
    readonly?: boolean;
    fileMustExist?: boolean;
    /** Milliseconds to wait for a lock held by another connection (SQLite's busy timeout). */
    timeout?: number;
    /** src/sqlite.ts: the addon's path, so the `bindings` package does not search for it. */
    nativeBinding?: string;
  }
  class Database {
    constructor(filename: string, options?: Options);
    prepare(sql: string): Statement;
    exec(sql: string): this;
    pragma(source: string, options?: { simple?: boolean }): unknown;
    /** bench/ only (generating data): wraps `fn` in BEGIN/COMMIT. */
    transaction<F extends (...args: never[]) => unknown>(fn: F): F;
    /** snapshot/sqlite-copy.ts: SQLite's online backup API, a step of pages at a time; the handler returns the next step's page count. */
    backup(filename: string, options?: { progress?: (p: { totalPages: number; remainingPages: number }) => number | undefined }): Promise<{ totalPages: number; remainingPages: number }>;
    readonly inTransaction: boolean;
    close(): void;
  }
  export default Database;
}
