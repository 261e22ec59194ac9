// The salvage pipeline: read every source (read-only), merge per session id, add provenance,
// write. HTML and logs are read first; hermes databases are then streamed one session at a time,
// each merged with what the other sources hold for that id and staged to a temp file, so memory
// holds one database session, not the database. Files appear only when every source was read
// (SessionWriter.commit), so bad input leaves no partial output.

import { withProvenance } from "./finalize.js";
import type { HermesSelection } from "./hermes.js";
import { mergeSessions, sharedMessages } from "./merge.js";
import { SessionWriter, type WrittenSession } from "./output.js";
import { countRoles, fidelityReport, sessionReport, type FidelityReport, type SessionReport, type SourceSummary } from "./report.js";
import type { SalvagedSession, SalvageSource, SourceResult } from "./types.js";
import { RepoError } from "../repo/errors.js";
import type { SessionHeader } from "../pi/index.js";

export interface SalvageOptions {
  html?: string[];
  logs?: string[];
  /** TUI scrollback captures; "-" is standard input. */
  terminals?: string[];
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
  /** The headers of the sessions written (entries are not kept: they can be gigabytes). */
  sessions: { header: SessionHeader }[];
  written: WrittenSession[];
  report: FidelityReport;
}

/** HTML exports and logs, read whole (a log is streamed, but its sessions are kept). */
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
  for (const file of options.terminals ?? []) {
    const { salvageTerminal } = await import("./terminal.js");
    results.push(await salvageTerminal(file));
  }
  return results;
}

/** Fill in --cwd and note what this source gave, before merging blurs it. */
function prepared(s: SalvagedSession, source: SalvageSource, cwd: string | undefined): SalvagedSession {
  const withCwd = !s.cwdKnown && cwd ? { ...s, header: { ...s.header, cwd }, cwdKnown: true } : s;
  return { ...withCwd, provided: [{ source, messages: countRoles(s.entries) }] };
}

export async function salvage(options: SalvageOptions): Promise<SalvageResult> {
  if (!options.html?.length && !options.logs?.length && !options.terminals?.length && !options.hermes?.length) {
    throw new RepoError("name at least one source (--from-html, --from-log, --from-terminal, --from-hermes)", "usage");
  }
  const results = await readSources(options);
  let pool = results.flatMap((r) => r.sessions.map((s) => prepared(s, r.source, options.cwd)));
  const summaries: SourceSummary[] = results.map((r) => ({ source: r.source, sessions: r.sessions.length, notes: r.notes }));
  const writer = new SessionWriter({ install: options.install, outDir: options.outDir, agentDir: options.agentDir });
  const reports: SessionReport[] = [];
  const headers: { header: SessionHeader }[] = [];
  const emit = async (group: SalvagedSession[]) => {
    for (const merged of mergeSessions(group)) {
      const session = withProvenance(merged, options.now);
      await writer.stage(session);
      reports.push(sessionReport(session, null));
      headers.push({ header: session.header });
    }
  };

  try {
    for (const file of options.hermes ?? []) {
      const { streamHermes } = await import("./hermes.js");
      const stream = await streamHermes(file, { ...options.hermesSelection, cwd: options.cwd });
      let count = 0;
      try {
        for (const s of stream.sessions) {
          count++;
          const known = pool.filter((p) => p.idKnown && p.header.id === s.header.id);
          // Sessions with invented ids (terminal captures, unnamed logs) join by shared messages.
          const same = [...known, ...pool.filter((p) => !p.idKnown && sharedMessages(p, [s, ...known]) > 0)];
          pool = pool.filter((p) => !same.includes(p));
          await emit([prepared(s, stream.source, options.cwd), ...same]);
        }
      } finally {
        await stream.close();
      }
      summaries.push({ source: stream.source, sessions: count, notes: stream.notes });
    }
    if (pool.length > 0) await emit(pool);
    if (reports.length === 0) {
      throw new RepoError(`no pi session could be recovered from ${summaries.map((r) => r.source.path).join(", ")}`, "input");
    }
  } catch (err) {
    await writer.discard(true);
    throw err;
  }
  const written = await writer.commit();
  const files = new Map(written.map((w) => [w.sessionId, w.path]));
  for (const r of reports) r.file = files.get(r.id) ?? null;
  return { sessions: headers, written, report: fidelityReport(summaries, reports) };
}
