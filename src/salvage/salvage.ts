// The salvage pipeline: read every source (read-only), merge per session id, add provenance,
// then write. Nothing is written until every source has been read and every session checked,
// so bad input leaves no partial output.

import { mergeSessions } from "./merge.js";
import { withProvenance } from "./finalize.js";
import { writeSessions, type WrittenSession } from "./output.js";
import { countRoles, fidelityReport, type FidelityReport } from "./report.js";
import type { SalvagedSession, SourceResult } from "./types.js";
import type { HermesSelection } from "./hermes.js";
import { RepoError } from "../repo/errors.js";

export interface SalvageOptions {
  html?: string[];
  logs?: string[];
  hermes?: string[];
  /** Which hermes sessions to take (--session, --cwd, --since, --all). */
  hermesSelection?: HermesSelection;
  /** Project dir for sessions whose source does not name one. */
  cwd?: string;
  outDir?: string;
  install?: boolean;
  agentDir?: string;
  now?: Date;
}

export interface SalvageResult {
  sessions: SalvagedSession[];
  written: WrittenSession[];
  report: FidelityReport;
}

export async function readSources(options: SalvageOptions): Promise<SourceResult[]> {
  const results: SourceResult[] = [];
  for (const file of options.html ?? []) {
    const { salvageHtml } = await import("./html.js");
    results.push(await salvageHtml(file));
  }
  for (const file of options.logs ?? []) {
    const { salvageLog } = await import("./log.js");
    results.push(await salvageLog(file));
  }
  for (const file of options.hermes ?? []) {
    const { salvageHermes } = await import("./hermes.js");
    results.push(await salvageHermes(file, { ...options.hermesSelection, cwd: options.cwd }));
  }
  return results;
}

export async function salvage(options: SalvageOptions): Promise<SalvageResult> {
  const results = await readSources(options);
  if (results.length === 0) throw new RepoError("name at least one source (--from-html, --from-log, --from-hermes)", "usage");
  const all = results.flatMap((r) =>
    r.sessions.map((s) => {
      const withCwd = !s.cwdKnown && options.cwd ? { ...s, header: { ...s.header, cwd: options.cwd }, cwdKnown: true } : s;
      return { ...withCwd, provided: [{ source: r.source, messages: countRoles(s.entries) }] };
    }),
  );
  if (all.length === 0) throw new RepoError(`no pi session could be recovered from ${results.map((r) => r.source.path).join(", ")}`, "corrupt");
  const sessions = mergeSessions(all).map((s) => withProvenance(s, options.now));
  const written = await writeSessions(sessions, {
    install: options.install,
    outDir: options.outDir,
    agentDir: options.agentDir,
  });
  const files = new Map(written.map((w) => [w.sessionId, w.path]));
  return { sessions, written, report: fidelityReport(results, sessions, files) };
}

