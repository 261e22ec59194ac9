// `pi-guard repair`: make a damaged session file loadable without ever losing the original.
// By default the repaired text goes to a new file beside it; --in-place first copies the original
// to a backup, then swaps the repaired file in with a rename so readers never see half a file.

import { constants, promises as fs } from "node:fs";
import { basename, dirname, join } from "node:path";
import { repairSessionText, writeFileAtomic, type RepairReport } from "../pi/index.js";
import { RepoError } from "../repo/errors.js";
import { readInput } from "./input.js";

export interface RepairFileOptions {
  /** Replace the file itself (after saving a backup). */
  inPlace?: boolean;
  /** Write the repaired copy here instead of beside the input; never overwritten. */
  out?: string;
  /** cwd for a synthesised header when the original one is lost. */
  fallbackCwd?: string;
}

export interface RepairFileResult {
  file: string;
  /** Where the repaired session was written; null when the file was already sound. */
  output: string | null;
  /** The copy of the original taken before an in-place repair. */
  backup: string | null;
  report: RepairReport;
}

/** FILE.jsonl -> FILE.repaired.jsonl, then FILE.repaired-2.jsonl ... : the first free name. */
function candidateNames(file: string): string[] {
  const stem = file.endsWith(".jsonl") ? file.slice(0, -".jsonl".length) : file;
  return [`${stem}.repaired.jsonl`, ...Array.from({ length: 98 }, (_, i) => `${stem}.repaired-${i + 2}.jsonl`)];
}

async function writeNew(names: string[], text: string, mode: number): Promise<string> {
  for (const name of names) {
    try {
      await writeFileAtomic(name, text, { mode });
      return name;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  if (names.length === 1) throw new RepoError(`${names[0]} already exists; pick another --out`, "exists");
  throw new RepoError(`${names[0]} and ${names.length - 1} numbered variants already exist; pass --out`, "exists");
}

const NO_HEADER = new Set(["empty-file", "missing-header", "invalid-header"]);

export async function repairFile(file: string, options: RepairFileOptions = {}): Promise<RepairFileResult> {
  if (options.inPlace && options.out) throw new RepoError("--in-place and --out exclude each other", "usage");
  const { bytes, stat } = await readInput(file);
  const { text, report } = repairSessionText(bytes, { fileName: basename(file), fallbackCwd: options.fallbackCwd });
  // Nothing pi could use survived: a "repair" would only invent an empty session.
  const noHeader = report.headerSynthesized || report.issues.some((i) => NO_HEADER.has(i.kind));
  if (report.entries === 0 && noHeader) {
    throw new RepoError(`${file} is not a pi session: no session header and no entries could be read`, "input");
  }
  if (!report.changed) return { file, output: null, backup: null, report };
  const mode = stat.mode & 0o777;

  if (!options.inPlace) {
    const output = await writeNew(options.out ? [options.out] : candidateNames(file), text, mode);
    return { file, output, backup: null, report };
  }

  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  // Not *.jsonl, so pi does not list the backup as a second copy of the session.
  const backup = join(dirname(file), `${basename(file)}.${stamp}.bak`);
  await fs.copyFile(file, backup, constants.COPYFILE_EXCL);
  // pi may still be appending: if the file moved on since we read it, a swap would drop that append.
  const now = await fs.stat(file);
  if (now.size !== stat.size || now.mtimeMs !== stat.mtimeMs || now.ino !== stat.ino) {
    await fs.rm(backup, { force: true });
    throw new RepoError(`${file} changed while it was being repaired (is pi still writing it?); nothing was changed`, "io");
  }
  await writeFileAtomic(file, text, { overwrite: true, mode });
  return { file, output: file, backup, report };
}
