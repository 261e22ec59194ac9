/**
 * `pi-guard pi install-extension` / `uninstall-extension`: a one-line loader in pi's global
 * extensions folder (`<agentDir>/extensions/pi-guard.js`, which pi discovers by itself) that
 * re-exports the extension from this pi-guard's package. A new file only: pi's settings.json is
 * never rewritten, and an upgrade of pi-guard takes effect without installing again. The loader
 * carries a marker line; uninstall removes only a file that has it.
 */
import { randomBytes } from "node:crypto";
import { existsSync, promises as fs } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { readSettings } from "../agents/pi/paths.js";
import { makeDirs, writeFully } from "../fs-safe.js";
import { RepoError } from "../repo/errors.js";

export const LOADER_NAME = "pi-guard.js";
const MARKER = "// pi-guard pi extension loader (pi-guard pi install-extension); pi-guard pi uninstall-extension removes it";

export type InstallAction = "installed" | "updated" | "unchanged" | "removed" | "absent";

export interface InstallResult {
  action: InstallAction;
  loader: string;
  extension: string;
  dryRun: boolean;
  /** Other ways this pi already loads pi-guard's extension (settings.json entries). */
  alsoLoadedBy: string[];
}

export const loaderPath = (agentDir: string): string => path.join(agentDir, "extensions", LOADER_NAME);

export function loaderText(extension: string): string {
  return `${MARKER}\nexport { default } from ${JSON.stringify(pathToFileURL(extension).href)};\n`;
}

const isOurs = (text: string): boolean => text.startsWith(MARKER + "\n");

/** settings.json `extensions`/`packages` entries that name pi-guard (loading it twice would double every request). */
function settingsEntries(agentDir: string): string[] {
  const s = readSettings(path.join(agentDir, "settings.json")).settings;
  const out: string[] = [];
  for (const key of ["extensions", "packages"]) {
    const list = s?.[key];
    if (!Array.isArray(list)) continue;
    for (const e of list) {
      const name = typeof e === "string" ? e : typeof (e as { source?: unknown })?.source === "string" ? (e as { source: string }).source : "";
      if (/pi-guard/.test(name)) out.push(`settings.json ${key}: ${name}`);
    }
  }
  return out;
}

async function readLoader(file: string): Promise<string | undefined> {
  try {
    const st = await fs.lstat(file);
    if (!st.isFile()) throw new RepoError(`${file} exists and is not a regular file; it was left alone`, "usage");
    if (st.size > 64 * 1024) return ""; // not ours: ours is one short line
    return await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export async function installExtension(agentDir: string, extension: string, dryRun: boolean): Promise<InstallResult> {
  if (!existsSync(extension)) throw new RepoError(`the extension is missing from this pi-guard (${extension}); rebuild or reinstall pi-guard`, "not-found");
  const loader = loaderPath(agentDir);
  const base = { loader, extension, dryRun, alsoLoadedBy: settingsEntries(agentDir) };
  const want = loaderText(extension);
  const have = await readLoader(loader);
  if (have !== undefined && !isOurs(have)) throw new RepoError(`${loader} exists and is not pi-guard's loader; it was left alone (move it away to install)`, "usage");
  if (have === want) return { ...base, action: "unchanged" };
  const action: InstallAction = have === undefined ? "installed" : "updated";
  if (dryRun) return { ...base, action };
  await makeDirs(path.dirname(loader), 0o755);
  const tmp = path.join(path.dirname(loader), `.${LOADER_NAME}.${randomBytes(4).toString("hex")}.tmp`);
  const handle = await fs.open(tmp, "wx", 0o644);
  try {
    await writeFully(handle, Buffer.from(want), 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    // A new loader never replaces a file that appeared meanwhile; our own old one is replaced.
    if (action === "installed") await fs.link(tmp, loader);
    else await fs.rename(tmp, loader);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new RepoError(`${loader} appeared while installing; it was left alone`, "usage");
    throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
  return { ...base, action };
}

export async function uninstallExtension(agentDir: string, extension: string, dryRun: boolean): Promise<InstallResult> {
  const loader = loaderPath(agentDir);
  const base = { loader, extension, dryRun, alsoLoadedBy: settingsEntries(agentDir) };
  const have = await readLoader(loader);
  if (have === undefined) return { ...base, action: "absent" };
  if (!isOurs(have)) throw new RepoError(`${loader} is not pi-guard's loader; it was left alone`, "usage");
  if (!dryRun) await fs.rm(loader, { force: true });
  return { ...base, action: "removed" };
}
