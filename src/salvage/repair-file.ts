// `pi-guard repair`: make a damaged session file loadable without ever losing the original.
// By default the repaired text goes to a new file beside it; --in-place first copies the original
// to a backup, then swaps the repaired file in with a rename so readers never see half a file.

import { constants, promises as fs, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { repairSessionText, type RepairReport } from "../agents/pi/repair.js";
import { writeFileAtomic } from "../agents/pi/writer.js";
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

const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/**
 * The folder on this machine that pi's folder name `--a-b-c--` stands for. The name is lossy (a
 * "-" is a "/" or a "-"), so the readings are tried against the disk, longest name first at each
 * level; a bounded number of lookups, since each "-" doubles the readings.
 */
export function folderOnDisk(parts: readonly string[], root = "/"): string | undefined {
  let lookups = 4096;
  const walk = (dir: string, i: number): string | undefined => {
    if (i === parts.length) return dir;
    for (let j = parts.length; j > i; j--) {
      const name = parts.slice(i, j).join("-");
      if (!name || --lookups < 0) continue;
      const next = join(dir, name);
      const found = isDir(next) ? walk(next, j) : undefined;
      if (found) return found;
    }
    return undefined;
  };
  return walk(root, 0);
}

/** pi keeps a session in sessions/--<cwd with / \ : turned into ->--/: the cwd back from that name. */
function cwdFromFolder(file: string): { cwd: string; how: string } | undefined {
  const folder = basename(dirname(file));
  const inner = /^--(.+)--$/.exec(folder)?.[1];
  if (!inner) return undefined;
  const parts = inner.split("-");
  const found = folderOnDisk(parts);
  if (found) return { cwd: found, how: `took the project dir ${found} from the folder name ${folder}; such names are lossy (a "-" may stand for a "/"), and this is the reading that exists here: --cwd sets another` };
  const guess = `/${parts.join("/")}`;
  return { cwd: guess, how: `took the project dir ${guess} from the folder name ${folder}, a guess: it does not exist on this machine and such names are lossy; --cwd sets the right one` };
}

export async function repairFile(file: string, options: RepairFileOptions = {}): Promise<RepairFileResult> {
  if (options.inPlace && options.out) throw new RepoError("--in-place and --out exclude each other", "usage");
  const { bytes, stat } = await readInput(file);
  const { text, report } = repairSessionText(bytes, { fileName: basename(file), fallbackCwd: options.fallbackCwd, guessCwd: () => cwdFromFolder(file) });
  // Nothing pi could use survived: a "repair" would only invent an empty session.
  const noHeader = report.headerSynthesized || report.issues.some((i) => NO_HEADER.has(i.kind));
  if (report.entries === 0 && noHeader) {
    throw new RepoError(`${file} is not a pi session: no session header and no entries could be read`, "input");
  }
  // pi would file the session under no project at all: ask rather than write "cwd": "".
  if (report.cwdUnknown) throw new RepoError(`${file}: the session header is lost and nothing names the project dir; pass --cwd <project dir>`, "usage");
  if (!report.changed) return { file, output: null, backup: null, report };

  if (!options.inPlace) {
    // A new file holding session text: private (0600) whatever the original's mode.
    const output = await writeNew(options.out ? [options.out] : candidateNames(file), text, 0o600);
    return { file, output, backup: null, report };
  }

  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  // Not *.jsonl, so pi does not list the backup as a second copy of the session.
  const backup = join(dirname(file), `${basename(file)}.${stamp}.bak`);
  await fs.copyFile(file, backup, constants.COPYFILE_EXCL);
  await fs.chmod(backup, 0o600);
  // pi may still be appending: if the file moved on since we read it, a swap would drop that append.
  const now = await fs.stat(file);
  if (now.size !== stat.size || now.mtimeMs !== stat.mtimeMs || now.ino !== stat.ino) {
    await fs.rm(backup, { force: true });
    throw new RepoError(`${file} changed while it was being repaired (is pi still writing it?); nothing was changed`, "io");
  }
  // The file itself keeps its mode: the user chose it.
  await writeFileAtomic(file, text, { overwrite: true, mode: stat.mode & 0o777 });
  return { file, output: file, backup, report };
}
