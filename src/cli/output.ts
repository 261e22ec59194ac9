import { isRepoError, type RepoErrorKind } from "../repo/errors.js";

export const EXIT = { ok: 0, failure: 1, usage: 2, damaged: 3 } as const;

const KIND_EXIT: Record<RepoErrorKind, number> = {
  "not-found": EXIT.failure,
  exists: EXIT.failure,
  "wrong-password": EXIT.failure,
  "no-password": EXIT.failure,
  corrupt: EXIT.damaged,
  input: EXIT.failure,
  locked: EXIT.failure,
  usage: EXIT.usage,
  io: EXIT.failure,
};

export interface Output {
  json: boolean;
  quiet: boolean;
}

/** What printJson writes. */
export const jsonText = (value: unknown): string => JSON.stringify(value, null, 2) + "\n";

export function printJson(value: unknown): void {
  process.stdout.write(jsonText(value));
}

/**
 * The same bytes as printJson of all the slices' items mapped, written a slice at a time: 100,000
 * snapshots would otherwise be one 65 MB string, with every mapped object alive until it is built.
 */
export async function printJsonArray<T>(slices: AsyncIterable<readonly T[]> | Iterable<readonly T[]>, map: (item: T) => unknown): Promise<void> {
  let first = true;
  const write = async (text: string) => {
    if (!process.stdout.write(text)) await new Promise<void>((resolve) => process.stdout.once("drain", resolve));
  };
  for await (const items of slices) {
    if (!items.length) continue;
    // "[\n  a,\n  b\n]" of a slice is, without its brackets, that slice's lines of the whole array.
    const part = JSON.stringify(items.map(map), null, 2).slice(2, -2);
    await write((first ? "[\n" : ",\n") + part);
    first = false;
  }
  await write(first ? "[]\n" : "\n]\n");
}

export function info(out: Output, line: string): void {
  if (!out.json && !out.quiet) process.stdout.write(line + "\n");
}

export function warn(line: string): void {
  process.stderr.write(`pi-guard: ${line}\n`);
}

/** One line for the user, never a stack trace for their mistakes; exit code by kind. */
export function reportError(err: unknown): number {
  if (isRepoError(err)) {
    warn(err.message);
    return KIND_EXIT[err.kind];
  }
  const e = err as NodeJS.ErrnoException;
  if (e?.code && typeof e.message === "string") {
    warn(e.message);
    return EXIT.failure;
  }
  warn(`internal error: ${(e as Error)?.stack ?? String(err)}`);
  return EXIT.failure;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${UNITS[u]}`;
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** Aligned columns for human output. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ")).join("\n");
}

export function useColor(): boolean {
  return !process.env.NO_COLOR && !!process.stdout.isTTY;
}
