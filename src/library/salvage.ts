/**
 * Recovery without a backup, as `pi-guard salvage` and `pi-guard repair <file>` run it: which
 * sources a request names (the in-flight journals that need it, the hermes sessions it selects),
 * what is refused (options that do not go together, no source at all), deleted files still held
 * open copied out first, then one salvage over every source; and a damaged session file repaired
 * into a copy. Nothing here prints; the caller hears each step through the hooks.
 */
import type { Config } from "../config/config.js";
import type { RecoveredOpenFile } from "../salvage/open-files.js";
import type { RepairFileOptions, RepairFileResult } from "../salvage/repair-file.js";
import type { SalvageResult } from "../salvage/salvage.js";

export interface SalvageRequest {
  /** Pages written by `pi --export`. */
  html?: string[];
  /** pi --mode json/rpc output or web UI logs. */
  logs?: string[];
  /** Terminal scrollback; "-" is stdin. */
  terminals?: string[];
  /** pi-hermes-memory or hermes-agent databases (read-only). */
  hermes?: string[];
  /** In-flight journals of pi-guard's pi extension. */
  journals?: string[];
  /** Every in-flight journal in the state dir whose pi is gone and did not save the answer. */
  allJournals?: boolean;
  /** With hermes: these sessions, those started since then (a time as typed), or all. */
  sessions?: string[];
  since?: string;
  all?: boolean;
  /** Copy out deleted files running processes still hold open (Linux), and those matching these globs. */
  openFiles?: boolean;
  match?: string[];
  /** Where the results go (default <data dir>/salvage), or into pi's sessions dir with `install`. */
  out?: string;
  install?: boolean;
  cwd?: string;
  sessionId?: string;
}

export interface OpenFilesOutcome {
  platform: string;
  /** On macOS: the steps to take by hand (no /proc to read). */
  steps?: string;
  files: RecoveredOpenFile[];
  unreadable: number;
}

export interface SalvageHooks {
  /** A journal --from-journals found and left out, with why. */
  onSkippedJournal?(file: string, why: string): void;
  /** The held-open files, as soon as they are copied (before the other sources are read). */
  onOpenFiles?(outcome: OpenFilesOutcome): void;
}

export interface SalvageOutcome {
  /** Only --from-journals was asked, and no journal needs salvage: nothing was done. */
  noJournals?: { dir: string };
  openFiles?: OpenFilesOutcome;
  /** The sessions written and the fidelity report; absent when only held-open files were asked for. */
  result?: SalvageResult;
}

export async function salvageSessions(config: Pick<Config, "agentDir" | "dataDir" | "stateDir">, req: SalvageRequest, hooks: SalvageHooks = {}): Promise<SalvageOutcome> {
  const { RepoError } = await import("../repo/errors.js");
  if (req.install && req.out) throw new RepoError("--install and --out exclude each other", "usage");
  const [html, logs, terminals, hermes, match] = [req.html ?? [], req.logs ?? [], req.terminals ?? [], req.hermes ?? [], req.match ?? []];
  const journals = [...(req.journals ?? [])];
  const haveSources = html.length + logs.length + terminals.length + hermes.length > 0;
  const hermesSelection = await hermesChoice(req, hermes.length > 0);
  const found = await journalsToSalvage(config, req, hooks);
  if (found?.length === 0 && journals.length === 0 && !haveSources && !req.openFiles) return { noJournals: { dir: `${config.stateDir}/inflight` } };
  if (found?.length) journals.push(...found);
  const haveAny = haveSources || journals.length > 0;
  if (!haveAny && !req.openFiles) throw new RepoError("name at least one source: --from-html, --from-log, --from-terminal, --from-hermes, --from-journal(s) or --from-open-files", "usage");
  if (match.length > 0 && !req.openFiles) throw new RepoError("--match only applies to --from-open-files", "usage");
  const outDir = req.out ?? `${config.dataDir}/salvage`;
  const openFiles = req.openFiles ? await copyOpenFiles(config, outDir, match) : undefined;
  if (openFiles) hooks.onOpenFiles?.(openFiles);
  if (!haveAny) return { openFiles };
  const { salvage } = await import("../salvage/salvage.js");
  const result = await salvage({
    html,
    logs,
    terminals,
    hermes,
    journals,
    hermesSelection,
    cwd: req.cwd,
    sessionId: req.sessionId,
    install: req.install,
    outDir: req.install ? undefined : outDir,
    agentDir: config.agentDir,
  });
  return { ...(openFiles ? { openFiles } : {}), result };
}

/** --from-journals: the journals that need salvage (undefined without it); the others go to the hook. */
async function journalsToSalvage(config: Pick<Config, "stateDir">, req: SalvageRequest, hooks: SalvageHooks): Promise<string[] | undefined> {
  if (!req.allJournals) return undefined;
  const { findJournals } = await import("../salvage/journal.js");
  const found = await findJournals(config.stateDir);
  for (const j of found) if (j.skip) hooks.onSkippedJournal?.(j.file, j.skip);
  return found.filter((j) => !j.skip).map((j) => j.file);
}

async function hermesChoice(req: SalvageRequest, fromHermes: boolean) {
  const sessions = req.sessions ?? [];
  const selecting = sessions.length > 0 || req.since !== undefined || req.all;
  const { RepoError } = await import("../repo/errors.js");
  if (selecting && !fromHermes) throw new RepoError("--session, --since and --all only apply to --from-hermes", "usage");
  let since: number | undefined;
  if (req.since !== undefined) {
    const { parseTime } = await import("../restore/select.js");
    const t = parseTime(req.since);
    if (!t) throw new RepoError(`--since: cannot read "${req.since}" as a time`, "usage");
    since = t.getTime();
  }
  return { sessions, since, all: req.all };
}

async function copyOpenFiles(config: Pick<Config, "agentDir">, outDir: string, match: string[]): Promise<OpenFilesOutcome> {
  const [{ recoverOpenFiles, macosSteps }, { existsSync }, { join }, { RepoError }] = await Promise.all([import("../salvage/open-files.js"), import("node:fs"), import("node:path"), import("../repo/errors.js")]);
  if (process.platform === "darwin") return { platform: "darwin", steps: macosSteps(config.agentDir, match), files: [], unreadable: 0 };
  if (!existsSync("/proc/self/fd")) throw new RepoError(`--from-open-files needs /proc (Linux); ${process.platform} has none`, "usage");
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const result = await recoverOpenFiles({ agentDir: config.agentDir, match, outDir: join(outDir, `open-files-${stamp}`) });
  return { platform: process.platform, ...result };
}

/** `repair <file>`: a damaged session file (torn or glued lines, lost header) into a copy pi can load, or in place after a backup. */
export async function repairSessionFile(file: string, opts: RepairFileOptions = {}): Promise<RepairFileResult> {
  const { repairFile } = await import("../salvage/repair-file.js");
  return repairFile(file, opts);
}
